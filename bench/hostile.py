#!/usr/bin/env python3
"""Hostile inputs: the peak RSS of `quire serve` (from `/usr/bin/time -v`) while it processes
one hostile input, and whether it survives it.

Inputs:
- `yaml-bomb`: an OpenAPI spec given as text, 2.1 MB of YAML: a 2 MiB string anchored once
  and repeated by 5,000 aliases (10 GB once expanded).

The server runs with its address space capped (`--as-limit-gb`, default 8) so that a build
without the bound fails at the cap instead of taking the machine's memory from other work.

Usage: python3 bench/hostile.py [--input yaml-bomb] [--quire PATH] [--database-url URL]
Needs: a release build (cargo build --release -p quire).
"""
import argparse, os, re, resource, shutil, signal, subprocess, tempfile, time, urllib.error

from foundation import QUIRE, free_port, request, wait_ready


def yaml_bomb():
    head = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n"
    return head + 'x-big: &a "' + "x" * (2 * 1024 * 1024) + '"\nx-list: [' + ", ".join(["*a"] * 5000) + "]\n"


def run_yaml_bomb(base, token, server):
    org = request("POST", f"{base}/v1/orgs", token, {"title": "Bench"})["id"]
    text = yaml_bomb()
    path = f"{base}/v1/orgs/{org}/openapi/bomb"
    request("PUT", path, token, {"source": {"text": text}})
    deadline = time.time() + 300
    while time.time() < deadline:
        if server.poll() is not None:
            return f"{len(text) / 1e6:.1f} MB spec: the server died"
        try:
            spec = request("GET", path, token)
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
            continue
        if spec["processingState"] == "complete":
            errors = spec.get("lastProcessedErrors") or [{}]
            return (f"{len(text) / 1e6:.1f} MB spec: {spec.get('lastProcessErrorCode')} / "
                    f"{errors[0].get('code')}: {errors[0].get('message')}")
        time.sleep(0.2)
    return "not processed within 300 s"


INPUTS = {"yaml-bomb": run_yaml_bomb}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", default="yaml-bomb", choices=sorted(INPUTS))
    ap.add_argument("--quire", default=QUIRE)
    ap.add_argument("--database-url")
    ap.add_argument("--as-limit-gb", type=float, default=8)
    args = ap.parse_args()

    data = tempfile.mkdtemp(prefix="quire-bench-hostile-")
    port = free_port()
    env = dict(os.environ, QUIRE_LOG="warn")
    storage = ["--data-dir", data] + (["--database-url", args.database_url] if args.database_url else [])
    token = subprocess.run([args.quire, "admin", "create-token", "--email", "bench@example.com"] + storage,
                           capture_output=True, text=True, check=True, env=env).stdout.strip()
    limit = int(args.as_limit_gb * 1024 ** 3)

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    report = os.path.join(data, "time.txt")
    timed = subprocess.Popen(["/usr/bin/time", "-v", "-o", report, args.quire, "serve",
                              "--bind", f"127.0.0.1:{port}"] + storage, env=env, preexec_fn=cap)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{base}/healthz")
        outcome = INPUTS[args.input](base, token, timed)
        alive = timed.poll() is None
        if alive:
            wait_ready(f"{base}/healthz", deadline=5)
            # `time` waits for the server: stop the server itself, its only child.
            with open(f"/proc/{timed.pid}/task/{timed.pid}/children") as f:
                child = int(f.read().split()[0])
            os.kill(child, signal.SIGTERM)
        timed.wait(timeout=60)
        with open(report) as f:
            text = f.read()
        peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
        status = re.search(r"Exit status: (\d+)|Command terminated by signal (\d+)", text).group(0)
        print(f"input: {args.input}\noutcome: {outcome}\nserver after: {'up' if alive else 'dead'} ({status})")
        print(f"peak RSS: {peak:,.0f} MB")
    finally:
        if timed.poll() is None:
            timed.kill()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
