#!/usr/bin/env bash
# Runs every test of Quire: lints, unit and HTTP integration tests on SQLite, the same
# integration tests on PostgreSQL, and the conformance suite (official client + official
# schemas) on both databases, with published sites tested in a headless Chromium, and last
# the release artefacts and deploy examples (scripts/test-package.sh).
#
# PostgreSQL: QUIRE_TEST_DATABASE_URL if set; otherwise a throwaway cluster started from the
# initdb/pg_ctl on PATH.
#
# Run as root on Debian, it first installs what the tests need (Debian packages, and programs
# from crates.io, PyPI and npm), printing each with the reason. `--no-install` installs nothing
# and names what is missing; the tests of a missing component are then skipped, except with
# CI=true, where anything missing fails the run before the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
  case $arg in
    --no-install) export QUIRE_NO_INSTALL=1 ;;
    *)
      echo "usage: $0 [--no-install]" >&2
      exit 2
      ;;
  esac
done
# shellcheck source=scripts/tools.sh
source scripts/tools.sh

export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# One build from a clean clone: incremental caches and debug info would only fill the disk.
# With them a full build, lints and tests took 9.5 GB and once filled a CI machine's disk
# mid-link; without them, about 4.5 GB. Set either variable to keep them.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-false}

echo "== tools"
present npm || note_missing "npm (Node.js 20+): the editor bundle check and the conformance suite"
# The PDF tests read the PDFs back with poppler's pdftotext and pdftoppm.
if need_deb poppler-utils pdftotext "the PDF tests read their PDFs back with pdftotext and pdftoppm"; then
  export QUIRE_REQUIRE_POPPLER=1
fi
# The SAML round trip runs against a real identity provider: pysaml2 (PyPI, in a venv under
# target/) signing with Debian's xmlsec1.
saml_venv="$PWD/target/saml-venv"
if need_deb xmlsec1 xmlsec1 "the SAML identity provider of the round-trip test signs with it" \
  && need_deb python3-venv "/usr/lib/python3*/ensurepip/__init__.py" "a venv for that identity provider (pysaml2)"; then
  if ! "$saml_venv/bin/python" -c 'import saml2' >/dev/null 2>&1 && [ "$QUIRE_NO_INSTALL" != 1 ]; then
    echo "== installing pysaml2 (PyPI) into $saml_venv: the SAML round trip's identity provider"
    (python3 -m venv "$saml_venv" \
      && "$saml_venv/bin/pip" install -q -r crates/quire-server/tests/saml_idp/requirements.txt) >/dev/null 2>&1 \
      || echo "could not install pysaml2"
  fi
  if "$saml_venv/bin/python" -c 'import saml2' >/dev/null 2>&1; then
    export QUIRE_SAML_PYTHON="$saml_venv/bin/python" QUIRE_REQUIRE_SAML_IDP=1
  else
    note_missing "pysaml2 (PyPI, in $saml_venv): the SAML round trip against a real identity provider"
  fi
fi
# The wiki import test serves a real git repository with `git upload-pack`.
need_deb git git "the wiki import test serves a repository with git upload-pack" || true
if [ -z "${QUIRE_TEST_DATABASE_URL:-}" ] && ! present initdb; then
  need_deb postgresql "/usr/lib/postgresql/*/bin/initdb" "the PostgreSQL pass runs a throwaway cluster" || true
fi
need_deb nginx-light nginx "the scale-out test's load balancer" || true
s3_server=${QUIRE_S3_SERVER:-$(command -v s3s-fs || echo "${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs")}
need_crate s3s-fs 0.14.1 "$s3_server" "the scale-out test's S3 server" --features binary || true
# The browser tests of published sites and of the app drive Debian's Chromium.
chromium_bin=${QUIRE_CHROMIUM:-}
if [ -n "$chromium_bin" ] || need_deb chromium chromium "the browser tests of published sites and the app"; then
  export QUIRE_CHROMIUM="${chromium_bin:-$(command -v chromium)}" QUIRE_REQUIRE_BROWSER=1
  # The screenshots of the app (conformance/artifacts/app-*.png) show emoji with this font.
  need_deb fonts-noto-color-emoji /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf \
    "emoji in the app's screenshots" || true
fi
fail_if_missing

echo "== build"
cargo build --workspace --all-targets --locked

echo "== format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The app's editor script is committed as built: it must be what its source builds to.
if present npm; then
  bash scripts/editor-bundle.sh --check
fi

echo "== tests on SQLite"
cargo test --workspace --locked

pg_url=${QUIRE_TEST_DATABASE_URL:-}
pg_dir=""
cleanup() {
  if [ -n "$pg_dir" ]; then scripts/pg-cluster.sh stop "$pg_dir"; fi
}
trap cleanup EXIT
if [ -z "$pg_url" ]; then
  pg_dir=$(mktemp -d /tmp/quire-pg.XXXXXX)
  if pg_url=$(scripts/pg-cluster.sh start "$pg_dir"); then
    echo "== throwaway PostgreSQL cluster at $pg_url"
  else
    echo "NOTICE: no PostgreSQL (set QUIRE_TEST_DATABASE_URL, or put initdb/pg_ctl on PATH): skipping the PostgreSQL pass"
    if [ "${CI:-}" = true ]; then
      echo "error: in CI (CI=true) the PostgreSQL pass must run" >&2
      exit 1
    fi
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
  if command -v nginx >/dev/null && [ -x "$s3_server" ]; then
    QUIRE_TEST_DATABASE_URL="$pg_url" QUIRE_S3_SERVER="$s3_server" \
      cargo test -p quire --locked --test scale_out -- --ignored
  else
    echo "NOTICE: nginx or s3s-fs is missing: skipping the scale-out test"
  fi
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
echo "== packaging: static binary, container image, Debian package, deploy examples"
bash scripts/test-package.sh
echo "== all tests passed"
