#!/usr/bin/env bash
# Rebuilds the app editor's script, crates/quire-server/src/app/editor.js (committed, and
# embedded in the binary: building or running Quire needs no Node.js), from editor/src with
# the CodeMirror, esbuild and terser versions pinned in editor/package-lock.json; and the
# icons the app offers, crates/quire-server/src/app/icons.svg, from editor/icons.txt and the
# pinned Font Awesome Free package.
# With --check, rebuilds into a temporary file and fails when it differs from the
# committed one (the test command runs this).
set -euo pipefail
cd "$(dirname "$0")/../editor"
npm ci --no-audit --no-fund --loglevel=error
committed=../crates/quire-server/src/app/editor.js
bundle=$(mktemp --suffix=.js)
trap 'rm -f "$bundle"' EXIT
out=$committed
if [ "${1:-}" = "--check" ]; then
  out=$(mktemp --suffix=.js)
  trap 'rm -f "$bundle" "$out"' EXIT
fi
./node_modules/.bin/esbuild src/main.js --bundle --minify --format=iife --target=es2020 \
  --legal-comments=eof --charset=utf8 --log-level=warning --outfile="$bundle"
# terser compresses esbuild's output once more, 3 KB less gzipped (BENCHMARKS.md, "App
# assets").
{
  echo "// Quire's editor: built from editor/src by scripts/editor-bundle.sh; CodeMirror 6 (MIT)."
  ./node_modules/.bin/terser "$bundle" --ecma 2020 --compress passes=2 --mangle --comments some
} >"$out"
# The icons the app offers, as one SVG of symbols (icons.txt names them).
icons=../crates/quire-server/src/app/icons.svg
icons_out=$icons
if [ "$out" != "$committed" ]; then
  icons_out=$(mktemp --suffix=.svg)
  trap 'rm -f "$bundle" "$out" "$icons_out"' EXIT
fi
node icons.mjs "$icons_out"
if [ "$out" != "$committed" ]; then
  if ! cmp -s "$out" "$committed"; then
    echo "crates/quire-server/src/app/editor.js differs from a build of editor/src: run scripts/editor-bundle.sh and commit the result" >&2
    exit 1
  fi
  if ! cmp -s "$icons_out" "$icons"; then
    echo "crates/quire-server/src/app/icons.svg differs from editor/icons.txt: run scripts/editor-bundle.sh and commit the result" >&2
    exit 1
  fi
  echo "editor.js and icons.svg match their sources"
fi
