#!/usr/bin/env python3
"""Foundation benchmarks: start-up to ready, idle RSS, and GET ORG throughput and p99 at
64 connections on loopback (wrk), beside a minimal axum handler (the floor) in the same run.

Usage: python3 bench/foundation.py [--duration 10] [--database-url URL]
Needs: release builds (cargo build --release -p quire -p quire-server --example floor) and wrk.
"""
import argparse, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.path.join(ROOT, "target/release/quire")
FLOOR = os.path.join(ROOT, "target/release/examples/floor")


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def wait_ready(url, deadline=30.0):
    start = time.perf_counter()
    while time.perf_counter() - start < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return time.perf_counter()
        except Exception:
            time.sleep(0.002)
    raise RuntimeError(f"{url} not ready")


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def wrk(url, duration, headers=()):
    cmd = ["wrk", "-t2", "-c64", f"-d{duration}s", "--latency"]
    for h in headers:
        cmd += ["-H", h]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    def pct(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out)
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else (v * 1000 if unit == "s" else v)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50_ms": pct(50), "p99_ms": pct(99), "non2xx": int(non2xx.group(1)) if non2xx else 0}


def request(method, url, token, body=None):
    req = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--database-url")
    ap.add_argument("--log", default="warn", help="QUIRE_LOG for the server (info logs one line per request)")
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="quire-bench-")
    storage = ["--data-dir", data] + (["--database-url", args.database_url] if args.database_url else [])
    env = dict(os.environ, QUIRE_LOG=args.log)
    results = {}
    try:
        # Start-up: first start (creates the database and runs migrations), then a warm start.
        for label in ("startup_first_ms", "startup_warm_ms"):
            port = free_port()
            t0 = time.perf_counter()
            p = subprocess.Popen([QUIRE, "serve", "--bind", f"127.0.0.1:{port}"] + storage, env=env,
                                 stderr=subprocess.DEVNULL)
            t1 = wait_ready(f"http://127.0.0.1:{port}/healthz")
            results[label] = round((t1 - t0) * 1000, 1)
            if label == "startup_warm_ms":
                server, server_port = p, port
            else:
                p.send_signal(signal.SIGTERM); p.wait()
        time.sleep(1.0)
        results["idle_rss_mb"] = round(rss_mb(server.pid), 1)
        token = subprocess.run([QUIRE, "admin", "create-token", "--email", "bench@example.com"] + storage,
                               capture_output=True, text=True, check=True, env=env).stdout.strip()
        base = f"http://127.0.0.1:{server_port}"
        org = request("POST", f"{base}/v1/orgs", token, {"title": "Bench"})["id"]
        request("GET", f"{base}/v1/orgs/{org}", token)
        wrk(f"{base}/v1/orgs/{org}", 2, [f"Authorization: Bearer {token}"])  # warm-up
        results["get_org"] = wrk(f"{base}/v1/orgs/{org}", args.duration, [f"Authorization: Bearer {token}"])
        results["rss_after_load_mb"] = round(rss_mb(server.pid), 1)
        server.send_signal(signal.SIGTERM); server.wait()

        fport = free_port()
        floor = subprocess.Popen([FLOOR, f"127.0.0.1:{fport}"], stderr=subprocess.DEVNULL)
        wait_ready(f"http://127.0.0.1:{fport}/")
        wrk(f"http://127.0.0.1:{fport}/", 2)
        results["floor"] = wrk(f"http://127.0.0.1:{fport}/", args.duration)
        floor.send_signal(signal.SIGTERM); floor.wait()
        results["get_org_vs_floor"] = round(results["get_org"]["rps"] / results["floor"]["rps"], 3)
        results["database"] = "postgres" if args.database_url else "sqlite"
        results["log"] = args.log
        print(json.dumps(results, indent=2))
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
