#!/usr/bin/env python3
"""Mixed workload through a load balancer: 70% reads, 20% searches, 10% writes (comments),
for a fixed time at 64 connections (wrk with a Lua script), first on two `quire serve` nodes
behind nginx, then on one node behind the same nginx. Both nodes share one PostgreSQL
database and, when an S3 server is at hand, one S3 bucket (s3s-fs), as in the scale-out
test.

Usage: python3 bench/mixed.py [--duration 60] [--database-url URL] [--nodes 2,1]
Needs: a release build (cargo build --release -p quire), wrk, nginx, and PostgreSQL (a URL,
or initdb/pg_ctl for a throwaway cluster through scripts/pg-cluster.sh); s3s-fs optional.
"""
import argparse, json, os, random, re, shutil, signal, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready  # noqa: E402
from read_path import call, seed, vocabulary, FREQUENT, RARE  # noqa: E402

LUA = """
local reads = %(reads)s
local searches = %(searches)s
local comments = "%(comments)s"
local get = { ["Authorization"] = "Bearer %(token)s" }
local post = { ["Authorization"] = "Bearer %(token)s", ["Content-Type"] = "application/json" }
local n = 0
request = function()
  n = n + 1
  local r = math.random(100)
  if r <= 70 then
    return wrk.format("GET", reads[math.random(#reads)], get)
  elseif r <= 90 then
    return wrk.format("GET", searches[math.random(#searches)], get)
  end
  return wrk.format("POST", comments, post, '{"body":{"markdown":"Load comment ' .. n .. '."}}')
end
"""


def lua_list(items):
    return "{" + ", ".join(json.dumps(i) for i in items) + "}"


def nginx(dir, port, upstreams):
    servers = " ".join(f"server {u};" for u in upstreams)
    user = "user root;" if os.geteuid() == 0 else ""
    conf = f"""{user}
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi; uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;
  upstream quire {{ {servers} keepalive 64; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://quire;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
    }}
  }}
}}
"""
    path = os.path.join(dir, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    return subprocess.Popen(["nginx", "-p", dir, "-c", path], stderr=subprocess.DEVNULL)


def run_wrk(url, duration, script):
    cmd = ["wrk", "-t2", "-c64", f"-d{duration}s", "--latency", "-s", script, url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def pct(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out)
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else (v * 1000 if unit == "s" else v)

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = (int(non2xx.group(1)) if non2xx else 0) + (sum(map(int, sock.groups())) if sock else 0)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    return {"rps": round(rps), "p50_ms": pct(50), "p99_ms": pct(99), "requests": total, "errors": errors}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--database-url")
    ap.add_argument("--nodes", default="2,1", help="node counts to measure, in order")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="quire-mixed-")
    procs, pg_dir = [], None
    try:
        db = args.database_url
        if not db:
            pg_dir = tempfile.mkdtemp(prefix="quire-pg-")  # not under `work`: the cluster's user must reach it
            db = subprocess.run([os.path.join(ROOT, "scripts/pg-cluster.sh"), "start", pg_dir],
                                capture_output=True, text=True, check=True).stdout.strip()
        env = dict(os.environ, QUIRE_LOG="warn")
        s3 = os.environ.get("QUIRE_S3_SERVER") or shutil.which("s3s-fs") \
            or os.path.expanduser("~/.cargo/bin/s3s-fs")
        blob = []
        if os.access(s3, os.X_OK):
            os.makedirs(os.path.join(work, "s3", "quire"))
            s3_port = free_port()
            procs.append(subprocess.Popen([s3, "--host", "127.0.0.1", "--port", str(s3_port),
                                           "--access-key", "bench", "--secret-key", "bench-secret",
                                           os.path.join(work, "s3")],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            env.update(AWS_ENDPOINT=f"http://127.0.0.1:{s3_port}", AWS_ACCESS_KEY_ID="bench",
                       AWS_SECRET_ACCESS_KEY="bench-secret", AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
            blob = ["--blob-url", "s3://quire/blobs"]
        lb_port = free_port()
        lb = f"http://127.0.0.1:{lb_port}"

        def storage(name):
            return ["--data-dir", os.path.join(work, name), "--database-url", db] + blob

        def start_node(name):
            port = free_port()
            p = subprocess.Popen([QUIRE, "serve", "--bind", f"127.0.0.1:{port}", "--public-url", lb,
                                  "--rate-limit-token", "0", "--rate-limit-address", "0"] + storage(name),
                                 env=env, stderr=subprocess.DEVNULL)
            procs.append(p)
            wait_ready(f"http://127.0.0.1:{port}/healthz")
            return p, f"127.0.0.1:{port}"

        seeder, seeder_addr = start_node("seed")
        token = subprocess.run([QUIRE, "admin", "create-token", "--email", "bench@example.com"] + storage("seed"),
                               capture_output=True, text=True, check=True, env=env).stdout.strip()
        ids = seed(f"http://{seeder_addr}", token)
        pages = call("GET", f"http://{seeder_addr}/v1/spaces/{ids['space']}/content/pages", token)["pages"]
        seeder.send_signal(signal.SIGTERM)
        seeder.wait()
        procs.remove(seeder)
        s = ids["space"]
        reads = [f"/v1/spaces/{s}", f"/v1/orgs/{ids['org']}/spaces", f"/v1/spaces/{s}/change-requests/{ids['cr']}",
                 f"/v1/spaces/{s}/comments", f"/v1/spaces/{s}/change-requests"]
        reads += [f"/v1/spaces/{s}/content/page/{p['id']}?format=markdown" for p in pages[::10]]
        words = vocabulary(random.Random(7))
        searches = [f"/v1/spaces/{s}/search?query={w}" for w in [RARE, FREQUENT] + words[::150]]
        script = os.path.join(work, "mixed.lua")
        with open(script, "w") as f:
            f.write(LUA % {"reads": lua_list(reads), "searches": lua_list(searches),
                           "comments": f"/v1/spaces/{s}/comments", "token": token})
        results = []
        for count in [int(n) for n in args.nodes.split(",")]:
            nodes = [start_node(f"node{i}") for i in range(count)]
            lb_dir = os.path.join(work, f"nginx{count}")
            os.makedirs(lb_dir)
            balancer = nginx(lb_dir, lb_port, [addr for _, addr in nodes])
            procs.append(balancer)
            wait_ready(f"{lb}/healthz")
            run_wrk(lb + "/", 5, script)  # warm-up
            r = dict(nodes=count, **run_wrk(lb + "/", args.duration, script))
            results.append(r)
            print(f"{count} node(s): {r['rps']} req/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  "
                  f"{r['requests']} requests, {r['errors']} errors", flush=True)
            for p in [balancer] + [p for p, _ in nodes]:
                p.send_signal(signal.SIGTERM)
                p.wait()
                procs.remove(p)
        print(json.dumps({"duration_s": args.duration, "connections": 64, "mix": "70/20/10",
                          "s3": bool(blob), "results": results}, indent=1))
        return 0 if all(r["errors"] == 0 for r in results) else 1
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait()
        if pg_dir:
            subprocess.run([os.path.join(ROOT, "scripts/pg-cluster.sh"), "stop", pg_dir])
            shutil.rmtree(pg_dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
