#!/usr/bin/env python3
"""Published-site benchmark: a rendered HTML page of a public site whose space holds 10,000
pages, measured with wrk beside the floor (a minimal axum handler) in the same run, and its
first render after a restart of the server.

The corpus: one space of 10,000 pages in 100 chapters (a top-level page holding 99 children),
each page with three headings, a hint, a code block and a table, written through the API (one
change request, merged), shown by one public site. The page measured is a child in the middle of the tree, so that its sidebar,
breadcrumbs and previous/next links are all there.

Targets (issue 13): throughput >= 40% of the floor's, p99 < 10 ms, first render after a
restart < 50 ms.

Usage: python3 bench/site_pages.py [--duration 8] [--pages 10000] [--database-url URL]
       [--hostname docs.example.com]  (also the page on the site's custom hostname, its
       control proven through a DNS server of the bench's own, as the site's admin would)
(QUIRE_BENCH_PERF=<file> records the server's profile during the first render with perf,
QUIRE_BENCH_PERF_LOAD=<file> during the measured run.)
Needs: release builds (cargo build --release -p quire, and
cargo build --release -p quire-server --example floor) and wrk.
"""
import argparse, http.client, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.parse, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
FLOOR = os.environ.get("FLOOR_BIN") or os.path.join(ROOT, "target/release/examples/floor")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready, wrk  # noqa: E402

GROUP = 100  # pages per top-level page (itself included)


def call(method, url, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, method=method, data=data, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read() or b"null")


def page_markdown(index):
    return (
        f"Page {index} of the handbook.\n\n"
        f"## Overview\n\nWhat page {index} covers, in a paragraph with **bold** and `code`.\n\n"
        "## Details\n\n{% hint style=\"info\" %}\nA hint on every page.\n{% endhint %}\n\n"
        "```rust\nfn main() {\n    println!(\"page\");\n}\n```\n\n"
        "## Table\n\n| Name | Value |\n| --- | --- |\n| a | 1 |\n| b | 2 |\n"
    )


def seed(base, token, pages):
    org = call("POST", f"{base}/v1/orgs", token, {"title": "Bench"})["id"]
    space = call("POST", f"{base}/v1/orgs/{org}/spaces", token, {"title": "Handbook"})["id"]
    cr = call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "Pages"})["id"]
    content = f"{base}/v1/spaces/{space}/change-requests/{cr}/content?compat=false"
    for group in range(pages // GROUP):
        first = group * GROUP
        # A batch holds at most 50 changes: the chapter and its first children, then the rest
        # of its children into the chapter by id.
        changes = [{"operation": "insert_page", "ref": "chapter", "title": f"Chapter {group}",
                    "document": {"markdown": page_markdown(first)}}]
        chapter = None
        for i in range(first + 1, first + GROUP):
            into = {"into": "chapter" if chapter is None else chapter}
            changes.append({"operation": "insert_page", **into, "title": f"Page {i}",
                            "document": {"markdown": page_markdown(i)}})
            if len(changes) == 50 or i == first + GROUP - 1:
                done = call("POST", content, token, {"changes": changes})
                if chapter is None:
                    chapter = done["changes"][0]["page"]["id"]
                changes = []
    call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr}/merge", token)
    site = call("POST", f"{base}/v1/orgs/{org}/sites", token,
                {"title": "Handbook", "spaces": [space], "visibility": "public"})["id"]
    published = call("POST", f"{base}/v1/orgs/{org}/sites/{site}/publish", token)
    root = published["urls"]["published"]
    # The merge's search indexing runs as a background job: let it finish before the restart,
    # so that the first render is measured alone (a restart long after the merge).
    last = pages // GROUP * GROUP - 1
    deadline = time.time() + 300
    while time.time() < deadline:
        if call("GET", f"{base}/v1/spaces/{space}/search?query={last}", token)["items"]:
            break
        time.sleep(0.5)
    else:
        raise RuntimeError("the search index was not built within 300 s")
    middle = pages // GROUP // 2
    # The path of a child in the middle chapter: `chapter-<n>/page-<i>`.
    path = f"{root}chapter-{middle}/page-{middle * GROUP + GROUP // 2}"
    return path[len(base):]


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def settle(pid, quiet=2.0, deadline=300.0):
    """Waits until the server has used no CPU for `quiet` seconds (its jobs are done)."""
    end = time.time() + deadline
    last, since = cpu_ticks(pid), time.time()
    while time.time() < end:
        time.sleep(0.25)
        now = cpu_ticks(pid)
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= quiet:
            return
    raise RuntimeError("the server did not go idle")


