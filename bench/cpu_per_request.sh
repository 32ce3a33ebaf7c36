#!/usr/bin/env bash
# CPU time a server process spends per request (user and system, in microseconds) and its
# context switches per request, over one `wrk -t2 -c64` run of 5 s.
# Usage: bench/cpu_per_request.sh PID URL [wrk options, e.g. -H "Authorization: Bearer ..."]
# (the PID and URLs of a seeded server come from `python3 bench/read_path.py --hold`).
set -euo pipefail
pid=$1 url=$2
shift 2
ticks() { awk '{print $14, $15}' "/proc/$pid/stat"; }
switches() { cat /proc/"$pid"/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'; }
read -r u0 s0 < <(ticks)
c0=$(switches)
out=$(wrk -t2 -c64 -d5s "$@" "$url")
read -r u1 s1 < <(ticks)
c1=$(switches)
rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
total=$(awk '/requests in/ {print $1}' <<<"$out")
hz=$(getconf CLK_TCK)
python3 -c "
u, s, c, n, hz = $u1 - $u0, $s1 - $s0, $c1 - $c0, $total, $hz
print(f'req/s $rps  user {u * 1e6 / hz / n:.2f} us  system {s * 1e6 / hz / n:.2f} us  switches {c / n:.3f} per request')
"
