#!/usr/bin/env bash
# End to end: GitBook's open-source renderer (GitbookIO/gitbook, the `packages/gitbook`
# Next.js app) built against a running Quire and asked for a Quire site's pages, in its
# `X-GitBook-URL` header mode and its `/url/<host>/...` mode. Heavy (about 3 GB under
# target/renderer-e2e and several minutes): not part of scripts/test.sh.
#
#   bash scripts/renderer-e2e.sh
#
# Environment:
#   QUIRE_RENDERER_SRC       where to clone the renderer from: a URL or a local git directory
#                            (default: https://github.com/GitbookIO/gitbook.git)
#   QUIRE_RENDERER_COMMIT    the renderer's commit (default: the pinned one below)
#   QUIRE_RENDERER_WORK      work folder (default: target/renderer-e2e)
#   QUIRE_RENDERER_DATA_DIR  keep Quire's data (and its token and ports) there instead of a
#                            temporary folder, so that a second run reuses the renderer's build
#   QUIRE_BIN                a Quire binary to use (default: target/debug/quire, built here)
#   QUIRE_RENDERER_FIXTURES  Git Sync fixtures to check too, space-separated names of
#                            crates/quire-server/tests/fixtures/gitsync/<name>.tar.gz (e.g.
#                            "gitbook-docs beefree axon"): each is pushed with git to a space of
#                            its own, published as a site, and every document page of it is
#                            requested in both modes; any page not answering 200 fails the run
#                            (the renderer's log lines and the body of each are reported)
#
# The renderer's code is not changed. Its checkout gets the `@gitbook/api` catalog pin moved
# to a version the npm registry has (0.195.0 is not published) and build-time settings: no
# type check in `next build` (see below), the API's URL and token, the renderer's own URL. Of
# its build steps, the font download (from Google Fonts) is left out: fonts are files the
# browser loads, not part of the HTML checked here, and the machine may not reach Google.
# Its icons step copies every icon style of the installed Font Awesome kit, not only its
# custom icons: GitBook serves the others from its icon CDN (GITBOOK_ICONS_URL), and without
# them the renderer retries each icon of a page four times with back-off (seconds a page).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SRC=${QUIRE_RENDERER_SRC:-https://github.com/GitbookIO/gitbook.git}
COMMIT=${QUIRE_RENDERER_COMMIT:-49c993f18150af40dca13a9209bbb031e79fee8f}
WORK=${QUIRE_RENDERER_WORK:-$ROOT/target/renderer-e2e}
API_PIN=0.201.0
BUN_VERSION=1.3.7
# The site's public host. The renderer refuses site URLs with a port, and its `/url/` mode
# always asks for https, so Quire's public URL is this (never resolved: the renderer talks
# to Quire at GITBOOK_API_URL).
SITE_HOST=docs.quire.test

FIXTURE_DIR=$ROOT/crates/quire-server/tests/fixtures/gitsync
for name in ${QUIRE_RENDERER_FIXTURES:-}; do
  [ -f "$FIXTURE_DIR/$name.tar.gz" ] || { echo "no Git Sync fixture $FIXTURE_DIR/$name.tar.gz" >&2; exit 2; }
done

export TURBO_TELEMETRY_DISABLED=1 NEXT_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1
mkdir -p "$WORK"
log() { echo "== $*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

pids=()
tmp_data=""
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$tmp_data" ]; then rm -rf "$tmp_data"; fi
}
trap cleanup EXIT

# --- Quire
QUIRE=${QUIRE_BIN:-$ROOT/target/debug/quire}
if [ -z "${QUIRE_BIN:-}" ]; then
  log "building Quire"
  cargo build -q -p quire --locked
fi

# --- bun, from the npm registry, in the work folder
BUN_DIR=$WORK/tools
if [ "$("$BUN_DIR/node_modules/.bin/bun" --version 2>/dev/null)" != "$BUN_VERSION" ]; then
  log "installing bun $BUN_VERSION"
  npm install --silent --prefix "$BUN_DIR" --no-save "bun@$BUN_VERSION"
fi
export PATH=$BUN_DIR/node_modules/.bin:$PATH

# --- the renderer's source at the pinned commit
R=$WORK/gitbook
if [ ! -d "$R/.git" ]; then
  log "cloning the renderer from $SRC"
  git clone -q --no-checkout "$SRC" "$R"
fi
if ! git -C "$R" cat-file -e "$COMMIT^{commit}" 2>/dev/null; then
  git -C "$R" fetch -q "$SRC" "$COMMIT" || git -C "$R" fetch -q "$SRC"
fi
# (A clone of a local directory whose HEAD is the commit has HEAD right but nothing checked
# out.)
if [ "$(git -C "$R" rev-parse HEAD 2>/dev/null)" != "$COMMIT" ] || [ ! -f "$R/package.json" ]; then
  git -C "$R" checkout -q -f "$COMMIT"
