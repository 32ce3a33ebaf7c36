#!/usr/bin/env python3
"""Read-path benchmark: the requests people make most (spaces, content, change requests,
comments, search), each measured with wrk beside the floor (a minimal axum JSON handler) in
the same run, and printed as a share of the floor.

The corpus: one space of 200 pages, five sections each, written through the API (one change
request, merged). Every section holds the frequent word `common`; the rare word `zephyrine`
is in one section of one page; the other words come from a generated vocabulary.

Usage: python3 bench/read_path.py [--duration 8] [--database-url URL] [--only NAME,...] [--sized]
       [--gzip] [--hold] [--data-dir DIR]
With --sized, each row is also measured against the floor answering a body of the same size
(`size floor`): the most any server on this runtime reaches for an answer that large here.
With --gzip, Quire's requests say `Accept-Encoding: gzip, deflate`, as the official client's
(Node's fetch) do, and --sized measures the floor at the size of the compressed answer.
Needs: release builds (cargo build --release -p quire, and
cargo build --release -p quire-server --example floor) and wrk.
"""
import argparse, json, os, random, re, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
FLOOR = os.environ.get("FLOOR_BIN") or os.path.join(ROOT, "target/release/examples/floor")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready, wrk  # noqa: E402

PAGES = 200
FREQUENT = "common"
RARE = "zephyrine"


def call(method, url, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, method=method, data=data, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read() or b"null")


def vocabulary(rng, n=3000):
    syll = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(syll) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def page_markdown(rng, words, index):
    parts = []
    for s in range(5):
        parts.append(f"## Section {s + 1} of page {index}\n")
        text = [rng.choice(words) for _ in range(80)]
        text.insert(rng.randrange(len(text)), FREQUENT)
        if index == 137 and s == 2:
            text.insert(rng.randrange(len(text)), RARE)
        parts.append(" ".join(text) + ".\n")
    return "\n".join(parts)


