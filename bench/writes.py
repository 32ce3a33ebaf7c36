#!/usr/bin/env python3
"""Write-path benchmark: what reads cost while others write, and how writes that race are
served. One server on the 200-page corpus of bench/read_path.py, 64 connections, each row
measured with wrk between two runs of the floor (a minimal axum JSON handler) and printed
as a share of the floor:

- get_space:      GET SPACE only (the read-only reference);
- comments:       70% reads, 20% searches, 10% comment posts;
- edits:          90% reads, 10% page edits in 8 open change requests (each edit a
                  different page);
- editors:        32 writers at once, each editing its own page of ONE change request
                  (Python threads, 20 edits each): statuses, p50/p99, edits/s.

After each row, what was acknowledged is checked against what is stored: every comment
answered 2xx exists, and every editor's last acknowledged text is its page's text.

Four more rows run only when named with --only: comments_reads (the comments row's reads and
searches, 78/22, without its posts), posts (comment posts only), edits_reads (the edits
row's reads without its edits) and page_edits (its page edits only).

Usage: python3 bench/writes.py [--duration 8] [--database-url URL] [--only NAME,...]
Needs: release builds (cargo build --release -p quire -p quire-server --example floor) and wrk.
"""
import argparse, http.client, json, os, random, shutil, signal, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
FLOOR = os.environ.get("FLOOR_BIN") or os.path.join(ROOT, "target/release/examples/floor")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready, rss_mb  # noqa: E402
from read_path import call, seed, FREQUENT, RARE  # noqa: E402

# Shared by the wrk scripts: request mix, and per-thread counts of what was answered, summed
# in `done` (each wrk thread has its own Lua state).
LUA = r"""
local reads = %(reads)s
local searches = %(searches)s
local writes = %(writes)s
local get = { ["Authorization"] = "Bearer %(token)s" }
local post = { ["Authorization"] = "Bearer %(token)s", ["Content-Type"] = "application/json" }
local threads = {}
function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end
function init(args)
  sent = 0
  acked = 0
  refused = 0
  n = 0
end
request = function()
  n = n + 1
  local r = math.random(100)
  if r <= %(read_pct)d then
    return wrk.format("GET", reads[math.random(#reads)], get)
  elseif r <= %(search_pct)d then
    return wrk.format("GET", searches[math.random(#searches)], get)
  end
  sent = sent + 1
  local w = writes[math.random(#writes)]
  local body = string.format(w[2], "t" .. id .. "-" .. n)
  return wrk.format("POST", w[1], post, body)
end
response = function(status, headers, body)
  if body and string.find(body, '%(marker)s', 1, true) == 1 then
    if status < 300 then acked = acked + 1 end
  end
  if status >= 300 then refused = refused + 1 end
end
function done(summary, latency, requests)
  local s, a, r = 0, 0, 0
  for _, t in ipairs(threads) do
    s = s + t:get("sent"); a = a + t:get("acked"); r = r + t:get("refused")
  end
  io.write(string.format("WRITES %%d %%d %%d\n", s, a, r))
end
"""


def lua_list(items):
    return "{" + ", ".join(json.dumps(i) for i in items) + "}"


def lua_writes(writes):
    return "{" + ", ".join("{" + json.dumps(p) + ", " + json.dumps(b) + "}" for p, b in writes) + "}"


def run_wrk(url, duration, script=None, headers=(), connections=64):
    import re
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency"]
    for h in headers:
        cmd += ["-H", h]
    if script:
        cmd += ["-s", script]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def pct(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out)
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else (v * 1000 if unit == "s" else v)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    res = {"rps": rps, "p50_ms": pct(50), "p99_ms": pct(99),
           "non2xx": int(non2xx.group(1)) if non2xx else 0, "socket_errors": errors.group(1) if errors else ""}
    w = re.search(r"WRITES (\d+) (\d+) (\d+)", out)
    if w:
        res.update(writes_sent=int(w.group(1)), writes_acked=int(w.group(2)), refused=int(w.group(3)))
    return res


