#!/usr/bin/env python3
"""Editor benchmark (issue 45), on the space of 10,000 pages that bench/site_pages.py builds
plus one page of 2,000 lines:

- a save of one page from the editor (its form, as a browser posts it), p50 and p95;
- opening the editor on the 2,000-line page in headless Chromium until it takes typing;
- a keystroke until the preview shows it, p50 and p95.

Targets: open < 300 ms; save p50 < 50 ms; preview p95 < 150 ms.

Usage: python3 bench/editor.py [--pages 10000] [--runs 10]
Needs: a release build (cargo build --release -p quire), Node.js with the conformance
suite's packages (npm ci in conformance/), and Debian's chromium.
"""
import argparse, http.client, json, os, statistics, subprocess, sys, tempfile, time, urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready  # noqa: E402
from site_pages import call, seed  # noqa: E402
from app_pages import EMAIL, PASSWORD, sign_in  # noqa: E402


def long_page(lines):
    """A page of `lines` lines: headings, paragraphs, lists, code and hints."""
    out, n = [], 0
    while n < lines:
        out += [f"## Section {n}", "", f"A paragraph about part {n}, with **bold** and a [link](https://example.com/{n}).", "",
                f"- item {n}", f"- item {n + 1}", "", "```js", f"const x{n} = {n};", "```", "",
                '{% hint style="info" %}', f"Note {n}.", "{% endhint %}", ""]
        n = len(out)
    return "\n".join(out[:lines]) + "\n"


def editor_form(host, port, path, cookie):
    conn = http.client.HTTPConnection(host, port)
    conn.request("GET", path, headers={"Cookie": cookie})
    res = conn.getresponse()
    html = res.read().decode()
    if res.status != 200:
        raise RuntimeError(f"GET {path}: {res.status}")

    def value(name):
        at = html.index(f'name="{name}" value="') + len(f'name="{name}" value="')
        return html[at:html.index('"', at)]
    return value("csrf"), value("parent")


def timed_save(host, port, path, cookie, fields):
    conn = http.client.HTTPConnection(host, port)
    body = urllib.parse.urlencode(fields)
    t0 = time.perf_counter()
    conn.request("POST", path, body=body, headers={
        "Cookie": cookie, "Origin": f"http://{host}:{port}",
        "Content-Type": "application/x-www-form-urlencoded"})
    res = conn.getresponse()
    res.read()
    ms = (time.perf_counter() - t0) * 1000
    if res.status != 303:
        raise RuntimeError(f"save: {res.status}")
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="quire-editor-")
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
        seed(base, token, args.pages)
        org = call("GET", f"{base}/v1/orgs", token)["items"][0]["id"]
        space = call("GET", f"{base}/v1/orgs/{org}/spaces", token)["items"][0]["id"]
        cr = call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "Long page"})
        done = call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr['id']}/content?compat=false", token,
                    {"changes": [{"operation": "insert_page", "title": "Long",
                                  "document": {"markdown": long_page(2000)}}]})
        long_id = done["changes"][0]["page"]["id"]
        call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr['id']}/merge", token)
        print(f"seeded {args.pages} pages and a 2,000-line page in {time.time() - t0:.0f} s", flush=True)

        cookie = sign_in("127.0.0.1", port)
        edit = call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "Edits"})
        # Saves of one short page of the 10,000-page space, from the editor's form.
        pages = call("GET", f"{base}/v1/spaces/{space}/content/pages", token)["pages"]
        short = pages[len(pages) // 2]["id"]
        path = f"/s/{space}/~/changes/{edit['number']}/edit/{short}"
        csrf, _ = editor_form("127.0.0.1", port, path, cookie)
        saves = []
        for i in range(args.runs * 4):
            _, seen = editor_form("127.0.0.1", port, path, cookie)
            saves.append(timed_save("127.0.0.1", port, path, cookie, {
                "csrf": csrf, "parent": seen, "subject": "Chapter", "body": f"Edited {i}.\r\n\r\nMore.\r\n"}))
        print(f"save of one page (10,000-page space): p50 {statistics.median(saves):.1f} ms  "
              f"p95 {sorted(saves)[int(len(saves) * 0.95) - 1]:.1f} ms  ({len(saves)} saves)", flush=True)

        # The preview of the 2,000-line page, server side.
        text = long_page(2000)
        previews = []
        for _ in range(args.runs * 2):
            conn = http.client.HTTPConnection("127.0.0.1", port)
            t0 = time.perf_counter()
            conn.request("POST", f"/s/{space}/~/changes/{edit['number']}/preview",
                         body=urllib.parse.urlencode({"csrf": csrf, "body": text}),
                         headers={"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}",
                                  "Content-Type": "application/x-www-form-urlencoded"})
            res = conn.getresponse()
            res.read()
            previews.append((time.perf_counter() - t0) * 1000)
            if res.status != 200:
                raise RuntimeError(f"preview: {res.status}")
        print(f"preview of the 2,000-line page, server side: p50 {statistics.median(previews):.1f} ms  "
              f"max {max(previews):.1f} ms", flush=True)

        long_path = f"/s/{space}/~/changes/{edit['number']}/edit/{long_id}"
        out = subprocess.run(["node", os.path.join(ROOT, "bench", "editor_browser.mjs"), base,
                              cookie.split("=", 1)[1], long_path, str(args.runs)],
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"editor on a {r['lines']}-line page in Chromium: open p50 {r['open_p50_ms']:.0f} ms "
              f"(max {r['open_max_ms']:.0f}); keystroke to preview p50 {r['preview_p50_ms']:.0f} ms  "
              f"p95 {r['preview_p95_ms']:.0f} ms", flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
