#!/usr/bin/env bash
# Instructions a request costs Quire's process, counted by callgrind: unlike requests per
# second on a shared machine, the count does not move with the machine's load, so a change
# of a few percent shows. What callgrind cannot see (cache misses, contention between cores,
# the kernel) needs bench/read_path.py.
# Usage: bench/instructions.sh [NAME,...] [REQUESTS]   (names as in bench/read_path.py;
# default: space,page_markdown,cr,cr_list,comment_list and 10000 requests each)
# Needs: valgrind, ab (apache2-utils), curl and a release build of quire.
set -euo pipefail
for tool in valgrind callgrind_control ab curl; do
  command -v "$tool" > /dev/null || {
    echo "bench/instructions.sh needs $tool (Debian: apt-get install valgrind apache2-utils curl)" >&2
    exit 2
  }
done
root=$(cd "$(dirname "$0")/.." && pwd)
quire=${QUIRE_BIN:-$root/target/release/quire}
names=${1:-space,page_markdown,cr,cr_list,comment_list}
n=${2:-10000}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# Seed the corpus of bench/read_path.py once, then stop its server.
mkdir "$work/seed"
python3 "$root/bench/read_path.py" --hold --data-dir "$work/seed" > "$work/hold.json" 2> "$work/seed.log" &
holder=$!
until [ -s "$work/hold.json" ]; do
  kill -0 $holder 2>/dev/null || { cat "$work/seed.log"; exit 1; }
  sleep 1
done
kill "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" "$work/hold.json")"
wait $holder || true
token=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['token'])" "$work/hold.json")
for name in ${names//,/ }; do
  path=$(python3 -c "import json,sys,urllib.parse as u; x=u.urlsplit(json.load(open(sys.argv[1]))['urls'][sys.argv[2]]); print(x.path + ('?' + x.query if x.query else ''))" "$work/hold.json" "$name")
  data="$work/data-$name"
  cp -r "$work/seed" "$data"
  port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  out="$work/callgrind-$name"
  QUIRE_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$quire" serve --bind "127.0.0.1:$port" --data-dir "$data" 2> "$work/valgrind.log" &
  server=$!
  until curl -sf "http://127.0.0.1:$port/healthz" > /dev/null; do sleep 0.5; done
  url="http://127.0.0.1:$port$path"
  # Warm the caches, then count only the measured requests.
  ab -q -k -n 2000 -c 8 -H "Authorization: Bearer $token" "$url" > /dev/null
  callgrind_control -z $server > /dev/null 2>&1
  ab -q -k -n "$n" -c 8 -H "Authorization: Bearer $token" "$url" > "$work/ab.log"
  if ! grep -q "^Failed requests: *0" "$work/ab.log" || grep -q "Non-2xx" "$work/ab.log"; then
    echo "$name: requests failed"; cat "$work/ab.log"; exit 1
  fi
  callgrind_control -d $server > /dev/null 2>&1
  kill $server; wait $server 2>/dev/null || true
  total=$(callgrind_annotate "$out.1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
  printf '%-16s %8d instructions a request\n' "$name" $((total / n))
done
