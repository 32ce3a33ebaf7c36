#!/usr/bin/env bash
# Runs every test of Quire: lints, unit and HTTP integration tests on SQLite, the same
# integration tests on PostgreSQL, and the conformance suite (official client + official
# schemas) on both databases, with published sites tested in a headless Chromium.
#
# PostgreSQL: QUIRE_TEST_DATABASE_URL if set; otherwise a throwaway cluster started from the
# initdb/pg_ctl on PATH; the PostgreSQL pass is skipped, with a notice, only when neither exists.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# One build from a clean clone: incremental caches and debug info would only fill the disk.
# With them a full build, lints and tests took 9.5 GB and once filled a CI machine's disk
# mid-link; without them, about 4.5 GB. Set either variable to keep them.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-false}

echo "== build"
cargo build --workspace --all-targets --locked

echo "== format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The app's editor script is committed as built: it must be what its source builds to.
if command -v npm >/dev/null; then
  bash scripts/editor-bundle.sh --check
else
  echo "NOTICE: no npm: the editor bundle is not checked against its source"
fi

# The PDF tests read the PDFs back with poppler's pdftotext and pdftoppm; on a fresh machine
# poppler-utils is installed here, and once present those checks must run
# (QUIRE_REQUIRE_POPPLER=1).
if ! command -v pdftotext >/dev/null && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "== installing poppler-utils (Debian package)"
  (apt-get install -y -q poppler-utils >/dev/null 2>&1 \
    || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q poppler-utils >/dev/null 2>&1)) \
    || true
fi
if command -v pdftotext >/dev/null && command -v pdftoppm >/dev/null; then
  export QUIRE_REQUIRE_POPPLER=1
else
  echo "NOTICE: no pdftotext/pdftoppm (install Debian's poppler-utils): the PDF text and image checks are skipped"
fi
# The SAML round trip runs against a real identity provider: pysaml2 (PyPI, in a venv under
# target/) signing with Debian's xmlsec1.
saml_venv="$PWD/target/saml-venv"
if ! command -v xmlsec1 >/dev/null && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "== installing xmlsec1 and python3-venv for the SAML identity provider"
  (apt-get install -y -q xmlsec1 python3-venv >/dev/null 2>&1 \
    || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q xmlsec1 python3-venv >/dev/null 2>&1)) \
    || echo "NOTICE: could not install xmlsec1"
fi
if command -v xmlsec1 >/dev/null && ! "$saml_venv/bin/python" -c 'import saml2' >/dev/null 2>&1; then
  (python3 -m venv "$saml_venv" \
    && "$saml_venv/bin/pip" install -q -r crates/quire-server/tests/saml_idp/requirements.txt) >/dev/null 2>&1 \
    || echo "NOTICE: could not install pysaml2 into $saml_venv"
fi
if command -v xmlsec1 >/dev/null && "$saml_venv/bin/python" -c 'import saml2' >/dev/null 2>&1; then
  export QUIRE_SAML_PYTHON="$saml_venv/bin/python" QUIRE_REQUIRE_SAML_IDP=1
else
  echo "NOTICE: no xmlsec1 or pysaml2: the SAML round trip against a real identity provider is skipped"
fi
# The wiki import test serves a real git repository with `git upload-pack`.
if ! command -v git >/dev/null && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  (apt-get install -y -q git >/dev/null 2>&1 \
    || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q git >/dev/null 2>&1)) \
    || echo "NOTICE: could not install git: the wiki import test is skipped"
fi

echo "== tests on SQLite"
cargo test --workspace --locked

pg_url=${QUIRE_TEST_DATABASE_URL:-}
pg_dir=""
cleanup() {
  if [ -n "$pg_dir" ]; then scripts/pg-cluster.sh stop "$pg_dir"; fi
}
trap cleanup EXIT
if [ -z "$pg_url" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
  && ! command -v initdb >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  # A fresh machine: install the PostgreSQL server from Debian's packages for this pass.
  echo "== installing PostgreSQL (Debian package)"
  (apt-get install -y -q postgresql >/dev/null 2>&1 \
    || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q postgresql >/dev/null 2>&1)) \
    || echo "NOTICE: could not install PostgreSQL"
