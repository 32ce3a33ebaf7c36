#!/usr/bin/env python3
"""Hardening benchmark: the server's peak memory while 8 clients post maximal bodies for
30 s, and /healthz latency meanwhile.

Each client loops over four kinds of maximal request, each a body of about the configured
limit: an authoring batch updating two pages with a maximal (2 MiB) document each (a batch's
documents total at most 4 MiB), a
batch inserting one file of the largest size the limit allows (base64), a comment whose
body is far past the comment limit (refused with 400), and a body one byte over the limit
(refused with 413). A ninth client polls /healthz every 20 ms and records its latency.

Usage: python3 bench/hardening.py [--duration 30] [--clients 8] [--database-url URL]
Needs: a release build (cargo build --release -p quire).
"""
import argparse, base64, http.client, json, os, shutil, signal, subprocess, tempfile, threading, time

from foundation import QUIRE, free_port, request, wait_ready


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def post_raw(port, path, token, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", path, body=body, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        res = conn.getresponse()
        res.read()
        return res.status
    except (ConnectionError, http.client.HTTPException):
        # The server may close a connection whose body it refused before reading it all.
        return 413
    finally:
        conn.close()


def padded(template, size):
    """`template` (JSON with a `@@` placeholder inside a string) filled to exactly `size` bytes."""
    base = len(template.replace("@@", "").encode())
    line = "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\\n"
    fill = (line * (size // len(line) + 1))[: size - base]
    if fill.endswith("\\"):
        fill = fill[:-1] + "x"
    out = template.replace("@@", fill).encode()
    assert len(out) == size, (len(out), size)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--max-body-bytes", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--database-url")
    ap.add_argument("--only", type=int, help="send only the body of this index (0-3)")
    args = ap.parse_args()

    data = tempfile.mkdtemp(prefix="quire-bench-hardening-")
    port = free_port()
    env = dict(os.environ, QUIRE_LOG="warn")
    storage = ["--data-dir", data] + (["--database-url", args.database_url] if args.database_url else [])
    token = subprocess.run([QUIRE, "admin", "create-token", "--email", "bench@example.com"] + storage,
                           capture_output=True, text=True, check=True, env=env).stdout.strip()
    server = subprocess.Popen([QUIRE, "serve", "--bind", f"127.0.0.1:{port}",
                               "--max-body-bytes", str(args.max_body_bytes)] + storage, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/healthz")
        org = request("POST", f"{base}/v1/orgs", token, {"title": "Bench"})["id"]
        space = request("POST", f"{base}/v1/orgs/{org}/spaces", token, {"title": "Bench"})["id"]
        cr = request("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "big"})["id"]
        content = f"/v1/spaces/{space}/change-requests/{cr}/content?compat=false"
        made = request("POST", f"{base}{content}", token, {"changes": [
            {"operation": "insert_page", "title": f"Page {n}", "document": {"markdown": "x"}} for n in range(8)]})
        pages = [c["page"]["id"] for c in made["changes"]]
        idle = rss_mb(server.pid)
        size = args.max_body_bytes
        line = "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n\n"
        # Just under the 2 MiB document limit once JSON escapes its newlines.
        page_md = (line * (2 * 1024 * 1024 // len(line)))[: 1900 * 1024]
        # A batch's documents total at most 4 MiB: two maximal pages.
        update = json.dumps({"changes": [
            {"operation": "update_page", "page": p, "document": {"markdown": page_md}} for p in pages[:2]]}).encode()
        file_bytes = (size - 1024) * 3 // 4
        upload = json.dumps({"changes": [{"operation": "insert_files", "files": [
            {"name": "big.bin", "contentType": "application/octet-stream",
             "base64": base64.b64encode(os.urandom(1024) * (file_bytes // 1024)).decode()}]}]}).encode()
        bodies = [
            (content, update),
            (content, upload),
            (f"/v1/spaces/{space}/comments", padded('{"body":{"markdown":"@@"}}', size)),
            (f"/v1/spaces/{space}/comments", padded('{"body":{"markdown":"@@"}}', size + 1)),
        ]
        print(json.dumps({"body_bytes": [len(b) for _, b in bodies]}))
        if args.only is not None:
            bodies = [bodies[args.only]]
        stop = time.monotonic() + args.duration
        statuses = {}
        lock = threading.Lock()

        def client(n):
            i = n
            while time.monotonic() < stop:
                path, body = bodies[i % len(bodies)]
                status = post_raw(port, path, token, body)
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                i += 1

        latencies = []

        def health():
            while time.monotonic() < stop:
                t = time.perf_counter()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                conn.close()
                latencies.append((time.perf_counter() - t) * 1000)
                time.sleep(0.02)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
        threads.append(threading.Thread(target=health))
        for t in threads:
            t.start()
        samples = []
        while time.monotonic() < stop:
            samples.append(rss_mb(server.pid))
            time.sleep(0.2)
        for t in threads:
            t.join()
        peak = peak_rss_mb(server.pid)
        after = rss_mb(server.pid)
        latencies.sort()
        p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
        print(json.dumps({
            "clients": args.clients, "duration_s": args.duration, "max_body_bytes": size,
            "idle_rss_mb": round(idle, 1), "peak_rss_mb": round(peak, 1),
            "max_sampled_rss_mb": round(max(samples), 1), "rss_after_mb": round(after, 1),
            "statuses": statuses, "healthz_samples": len(latencies),
            "healthz_p50_ms": round(p(0.5), 2), "healthz_p99_ms": round(p(0.99), 2),
            "healthz_max_ms": round(latencies[-1], 2),
        }, indent=2))
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
