#!/usr/bin/env python3
"""Start-up of one or more quire binaries: spawn to the first 200 on /healthz, on a new data
folder (creates the database, runs the migrations) and again on it (warm), and the idle RSS a
second after ready; the median and range over --runs runs of each.

Usage: python3 bench/startup.py [--runs 10] BINARY [BINARY ...]
"""
import argparse, os, shutil, signal, statistics, subprocess, sys, tempfile, time, urllib.request

from foundation import free_port, rss_mb


def start(binary, data):
    """Starts `binary` on `data`; answers the process and the milliseconds to ready."""
    port = free_port()
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "serve", "--data-dir", data, "--bind", f"127.0.0.1:{port}"],
                         env=dict(os.environ, QUIRE_LOG="warn"), stderr=subprocess.DEVNULL)
    while time.perf_counter() - t0 < 30:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                if r.status == 200:
                    return p, (time.perf_counter() - t0) * 1000
        except Exception:
            time.sleep(0.002)
    p.kill()
    raise RuntimeError(f"{binary} did not answer /healthz")


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("binaries", nargs="+")
    args = ap.parse_args()
    for binary in args.binaries:
        first, warm, rss = [], [], []
        for _ in range(args.runs):
            data = tempfile.mkdtemp(prefix="quire-startup-")
            try:
                p, ms = start(binary, data)
                first.append(ms)
                stop(p)
                p, ms = start(binary, data)
                warm.append(ms)
                time.sleep(1.0)
                rss.append(rss_mb(p.pid))
                stop(p)
            finally:
                shutil.rmtree(data, ignore_errors=True)
        show = lambda xs: f"{statistics.median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f})"
        size = os.path.getsize(binary) / 1e6
        print(f"{binary}: {size:.1f} MB; first start {show(first)} ms; warm start {show(warm)} ms; "
              f"idle RSS {show(rss)} MB; {args.runs} runs")


if __name__ == "__main__":
    sys.exit(main())