def seed(base, token):
    rng = random.Random(7)
    words = vocabulary(rng)
    org = call("POST", f"{base}/v1/orgs", token, {"title": "Bench"})["id"]
    space = call("POST", f"{base}/v1/orgs/{org}/spaces", token, {"title": "Read path"})["id"]
    cr = call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "Pages"})["id"]
    for start in range(0, PAGES, 50):
        changes = [{"operation": "insert_page", "title": f"Page {i}",
                    "document": {"markdown": page_markdown(rng, words, i)}}
                   for i in range(start, min(PAGES, start + 50))]
        call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr}/content", token, {"changes": changes})
    call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr}/merge", token)
    # Change requests and comments to list.
    crs = [call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": f"Draft {i}"})["id"]
           for i in range(20)]
    for i in range(20):
        call("POST", f"{base}/v1/spaces/{space}/comments", token, {"body": {"markdown": f"Comment {i}."}})
    pages = call("GET", f"{base}/v1/spaces/{space}/content/pages", token)["pages"]
    page = pages[len(pages) // 2]["id"]
    # The search index is built by a background job: wait until the rare word is found.
    deadline = time.time() + 120
    while time.time() < deadline:
        found = call("GET", f"{base}/v1/spaces/{space}/search?query={RARE}", token)["items"]
        if found:
            break
        time.sleep(0.2)
    else:
        raise RuntimeError("the search index was not built within 120 s")
    return {"org": org, "space": space, "cr": crs[0], "page": page}


def targets(ids):
    o, s, c, p = ids["org"], ids["space"], ids["cr"], ids["page"]
    return [
        ("user", "/v1/user"),
        ("org", f"/v1/orgs/{o}"),
        ("space", f"/v1/spaces/{s}"),
        ("org_spaces", f"/v1/orgs/{o}/spaces"),
        ("content", f"/v1/spaces/{s}/content"),
        ("page_markdown", f"/v1/spaces/{s}/content/page/{p}?format=markdown"),
        ("page_document", f"/v1/spaces/{s}/content/page/{p}?format=document"),
        ("cr", f"/v1/spaces/{s}/change-requests/{c}"),
        ("cr_list", f"/v1/spaces/{s}/change-requests"),
        ("comment_list", f"/v1/spaces/{s}/comments"),
        ("search_rare", f"/v1/spaces/{s}/search?query={RARE}"),
        ("search_frequent", f"/v1/spaces/{s}/search?query={FREQUENT}"),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--database-url")
    ap.add_argument("--only", help="comma-separated names of the requests to measure")
    ap.add_argument("--sized", action="store_true",
                    help="also measure the floor with a body the size of each row's answer")
    ap.add_argument("--gzip", action="store_true",
                    help="ask for gzip, as the official client does (Accept-Encoding: gzip, deflate)")
    ap.add_argument("--hold", action="store_true",
                    help="seed, print the server's pid, token and URLs, and wait (for profiling)")
    ap.add_argument("--data-dir", help="keep the server's data in DIR (an empty folder) instead of "
                    "a temporary one removed at the end (bench/instructions.sh reuses it)")
    args = ap.parse_args()
    data = args.data_dir or tempfile.mkdtemp(prefix="quire-read-")
    storage = ["--data-dir", data] + (["--database-url", args.database_url] if args.database_url else [])
    env = dict(os.environ, QUIRE_LOG="warn")
    procs = []
    try:
        port = free_port()
        server = subprocess.Popen([QUIRE, "serve", "--bind", f"127.0.0.1:{port}"] + storage, env=env,
                                  stderr=subprocess.DEVNULL)
        procs.append(server)
        wait_ready(f"http://127.0.0.1:{port}/healthz")
        token = subprocess.run([QUIRE, "admin", "create-token", "--email", "bench@example.com"] + storage,
                               capture_output=True, text=True, check=True, env=env).stdout.strip()
        base = f"http://127.0.0.1:{port}"
        t0 = time.time()
        ids = seed(base, token)
        print(f"seeded {PAGES} pages in {time.time() - t0:.1f} s", file=sys.stderr)
        if args.hold:
            print(json.dumps({"pid": server.pid, "token": token,
                              "urls": {name: base + path for name, path in targets(ids)}}), flush=True)
            server.wait()
            return 0
        auth = [f"Authorization: Bearer {token}"] + (["Accept-Encoding: gzip, deflate"] if args.gzip else [])
        wanted = set(args.only.split(",")) if args.only else None
        chosen = [(name, path) for name, path in targets(ids) if not wanted or name in wanted]
        sizes = {}
        if args.sized:
            for name, path in chosen:
                req = urllib.request.Request(base + path, headers=dict(h.split(": ", 1) for h in auth))
                # urllib does not decode: with --gzip, this is the compressed size.
                with urllib.request.urlopen(req, timeout=60) as r:
                    sizes[name] = len(r.read())
        fport = free_port()
        floor = subprocess.Popen([FLOOR, f"127.0.0.1:{fport}"] + [str(n) for n in sorted(set(sizes.values()))],
                                 stderr=subprocess.DEVNULL)
        procs.append(floor)
        floor_url = f"http://127.0.0.1:{fport}/"
        wait_ready(floor_url)
        rows = []
        wrk(floor_url, 2)
        for name, path in chosen:
            wrk(base + path, 1, auth)  # warm-up
            before = wrk(floor_url, args.duration)
            got = wrk(base + path, args.duration, auth)
            after = wrk(floor_url, args.duration)
            floor_rps = (before["rps"] + after["rps"]) / 2
            rows.append({"name": name, "rps": round(got["rps"]), "p50_ms": got["p50_ms"], "p99_ms": got["p99_ms"],
                         "non2xx": got["non2xx"], "floor_rps": round(floor_rps),
                         "ratio": round(got["rps"] / floor_rps, 3)})
            r = rows[-1]
            sized = ""
            if name in sizes:
                same = wrk(f"{floor_url}bytes/{sizes[name]}", args.duration)
                r.update(bytes=sizes[name], size_floor_rps=round(same["rps"]),
                         size_floor_ratio=round(same["rps"] / floor_rps, 3))
                sized = f"  size floor ({r['bytes']} B) {r['size_floor_ratio']:.3f}"
            print(f"{name:16} {r['rps']:>8} req/s  p50 {r['p50_ms']:6.2f} ms  p99 {r['p99_ms']:6.2f} ms  "
                  f"floor {r['floor_rps']:>8}  ratio {r['ratio']:.3f}" + sized
                  + (f"  NON-2XX {r['non2xx']}" if r["non2xx"] else ""), flush=True)
        print(json.dumps({"database": "postgres" if args.database_url else "sqlite", "gzip": args.gzip,
                          "rows": rows}, indent=1))
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait()
        if not args.data_dir:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