fi
if [ -z "$pg_url" ]; then
  pg_dir=$(mktemp -d /tmp/quire-pg.XXXXXX)
  if pg_url=$(scripts/pg-cluster.sh start "$pg_dir"); then
    echo "== throwaway PostgreSQL cluster at $pg_url"
  else
    echo "NOTICE: no PostgreSQL (set QUIRE_TEST_DATABASE_URL, or put initdb/pg_ctl on PATH): skipping the PostgreSQL pass"
    rm -rf "$pg_dir"
    pg_dir=""
    pg_url=""
  fi
fi

if [ -n "$pg_url" ]; then
  echo "== integration tests on PostgreSQL"
  QUIRE_TEST_DATABASE_URL="$pg_url" cargo test -p quire-server --locked --test api
  QUIRE_TEST_DATABASE_URL="$pg_url" cargo test -p quire --locked --test durability

  echo "== scale-out: two nodes on PostgreSQL and an S3 server (s3s-fs), behind nginx"
  if ! command -v nginx >/dev/null && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    (apt-get install -y -q nginx-light >/dev/null 2>&1 \
      || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q nginx-light >/dev/null 2>&1)) \
      || echo "NOTICE: could not install nginx"
  fi
  s3_server=${QUIRE_S3_SERVER:-$(command -v s3s-fs || echo "${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs")}
  if [ ! -x "$s3_server" ]; then
    # A real S3 server from crates.io, built once per machine (several minutes).
    cargo install s3s-fs --version 0.14.1 --features binary --locked --quiet \
      || echo "NOTICE: could not install s3s-fs"
  fi
  if command -v nginx >/dev/null && [ -x "$s3_server" ]; then
    QUIRE_TEST_DATABASE_URL="$pg_url" QUIRE_S3_SERVER="$s3_server" \
      cargo test -p quire --locked --test scale_out -- --ignored
  else
    echo "NOTICE: nginx or s3s-fs is missing: skipping the scale-out test"
  fi
fi

# The browser tests of published sites drive Debian's Chromium; on a fresh machine it is
# installed here, and once present the tests must run (QUIRE_REQUIRE_BROWSER=1).
chromium_bin=${QUIRE_CHROMIUM:-$(command -v chromium || true)}
if [ -z "$chromium_bin" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
  echo "== installing Chromium (Debian package)"
  (apt-get install -y -q chromium >/dev/null 2>&1 \
    || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) \
    || true
  chromium_bin=$(command -v chromium || true)
fi
# The screenshots of the app (conformance/artifacts/app-*.png) show emoji with this font.
if [ -n "$chromium_bin" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null \
  && ! ls /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf >/dev/null 2>&1; then
  apt-get install -y -q fonts-noto-color-emoji >/dev/null 2>&1 \
    || echo "NOTICE: could not install fonts-noto-color-emoji: emoji show as boxes in screenshots"
fi
if [ -n "$chromium_bin" ]; then
  export QUIRE_CHROMIUM="$chromium_bin" QUIRE_REQUIRE_BROWSER=1
else
  echo "NOTICE: no Chromium (install Debian's chromium, or set QUIRE_CHROMIUM): the browser tests are skipped"
fi

echo "== conformance suite (official client and schemas)"
(
  cd conformance
  npm ci --no-audit --no-fund --loglevel=error
  # The binary the build above made (a CARGO_TARGET_DIR set in the environment moves it).
  export QUIRE_BIN="${CARGO_TARGET_DIR:-$PWD/../target}/debug/quire"
  echo "-- on SQLite"
  npm test
  if [ -n "$pg_url" ]; then
    echo "-- on PostgreSQL"
    QUIRE_CONFORMANCE_DATABASE_URL="$pg_url" npm test
  fi
)
echo "== all tests passed"
