#!/usr/bin/env python3
"""Fair rendering (issue 66): another organization's first renders while anonymous visitors
flood one organization's adaptive site with new values of a claim its page reads, so that
every flood request is a render of its own.

The corpus: organization `Flooded` publishes the page `Reference` of claims_flood.py (about
1 MB of HTML, a block behind the unsigned claim `lang`); organization `Neighbour` publishes a
small page with a block behind the unsigned claim `v`. The probe asks the neighbour's page
one request at a time, each with a new `v` (so each is a first render, never a cached
page), every `--gap` ms for `--duration` s: alone, then while wrk floods the reference with
a new `lang` per request on 8 and on 32 connections. It prints p50, p99 and the maximum of
the probe, and the flood's throughput and failures.

Usage: python3 bench/fair_renders.py [--duration 10] [--gap 20] [--database-url URL]
(QUIRE_BIN=<binary> to measure another build.)
Needs: a release build (cargo build --release -p quire) and wrk; loopback only.
"""
import argparse, http.client, json, os, random, shutil, signal, subprocess, sys, tempfile
import threading, time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready  # noqa: E402
from claims_flood import FLOOD_LUA, call, reference_markdown, wrk  # noqa: E402

NEIGHBOUR_PAGE = (
    "Welcome to the neighbour's guide.\n\n"
    "{% if visitor.claims.unsigned.v == \"x\" %}\nShown to one visitor.\n{% endif %}\n\n"
    "## Overview\n\nWhat this page covers, in a paragraph with **bold** and `code`.\n\n"
    "{% hint style=\"info\" %}\nA hint.\n{% endhint %}\n\n"
    "```rust\nfn main() {\n    println!(\"page\");\n}\n```\n\n"
    "| Name | Value |\n| --- | --- |\n| a | 1 |\n| b | 2 |\n"
)


def site(base, token, org_title, pages):
    """A public site of one space holding `pages` ([(title, markdown)]); its URL path."""
    org = call("POST", f"{base}/v1/orgs", token, {"title": org_title})["id"]
    space = call("POST", f"{base}/v1/orgs/{org}/spaces", token, {"title": "Guide"})["id"]
    cr = call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "Pages"})["id"]
    call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr}/content?compat=false", token,
         {"changes": [{"operation": "insert_page", "title": t, "document": {"markdown": m}}
                      for t, m in pages]})
    call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr}/merge", token)
    s = call("POST", f"{base}/v1/orgs/{org}/sites", token,
             {"title": org_title, "spaces": [space], "visibility": "public"})["id"]
    root = call("POST", f"{base}/v1/orgs/{org}/sites/{s}/publish", token)["urls"]["published"]
    return root[len(base):]


def probe(port, path, seconds, gap_ms):
    """First renders of `path`, one at a time, each with a new value of `v`: latencies in ms."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    out, tags = [], set()
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        value = f"{random.getrandbits(40):x}n{n}"
        t0 = time.perf_counter()
        conn.request("GET", f"{path}?visitor.v={value}")
        res = conn.getresponse()
        res.read()
        out.append((time.perf_counter() - t0) * 1000)
        if res.status != 200:
            raise RuntimeError(f"probe answered {res.status}")
        tags.add(res.getheader("ETag"))
        time.sleep(gap_ms / 1000)
    conn.close()
    if len(tags) != len(out):
        raise RuntimeError("a probe was answered from the cache")
    return out


def summary(ms):
    s = sorted(ms)
    at = lambda q: s[min(len(s) - 1, int(q * len(s)))]  # noqa: E731
    return {"n": len(s), "p50_ms": round(at(0.50), 2), "p99_ms": round(at(0.99), 2),
            "max_ms": round(s[-1], 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--gap", type=int, default=20, help="ms between two probes")
    ap.add_argument("--sections", type=int, default=700)
    ap.add_argument("--clients", default="8,32")
    ap.add_argument("--database-url")
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="quire-fair-")
    storage = ["--data-dir", data] + (["--database-url", args.database_url] if args.database_url else [])
    env = dict(os.environ, QUIRE_LOG="warn")
    lua = os.path.join(data, "flood.lua")
    with open(lua, "w") as f:
        f.write(FLOOD_LUA)
    server = None
    try:
        port = free_port()
        server = subprocess.Popen([QUIRE, "serve", "--bind", f"127.0.0.1:{port}"] + storage, env=env,
                                  stderr=subprocess.DEVNULL)
        wait_ready(f"http://127.0.0.1:{port}/healthz")
        token = subprocess.run([QUIRE, "admin", "create-token", "--email", "bench@example.com"] + storage,
                               capture_output=True, text=True, check=True, env=env).stdout.strip()
        base = f"http://127.0.0.1:{port}"
        flooded = site(base, token, "Flooded", [
            ("Reference", reference_markdown(args.sections))]) + "reference"
        neighbour = site(base, token, "Neighbour", [("Start", NEIGHBOUR_PAGE)]) + "start"
        with urllib.request.urlopen(base + flooded, timeout=120) as r:
            size = len(r.read())
        started = time.perf_counter()
        with urllib.request.urlopen(base + flooded + "?visitor.lang=warm", timeout=120) as r:
            r.read()
        render_ms = (time.perf_counter() - started) * 1000
        probe(port, neighbour, 1, args.gap)  # warm-up
        rows = [{"name": "alone", **summary(probe(port, neighbour, args.duration, args.gap))}]
        for clients in (int(c) for c in args.clients.split(",")):
            flood = {}
            runner = threading.Thread(target=lambda: flood.update(
                wrk(base + flooded, args.duration + 2, clients, 1, script=lua, args=("lang",))))
            runner.start()
            time.sleep(1)
            probed = summary(probe(port, neighbour, args.duration, args.gap))
            runner.join()
            rows.append({"name": f"flood_{clients}", **probed, "flood_rps": flood["rps"],
                         "flood_p50_ms": flood["p50_ms"], "flood_non2xx": flood["non2xx"]})
        for r in rows:
            line = f"{r['name']:<9} probe n={r['n']:<4} p50 {r['p50_ms']:8.2f} ms  p99 {r['p99_ms']:8.2f} ms  max {r['max_ms']:8.2f} ms"
            if "flood_rps" in r:
                line += f"  | flood {r['flood_rps']:.1f} req/s, p50 {r['flood_p50_ms']:.0f} ms, non-2xx {r['flood_non2xx']}"
            print(line, flush=True)
        print(json.dumps({"database": "postgres" if args.database_url else "sqlite",
                          "flood_page_bytes": size, "flood_render_ms": round(render_ms, 1),
                          "rows": rows}, indent=1))
    finally:
        if server:
            server.send_signal(signal.SIGTERM)
            server.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
