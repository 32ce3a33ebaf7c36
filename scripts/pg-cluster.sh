#!/usr/bin/env bash
# Starts or stops a throwaway PostgreSQL cluster for the test suite, from the initdb/pg_ctl
# found on PATH (or in /usr/lib/postgresql/*/bin).
#   scripts/pg-cluster.sh start DIR   -> prints the database URL on stdout
#   scripts/pg-cluster.sh stop DIR
# initdb refuses to run as root, so as root the cluster runs as the `postgres` user.
set -euo pipefail

cmd=${1:?start|stop}
dir=${2:?cluster directory}

find_bin() {
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$found" ] && echo "$found"
}

INITDB=$(find_bin initdb || true)
PG_CTL=$(find_bin pg_ctl || true)
if [ -z "$INITDB" ] || [ -z "$PG_CTL" ]; then
  echo "initdb/pg_ctl not found" >&2
  exit 3
fi

as_owner() {
  if [ "$(id -u)" = "0" ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = "0" ]; then chown postgres "$dir"; fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$INITDB" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1
    as_owner "$PG_CTL" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
      start >/dev/null
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    if [ -d "$dir/data" ]; then
      as_owner "$PG_CTL" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
