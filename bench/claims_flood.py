#!/usr/bin/env python3
"""Published pages under a flood of visitor claims: API latency while anonymous visitors ask
for a large published page, each with a random `?visitor.<name>=<value>` claim that no
condition of the site reads, beside the same API requests alone.

The corpus: one space whose page `Reference` renders to about 1 MB of HTML (sections of
prose, tables and code, and a block behind the unsigned claim `lang`), a page behind the
signed claim `pro`, and a block behind it, shown by one public site. The API request
measured is `GET /v1/orgs/{org}/spaces` with a member's token (4 connections); a flood is 8
connections asking for the page, each request with a new claim: first claims no condition
reads (`random`), then a new value of `lang`, which a condition of the page reads, so that
every request renders the page (`read`).

Usage: python3 bench/claims_flood.py [--duration 10] [--database-url URL]
(QUIRE_BIN=<binary> to measure another build.)
Needs: a release build (cargo build --release -p quire) and wrk.
"""
import argparse, json, os, shutil, signal, subprocess, sys, tempfile, threading, time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready  # noqa: E402
import re  # noqa: E402

# Each request a new claim: a random name (one no condition reads), or with an argument that
# name (`lang`, which a block condition of the page reads), and a random value.
FLOOD_LUA = """
local n = 0
local fixed = nil
init = function(args)
  fixed = args[1]
end
request = function()
  n = n + 1
  local name = fixed or string.format("c%x", math.random(1, 2147483647))
  local value = string.format("%x%x", math.random(1, 2147483647), n)
  return wrk.format("GET", wrk.path .. "?visitor." .. name .. "=" .. value)
end
"""


def call(method, url, token, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, method=method, data=data, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read() or b"null")


def reference_markdown(sections):
    out = ["The reference, in one long page.\n\n{% if visitor.claims.unsigned.lang == \"fr\" %}\n"
           "La référence.\n{% endif %}\n"]
    for i in range(sections):
        out.append(
            f"## Section {i}\n\nSection {i} explains one part of the product, with **bold**, `code` "
            f"and a [link](https://example.com/{i}), in a paragraph long enough to be read.\n\n"
            "| Name | Type | Default |\n| --- | --- | --- |\n"
            + "".join(f"| option_{i}_{j} | string | none |\n" for j in range(4))
            + "\n```python\ndef handler(event):\n    return {'status': 200, 'body': event}\n```\n"
        )
    return "\n".join(out)


def seed(base, token, sections):
    org = call("POST", f"{base}/v1/orgs", token, {"title": "Bench"})["id"]
    space = call("POST", f"{base}/v1/orgs/{org}/spaces", token, {"title": "Handbook"})["id"]
    cr = call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "Pages"})["id"]
    content = f"{base}/v1/spaces/{space}/change-requests/{cr}/content?compat=false"
    call("POST", content, token, {"changes": [
        {"operation": "insert_page", "title": "Intro",
         "document": {"markdown": "Welcome.\n\n{% if visitor.claims.pro %}\nFor pro visitors.\n{% endif %}\n"}},
        {"operation": "insert_page", "title": "Reference",
         "document": {"markdown": reference_markdown(sections)}},
        {"operation": "insert_page", "title": "Pro", "condition": "visitor.claims.pro === true",
         "document": {"markdown": "Pro only."}},
    ]})
    call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr}/merge", token)
    site = call("POST", f"{base}/v1/orgs/{org}/sites", token,
                {"title": "Handbook", "spaces": [space], "visibility": "public"})["id"]
    root = call("POST", f"{base}/v1/orgs/{org}/sites/{site}/publish", token)["urls"]["published"]
    return org, root[len(base):] + "reference"


def wrk(url, duration, connections, threads, headers=(), script=None, args=()):
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "30s"]
    for h in headers:
        cmd += ["-H", h]
    if script:
        cmd += ["-s", script]
    cmd.append(url)
    if args:
        cmd += ["--", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def pct(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out)
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else (v * 1000 if unit == "s" else v)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50_ms": pct(50), "p99_ms": pct(99), "non2xx": int(non2xx.group(1)) if non2xx else 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--sections", type=int, default=700)
    ap.add_argument("--database-url")
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="quire-flood-")
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
        org, page = seed(base, token, args.sections)
        with urllib.request.urlopen(base + page, timeout=120) as r:
            size = len(r.read())
        api = f"{base}/v1/orgs/{org}/spaces"
        auth = [f"Authorization: Bearer {token}"]
        wrk(api, 2, 4, 1, auth)  # warm-up
        rows = [{"name": "api_alone", **wrk(api, args.duration, 4, 1, auth)}]
        for kind, claim in (("random", ()), ("read", ("lang",))):
            flood = {}
            runner = threading.Thread(target=lambda: flood.update(
                wrk(base + page, args.duration + 2, 8, 1, script=lua, args=claim)))
            runner.start()
            time.sleep(1)
            loaded = wrk(api, args.duration, 4, 1, auth)
            runner.join()
            rows.append({"name": f"api_flood_{kind}", **loaded})
            rows.append({"name": f"page_flood_{kind}", **flood, "bytes": size})
        for r in rows:
            print(f"{r['name']:<18} {r['rps']:>9.1f} req/s  p50 {r['p50_ms']:9.2f} ms  p99 {r['p99_ms']:9.2f} ms"
                  + (f"  NON-2XX {r['non2xx']}" if r["non2xx"] else ""), flush=True)
        print(json.dumps({"database": "postgres" if args.database_url else "sqlite", "page_bytes": size,
                          "rows": rows}, indent=1))
    finally:
        if server:
            server.send_signal(signal.SIGTERM)
            server.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
