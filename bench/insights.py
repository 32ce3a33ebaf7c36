#!/usr/bin/env python3
"""Site insights: events posted to a published site's `~insights` path (as its script sends
them: one page view a request), and batches of 100 events over 10 keys, measured with wrk;
then the aggregation the app's site screen asks (page views per day over 30 days), and a
check that the counts add up to the 204s wrk saw.

Usage: python3 bench/insights.py [--duration 8] [--database-url URL]
(QUIRE_BIN=<binary>: the server to run, by default target/release/quire.)
Needs: wrk.
"""
import argparse, json, os, re, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, request, wait_ready  # noqa: E402


def event(ids, page, extra=None):
    e = {
        "type": "page_view",
        "session": {"visitorId": "", "sessionId": "", "cookies": {}, "userAgent": "",
                    "language": None, "referrer": None},
        "location": {"url": "https://docs.example.com/", "siteSection": None,
                     "siteSpace": ids["site_space"], "siteShareKey": None, "space": ids["space"],
                     "revision": None, "page": page},
    }
    e.update(extra or {})
    return e


def wrk_post(url, body, duration):
    """wrk posting `body` as JSON: requests/s, p50 and p99 in ms, 2xx count."""
    script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    script.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                 f"wrk.body = {json.dumps(json.dumps(body))}\n")
    script.close()
    out = subprocess.run(["wrk", "-t2", "-c16", f"-d{duration}s", "--latency", "-s", script.name, url],
                         capture_output=True, text=True, check=True).stdout
    os.unlink(script.name)

    def pct(p):
        m = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out)
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else (v * 1000 if unit == "s" else v)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    ok = total - (int(bad.group(1)) if bad else 0)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50_ms": pct(50), "p99_ms": pct(99), "ok": ok, "requests": total}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--database-url")
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="quire-insights-")
    storage = ["--data-dir", data] + (["--database-url", args.database_url] if args.database_url else [])
    env = dict(os.environ, QUIRE_LOG="warn")
    server = None
    try:
        port = free_port()
        server = subprocess.Popen([QUIRE, "serve", "--bind", f"127.0.0.1:{port}"] + storage, env=env,
                                  stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/healthz")
        token = subprocess.run([QUIRE, "admin", "create-token", "--email", "bench@example.com"] + storage,
                               capture_output=True, text=True, check=True, env=env).stdout.strip()
        org = request("POST", f"{base}/v1/orgs", token, {"title": "Bench"})["id"]
        space = request("POST", f"{base}/v1/orgs/{org}/spaces", token, {"title": "Guide"})["id"]
        cr = request("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "Pages"})["id"]
        written = request("POST", f"{base}/v1/spaces/{space}/change-requests/{cr}/content?compat=false", token,
                          {"changes": [{"operation": "insert_page", "ref": f"p{i}", "title": f"Page {i}",
                                        "document": {"markdown": f"Page {i}."}} for i in range(10)]})
        pages = [c["page"]["id"] for c in written["changes"]]
        request("POST", f"{base}/v1/spaces/{space}/change-requests/{cr}/merge", token, {})
        site = request("POST", f"{base}/v1/orgs/{org}/sites", token, {"title": "Docs", "spaces": [space]})["id"]
        request("POST", f"{base}/v1/orgs/{org}/sites/{site}/publish", token, {})
        ids = {"space": space,
               "site_space": request("GET", f"{base}/v1/orgs/{org}/sites/{site}/site-spaces", token)["items"][0]["id"]}
        url = f"{base}/sites/{site}/~insights"
        one = {"events": [event(ids, pages[0])]}
        batch = {"events": [event(ids, pages[i % 10]) for i in range(100)]}
        warm = wrk_post(url, one, 2)
        single = wrk_post(url, one, args.duration)
        print(f"one page view a request: {single}", flush=True)
        many = wrk_post(url, batch, args.duration)
        print(f"100 events over 10 keys a request: {many}", flush=True)
        agg = f"{base}/v1/orgs/{org}/sites/{site}/insights/events/aggregate"
        total = request("POST", agg, token, {"range": "last7Days"})["columns"][0]["values"][0]
        expected = warm["ok"] + single["ok"] + 100 * many["ok"]
        print(f"counted {total} events; the 204s account for {expected}", flush=True)
        screen = {"range": "last30Days", "groupBy": [{"column": "datetime", "interval": "day"}],
                  "where": [{"column": "eventType", "values": ["page_view"]}]}
        t = time.perf_counter()
        for _ in range(100):
            request("POST", agg, token, screen)
        print(f"aggregate (views per day, 30 days): {(time.perf_counter() - t) * 10:.2f} ms each, 100 in a row",
              flush=True)
    finally:
        if server:
            server.terminate()
            server.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