def first_get(url):
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        body = r.read()
        status = r.status
    return (time.perf_counter() - t) * 1000, status, len(body)


def dns_server(records):
    """A DNS server on loopback answering TXT questions from `records` (name -> texts), which
    Quire asks for the record proving a custom hostname's control; its `address:port`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))

    def serve():
        while True:
            q, peer = sock.recvfrom(1500)
            at, labels = 12, []
            while q[at]:
                labels.append(q[at + 1:at + 1 + q[at]].decode("latin1").lower())
                at += 1 + q[at]
            texts = records.get(".".join(labels), []) if q[at + 1:at + 3] == b"\x00\x10" else []
            head = bytearray(q[:at + 5])
            head[2:4] = b"\x81\x80" if texts else b"\x81\x83"
            head[6:12] = len(texts).to_bytes(2, "big") + bytes(4)
            for t in texts:
                t = t.encode("latin1")
                head += b"\xc0\x0c\x00\x10\x00\x01\x00\x00\x00\x3c" + (len(t) + 1).to_bytes(2, "big") + bytes([len(t)]) + t
            sock.sendto(bytes(head), peer)

    threading.Thread(target=serve, daemon=True).start()
    return "127.0.0.1:%d" % sock.getsockname()[1]


def prove_hostname(port, token, storage, env, records, org, site, hostname):
    """Proves control of `hostname` for the site as its admin does: the record read from the
    site's screen in the app, published, then checked (dnsRevalidateCustomHostname)."""
    email, password = "bench@example.com", "a bench passphrase"
    subprocess.run([QUIRE, "admin", "set-password", "--email", email] + storage, input=password + "\n",
                   text=True, check=True, env=env, stderr=subprocess.DEVNULL)
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("POST", "/signin", body=urllib.parse.urlencode({"email": email, "password": password}),
                 headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": f"http://127.0.0.1:{port}"})
    res = conn.getresponse()
    res.read()
    cookie = (res.getheader("Set-Cookie") or "").split(";")[0]
    conn.request("GET", f"/o/{org}/sites/{site}", headers={"Cookie": cookie})
    page = conn.getresponse().read().decode()
    name, value = re.search(r'<dl class="hostname-challenge"><dt>Name</dt><dd><code>([^<]*)</code></dd>'
                            r'<dt>Value</dt><dd><code>([^<]*)</code>', page).groups()
    records.setdefault(name, []).append(value)
    call("PATCH", f"http://127.0.0.1:{port}/v1/custom-hostnames/{hostname}", token, {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--pages", type=int, default=10_000)
    ap.add_argument("--database-url")
    ap.add_argument("--hostname", help="also measure the page on this custom hostname of the site "
                    "(sent as the Host header), in the same run")
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="quire-site-")
    storage = ["--data-dir", data] + (["--database-url", args.database_url] if args.database_url else [])
    env = dict(os.environ, QUIRE_LOG="warn")
    procs = []
    records = {}
    dns = ["--dns-server", dns_server(records)]

    def start(port):
        server = subprocess.Popen([QUIRE, "serve", "--bind", f"127.0.0.1:{port}"] + storage + dns, env=env,
                                  stderr=subprocess.DEVNULL)
        procs.append(server)
        wait_ready(f"http://127.0.0.1:{port}/healthz")
        return server

    try:
        port = free_port()
        server = start(port)
        token = subprocess.run([QUIRE, "admin", "create-token", "--email", "bench@example.com"] + storage,
                               capture_output=True, text=True, check=True, env=env).stdout.strip()
        base = f"http://127.0.0.1:{port}"
        t0 = time.time()
        path = seed(base, token, args.pages)
        print(f"seeded {args.pages} pages in {time.time() - t0:.1f} s; page {path}", file=sys.stderr)

        # First render after a restart: nothing of the site in memory, and no background work
        # left (jobs of the merge that a stop interrupted run after the first restart, so
        # restart twice, letting the server go idle each time).
        for _ in range(2):
            settle(server.pid)
            server.send_signal(signal.SIGTERM)
            server.wait()
            procs.remove(server)
            server = start(port)
        settle(server.pid)
        # QUIRE_BENCH_PERF=<file>: record the server's profile during the first render.
        perf = None
        if os.environ.get("QUIRE_BENCH_PERF"):
            perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-g", "-p", str(server.pid),
                                     "-o", os.environ["QUIRE_BENCH_PERF"]], stderr=subprocess.DEVNULL)
            time.sleep(1)
        first_ms, status, size = first_get(base + path)
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait()
        second_ms, _, _ = first_get(base + path)
        assert status == 200, status
        print(f"first render after restart {first_ms:.1f} ms (then {second_ms:.1f} ms), {size} bytes",
              flush=True)

        fport = free_port()
        floor = subprocess.Popen([FLOOR, f"127.0.0.1:{fport}"], stderr=subprocess.DEVNULL)
        procs.append(floor)
        floor_url = f"http://127.0.0.1:{fport}/"
        wait_ready(floor_url)
        wrk(floor_url, 2)
        wrk(base + path, 2)  # warm-up
        before = wrk(floor_url, args.duration)
        # QUIRE_BENCH_PERF_LOAD=<file>: record the server's profile during the measured run.
        perf = None
        if os.environ.get("QUIRE_BENCH_PERF_LOAD"):
            perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-g", "-p", str(server.pid),
                                     "-o", os.environ["QUIRE_BENCH_PERF_LOAD"]], stderr=subprocess.DEVNULL)
        got = wrk(base + path, args.duration)
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait()
        after = wrk(floor_url, args.duration)
        floor_rps = (before["rps"] + after["rps"]) / 2
        row = {"name": "site_page", "rps": round(got["rps"]), "p50_ms": got["p50_ms"], "p99_ms": got["p99_ms"],
               "non2xx": got["non2xx"], "floor_rps": round(floor_rps), "ratio": round(got["rps"] / floor_rps, 3),
               "first_render_ms": round(first_ms, 1), "bytes": size}
        print(f"site_page {row['rps']:>8} req/s  p50 {row['p50_ms']:6.2f} ms  p99 {row['p99_ms']:6.2f} ms  "
              f"floor {row['floor_rps']:>8}  ratio {row['ratio']:.3f}"
              + (f"  NON-2XX {row['non2xx']}" if row["non2xx"] else ""), flush=True)
        rows = [row]
        if args.hostname:
            # The same page on the site's custom hostname: routed by the request's host.
            site_id, page_path = path.split("/sites/", 1)[1].split("/", 1)
            orgs = call("GET", f"{base}/v1/orgs", token)
            org_id = orgs['items'][0]['id']
            call("PATCH", f"{base}/v1/orgs/{org_id}/sites/{site_id}", token, {"hostname": args.hostname})
            prove_hostname(port, token, storage, env, records, org_id, site_id, args.hostname)
            host = [f"Host: {args.hostname}"]
            wrk(f"{base}/{page_path}", 2, host)  # warm-up
            before = wrk(floor_url, args.duration)
            got = wrk(f"{base}/{page_path}", args.duration, host)
            after = wrk(floor_url, args.duration)
            floor_rps = (before["rps"] + after["rps"]) / 2
            hosted = {"name": "site_page_on_hostname", "rps": round(got["rps"]), "p50_ms": got["p50_ms"],
                      "p99_ms": got["p99_ms"], "non2xx": got["non2xx"], "floor_rps": round(floor_rps),
                      "ratio": round(got["rps"] / floor_rps, 3)}
            print(f"site_page_on_hostname {hosted['rps']:>8} req/s  p50 {hosted['p50_ms']:6.2f} ms  "
                  f"p99 {hosted['p99_ms']:6.2f} ms  floor {hosted['floor_rps']:>8}  ratio {hosted['ratio']:.3f}"
                  + (f"  NON-2XX {hosted['non2xx']}" if hosted["non2xx"] else ""), flush=True)
            rows.append(hosted)
        print(json.dumps({"database": "postgres" if args.database_url else "sqlite", "rows": rows}, indent=1))
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
