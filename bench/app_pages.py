#!/usr/bin/env python3
"""App benchmark (issues 43 and 68): a page screen of the app, with its sidebar, on the space
of 10,000 pages that bench/site_pages.py builds, at 16 concurrent signed-in sessions; the
home (with recent pages), the quick find and the account page; and the screen of a change
request with 100 edited pages (each rendered before and after), first and warm.

Targets: page screen p50 < 20 ms and p99 < 50 ms at 16 sessions; the changes of a change
request with 100 edited pages open in < 300 ms; the app's script on reading and review
screens under 100 KB compressed (it ships none today).

Usage: python3 bench/app_pages.py [--duration 8] [--pages 10000]
Needs: a release build (cargo build --release -p quire) and wrk.
"""
import argparse, http.client, os, re, subprocess, sys, tempfile, time, urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready  # noqa: E402
from site_pages import call, seed  # noqa: E402

EMAIL = "bench@example.com"
PASSWORD = "a bench passphrase"


def sign_in(host, port):
    conn = http.client.HTTPConnection(host, port)
    body = urllib.parse.urlencode({"email": EMAIL, "password": PASSWORD})
    conn.request("POST", "/signin", body=body, headers={
        "Content-Type": "application/x-www-form-urlencoded", "Origin": f"http://{host}:{port}"})
    res = conn.getresponse()
    res.read()
    cookie = res.getheader("Set-Cookie") or ""
    if res.status != 303 or not cookie.startswith("quire_app="):
        raise RuntimeError(f"sign-in failed: {res.status}")
    return cookie.split(";")[0]


def timed_get(host, port, path, cookie):
    conn = http.client.HTTPConnection(host, port)
    t0 = time.perf_counter()
    conn.request("GET", path, headers={"Cookie": cookie})
    res = conn.getresponse()
    body = res.read()
    ms = (time.perf_counter() - t0) * 1000
    if res.status != 200:
        raise RuntimeError(f"GET {path}: {res.status}")
    return ms, body


def wrk(url, duration, cookie, connections):
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "-H", f"Cookie: {cookie}", url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

    def pct(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out)
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else (v * 1000 if unit == "s" else v)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return {"rps": rps, "p50_ms": pct(50), "p99_ms": pct(99), "non2xx": int(non2xx.group(1)) if non2xx else 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--pages", type=int, default=10000)
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="quire-app-")
    storage = ["--data-dir", data]
    env = dict(os.environ, QUIRE_LOG="warn")
    port = free_port()
    server = subprocess.Popen([QUIRE, "serve", "--bind", f"127.0.0.1:{port}"] + storage, env=env,
                              stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/healthz")
        token = subprocess.run([QUIRE, "admin", "create-token", "--email", EMAIL] + storage,
                               capture_output=True, text=True, check=True, env=env).stdout.strip()
        subprocess.run([QUIRE, "admin", "set-password", "--email", EMAIL] + storage, input=PASSWORD + "\n",
                       capture_output=True, text=True, check=True, env=env)
        t0 = time.time()
        site_path = seed(base, token, args.pages)
        print(f"seeded {args.pages} pages in {time.time() - t0:.0f} s", flush=True)
        org = call("GET", f"{base}/v1/orgs", token)["items"][0]["id"]
        space = call("GET", f"{base}/v1/orgs/{org}/spaces", token)["items"][0]["id"]
        tail = site_path.split("/", 3)[3]  # sites/{id}/<path>
        path = f"/s/{space}/{tail}"
        cookie = sign_in("127.0.0.1", port)
        first, body = timed_get("127.0.0.1", port, path, cookie)
        print(f"page screen {path}: first {first:.1f} ms, {len(body)} bytes, "
              f"script tags {body.count(b'<script')}", flush=True)
        r = wrk(f"{base}{path}", args.duration, cookie, 16)
        print(f"page screen, 16 sessions: {r['rps']:.0f} req/s  p50 {r['p50_ms']:.2f} ms  "
              f"p99 {r['p99_ms']:.2f} ms  non-2xx {r['non2xx']}", flush=True)

        # The newcomer's and everyday screens (issue 68): the home with its recent pages,
        # the quick find with no words and with a word, the account page.
        for label, screen in [("home, with recent pages", "/"), ("quick find, no words", "/find"),
                              ("quick find, a title's words", "/find?q=Page+4242"),
                              ("account", "/account")]:
            timed_get("127.0.0.1", port, screen, cookie)
            r = wrk(f"{base}{screen}", args.duration, cookie, 16)
            print(f"{label}, 16 sessions: {r['rps']:.0f} req/s  p50 {r['p50_ms']:.2f} ms  "
                  f"p99 {r['p99_ms']:.2f} ms  non-2xx {r['non2xx']}", flush=True)

        # A change request editing 100 pages.
        pages = [p for p in call("GET", f"{base}/v1/spaces/{space}/content/pages", token)["pages"]]
        ids = []
        stack = list(pages)
        while stack and len(ids) < 100:
            p = stack.pop(0)
            if p.get("type") == "document":
                ids.append(p["id"])
            stack[0:0] = p.get("pages", [])
        cr = call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "Hundred"})
        for chunk in (ids[:50], ids[50:100]):
            call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr['id']}/content", token,
                 {"changes": [{"operation": "update_page", "page": i,
                               "document": {"markdown": f"Edited page {i}.\n\nA second paragraph.\n"}}
                              for i in chunk]})
        cr_path = f"/s/{space}/~/changes/{cr['number']}"
        times = [timed_get("127.0.0.1", port, cr_path, cookie)[0] for _ in range(5)]
        print(f"change request with {len(ids)} edited pages: first {times[0]:.0f} ms, "
              f"warm {min(times[1:]):.0f}-{max(times[1:]):.0f} ms", flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