# Rows that break a mixed row into its parts, run only when named with --only.
ONLY_WHEN_NAMED = ("comments_reads", "posts", "edits_reads", "page_edits")


def editors(base, token, space, pages, writers=32, rounds=20):
    """32 threads, each editing its own page of one change request `rounds` times."""
    cr = call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "Editors"})["id"]
    host, port = base.removeprefix("http://").split(":")
    statuses, latencies, last = {}, [], {}
    lock = threading.Lock()

    def writer(i):
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        page = pages[i]
        for n in range(rounds):
            text = f"Editor {i} wrote edit {n}."
            body = json.dumps({"changes": [{"operation": "update_page", "page": page,
                                            "document": {"markdown": text}}]})
            t0 = time.perf_counter()
            conn.request("POST", f"/v1/spaces/{space}/change-requests/{cr}/content", body=body,
                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            res = conn.getresponse()
            res.read()
            dt = (time.perf_counter() - t0) * 1000
            with lock:
                statuses[res.status] = statuses.get(res.status, 0) + 1
                latencies.append(dt)
                if res.status < 300:
                    last[page] = text
        conn.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    latencies.sort()
    lost = 0
    for page, text in last.items():
        url = f"{base}/v1/spaces/{space}/change-requests/{cr}/content/page/{page}?format=markdown"
        try:
            md = call("GET", url, token)["markdown"]
        except urllib.error.HTTPError as e:
            print(f"reading back {url}: {e.code} {e.read()[:300]!r}", file=sys.stderr)
            md = ""
        if text not in md:
            lost += 1
    return {"edits_per_s": round(len(latencies) / elapsed, 1), "statuses": statuses,
            "p50_ms": round(latencies[len(latencies) // 2], 1),
            "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 1), "lost": lost}


def comment_count(base, token, space):
    total, cursor = 0, None
    while True:
        url = f"{base}/v1/spaces/{space}/comments?limit=1000" + (f"&page={cursor}" if cursor else "")
        res = call("GET", url, token)
        total += len(res["items"])
        cursor = res.get("next", {}).get("page")
        if not cursor:
            return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--database-url")
    ap.add_argument("--only", help="comma-separated rows: get_space,comments,edits,editors,"
                    "comments_reads,posts,edits_reads,page_edits")
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="quire-writes-")
    storage = ["--data-dir", data] + (["--database-url", args.database_url] if args.database_url else [])
    env = dict(os.environ, QUIRE_LOG="warn")
    procs = []
    wanted = set(args.only.split(",")) if args.only else None
    try:
        port = free_port()
        server = subprocess.Popen([QUIRE, "serve", "--bind", f"127.0.0.1:{port}"] + storage, env=env,
                                  stderr=subprocess.DEVNULL)
        procs.append(server)
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/healthz")
        token = subprocess.run([QUIRE, "admin", "create-token", "--email", "bench@example.com"] + storage,
                               capture_output=True, text=True, check=True, env=env).stdout.strip()
        ids = seed(base, token)
        s, o = ids["space"], ids["org"]
        pages = [p["id"] for p in call("GET", f"{base}/v1/spaces/{s}/content/pages", token)["pages"]]
        crs = [call("POST", f"{base}/v1/spaces/{s}/change-requests", token, {"subject": f"Edits {i}"})["id"]
               for i in range(8)]
        reads = [f"/v1/spaces/{s}", f"/v1/orgs/{o}/spaces",
                 f"/v1/spaces/{s}/content/page/{ids['page']}?format=markdown",
                 f"/v1/spaces/{s}/change-requests/{ids['cr']}", f"/v1/spaces/{s}/change-requests",
                 f"/v1/spaces/{s}/comments"]
        searches = [f"/v1/spaces/{s}/search?query={RARE}", f"/v1/spaces/{s}/search?query={FREQUENT}"]
        comment_writes = [(f"/v1/spaces/{s}/comments", '{"body":{"markdown":"Load comment %s."}}')]
        rng = random.Random(3)
        edit_writes = []
        for cr in crs:
            for page in rng.sample(pages, 16):
                edit_writes.append((f"/v1/spaces/{s}/change-requests/{cr}/content?compat=false",
                                    '{"changes":[{"operation":"update_page","page":"' + page
                                    + '","document":{"markdown":"Edit %s of this page."}}]}'))
        auth = [f"Authorization: Bearer {token}"]
        fport = free_port()
        floor = subprocess.Popen([FLOOR, f"127.0.0.1:{fport}"], stderr=subprocess.DEVNULL)
        procs.append(floor)
        floor_url = f"http://127.0.0.1:{fport}/"
        wait_ready(floor_url)
        run_wrk(floor_url, 2)
        rows = []

        def script(name, read_pct, search_pct, writes, marker):
            path = os.path.join(data, f"{name}.lua")
            with open(path, "w") as f:
                f.write(LUA % {"reads": lua_list(reads), "searches": lua_list(searches),
                               "writes": lua_writes(writes), "token": token, "read_pct": read_pct,
                               "search_pct": search_pct, "marker": marker})
            return path

        plans = [
            ("get_space", None, f"/v1/spaces/{s}"),
            ("comments", script("comments", 70, 90, comment_writes, '{"object":"comment"'), base + "/"),
            ("edits", script("edits", 90, 90, edit_writes, '{"changeRequest"'), base + "/"),
            # What the comments row is made of (run only when named with --only): its reads
            # and searches without the posts, and the posts alone.
            ("comments_reads", script("comments_reads", 78, 100, comment_writes, '-'), base + "/"),
            ("posts", script("posts", 0, 0, comment_writes, '{"object":"comment"'), base + "/"),
            # The same for the edits row: its reads alone, and its page edits alone.
            ("edits_reads", script("edits_reads", 100, 100, edit_writes, '-'), base + "/"),
            ("page_edits", script("page_edits", 0, 0, edit_writes, '{"changeRequest"'), base + "/"),
        ]
        for name, lua, path in plans:
            if (wanted and name not in wanted) or (not wanted and name in ONLY_WHEN_NAMED):
                continue
            url = path if path.startswith("http") else base + path
            counted = name in ("comments", "posts")
            before_comments = comment_count(base, token, s) if counted else 0
            before = run_wrk(floor_url, args.duration)
            got = run_wrk(url, args.duration, lua, auth)
            after = run_wrk(floor_url, args.duration)
            floor_rps = (before["rps"] + after["rps"]) / 2
            row = {"name": name, "rps": round(got["rps"]), "p50_ms": got["p50_ms"], "p99_ms": got["p99_ms"],
                   "non2xx": got["non2xx"], "floor_rps": round(floor_rps), "ratio": round(got["rps"] / floor_rps, 3)}
            if "writes_sent" in got:
                row.update(writes_sent=got["writes_sent"], writes_acked=got["writes_acked"])
            if counted:
                # Let requests still in flight when wrk stopped land, then count.
                time.sleep(1)
                stored = comment_count(base, token, s) - before_comments
                row["comments_stored"] = stored
                row["lost"] = max(0, got["writes_acked"] - stored)
            rows.append(row)
            print(f"{name:10} {row['rps']:>7} req/s  p50 {row['p50_ms']:7.2f} ms  p99 {row['p99_ms']:8.2f} ms  "
                  f"floor {row['floor_rps']:>7}  ratio {row['ratio']:.3f}  non-2xx {row['non2xx']}"
                  + (f"  writes {row['writes_acked']}/{row['writes_sent']} acked" if "writes_sent" in row else "")
                  + (f"  LOST {row['lost']}" if row.get("lost") else ""), flush=True)
        if not wanted or "editors" in wanted:
            e = editors(base, token, s, pages)
            e["name"] = "editors"
            rows.append(e)
            print(f"editors    {e['edits_per_s']} edits/s  p50 {e['p50_ms']} ms  p99 {e['p99_ms']} ms  "
                  f"statuses {e['statuses']}" + (f"  LOST {e['lost']}" if e["lost"] else ""), flush=True)
        idle = rss_mb(server.pid)
        print(json.dumps({"database": "postgres" if args.database_url else "sqlite", "rss_mb_after": round(idle, 1),
                          "rows": rows}, indent=1))
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