fi
# The pin (bun.lock follows it) and one build setting: Next's type check is skipped, as the
# renderer's types were written against @gitbook/api 0.195.0, and in 0.201.0 a section group's
# children may also be external links (SiteExternalLink), which fails that check in a few
# places; nothing changes at run time (Quire's sites hold no external links).
git -C "$R" checkout -q -f -- package.json bun.lock packages/gitbook/next.config.mjs
sed -i "s|\"@gitbook/api\": \"[0-9.]*\"|\"@gitbook/api\": \"$API_PIN\"|" "$R/package.json"
grep -q "\"@gitbook/api\": \"$API_PIN\"" "$R/package.json"
sed -i 's|^    poweredByHeader: false,$|&\n    typescript: { ignoreBuildErrors: true },|' "$R/packages/gitbook/next.config.mjs"
grep -q "ignoreBuildErrors: true" "$R/packages/gitbook/next.config.mjs"

log "installing the renderer's dependencies"
(cd "$R" && bun install --silent)
log "building the renderer's workspace packages"
(cd "$R" && bunx turbo run build --filter='gitbook^...' --output-logs=errors-only >/dev/null)
log "generating the renderer's assets and types (all but the font download)"
(cd "$R/packages/gitbook" \
  && bun ./scripts/generate-mermaid-runtime.ts >/dev/null \
  && bun ./scripts/generate-scalar-runtime.ts >/dev/null \
  && bunx gitbook-icons ./public/~gitbook/static/icons >/dev/null \
  && bunx gitbook-math ./public/~gitbook/static/math >/dev/null \
  && rm -rf ./public/~gitbook/static/embed \
  && cp -r ../embed/standalone/ ./public/~gitbook/static/embed \
  && WRANGLER_SEND_METRICS=false bunx wrangler types >/dev/null)

# --- Quire on a data folder, with a token and ports that the build bakes in
if [ -n "${QUIRE_RENDERER_DATA_DIR:-}" ]; then
  DATA=$QUIRE_RENDERER_DATA_DIR
  mkdir -p "$DATA"
else
  tmp_data=$(mktemp -d)
  DATA=$tmp_data
fi
if [ -s "$DATA/e2e-ports" ]; then
  read -r QPORT RPORT <"$DATA/e2e-ports"
else
  QPORT=$(free_port)
  RPORT=$(free_port)
  echo "$QPORT $RPORT" >"$DATA/e2e-ports"
fi
API=http://127.0.0.1:$QPORT
RENDERER=http://localhost:$RPORT
log "starting Quire at $API (public URL https://$SITE_HOST)"
"$QUIRE" serve --data-dir "$DATA" --bind "127.0.0.1:$QPORT" --public-url "https://$SITE_HOST" \
  >"$WORK/quire.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  if curl -s -o /dev/null "$API/v1/"; then break; fi
  sleep 0.2
done
if [ ! -s "$DATA/e2e-token" ]; then
  "$QUIRE" admin create-token --data-dir "$DATA" --email renderer@quire.test --name Renderer \
    >"$DATA/e2e-token"
fi
TOKEN=$(cat "$DATA/e2e-token")
node scripts/renderer-e2e.mjs seed "$API" "$TOKEN" "$WORK/state.json"

# --- build (only when a build-time setting changed) and start the renderer, with Node as
# the renderer's own scripts run it
NEXT_BIN=$(cd "$R/packages/gitbook" && node -p "require.resolve('next/dist/bin/next')")
stamp="$COMMIT $API_PIN $API $RENDERER $(printf %s "$TOKEN" | sha256sum | cut -c1-16)"
if [ "$(cat "$WORK/build-stamp" 2>/dev/null)" != "$stamp" ] || [ ! -f "$R/packages/gitbook/.next/BUILD_ID" ]; then
  log "building the renderer against $API (several minutes)"
  rm -f "$WORK/build-stamp"
  (cd "$R/packages/gitbook" \
    && GITBOOK_API_URL=$API GITBOOK_URL=$RENDERER GITBOOK_API_TOKEN=$TOKEN \
       node "$NEXT_BIN" build --webpack >"$WORK/build.log" 2>&1) \
    || { tail -40 "$WORK/build.log"; exit 1; }
  echo "$stamp" >"$WORK/build-stamp"
fi
log "starting the renderer at $RENDERER"
(cd "$R/packages/gitbook" && GITBOOK_DISABLE_TRACKING=1 exec node "$NEXT_BIN" start -p "$RPORT") \
  >"$WORK/renderer.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 150); do
  if curl -s -o /dev/null "$RENDERER/"; then break; fi
  sleep 0.2
done

# --- the pages, in both modes
log "requesting the site's pages from the renderer"
mkdir -p "$WORK/failed-pages"
RENDERER_E2E_DUMP=$WORK/failed-pages RENDERER_E2E_LOG=$WORK/renderer.log \
  node scripts/renderer-e2e.mjs check "$RENDERER" "$WORK/state.json"
