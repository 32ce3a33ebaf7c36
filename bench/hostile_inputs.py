#!/usr/bin/env python3
"""Hostile inputs: the server's peak memory (VmHWM, and RSS sampled every 50 ms) while it
answers one hostile request, or several at once, and what each request was answered.

Cases:
  pdf-images  a page showing three valid 20,000 x 20,000 RGBA PNGs (about 1.6 MB each on
              disk, 1.6 GB each decoded; --images, --image-side), printed with GET SPACE/pdf
  pdf-page    one page of about 0.8 MB of markdown (--shape: paragraphs, paragraph, runs,
              lines, table, list), printed with GET SPACE/pdf
  zip         a 9-10 MB zip that expands to about 480 MB (--zip-kind: assets, a README and
              240 files of 2 MB; linked, the same with the README linking every file, so
              that all are stored; docs, 240 markdown pages of 2 MB), imported with
              POST SPACE/content/import by --clients clients at once (each into its own
              space), the zip served on loopback; the RSS is sampled again up to --settle
              seconds after the last answer
  frontmatter a page whose frontmatter anchors a string of --string-kib KiB and repeats it
              by --aliases aliases, inserted with POST CR/content by --clients clients at once
  signin      --clients sign-ins at once (POST /signin, wrong passwords for random
              addresses), each from its own client address (X-Forwarded-For, so the server
              runs with --trust-forwarded-for): the per-address limit holds none of them

Usage: python3 bench/hostile_inputs.py CASE [--quire target/release/quire] [--clients 12]
       [--database-url URL] [--mem-limit-mb N]
--mem-limit-mb caps the server's address space (prlimit), so that an input that would take
all the machine's memory makes the server fail as it would on a smaller node.
Needs: a release build (cargo build --release -p quire).
"""
import argparse, http.client, http.server, io, json, os, random, shutil, signal, struct
import subprocess, sys, tempfile, threading, time, zipfile, zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import QUIRE, free_port, request, wait_ready


def status_of(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0
    except FileNotFoundError:
        pass
    return float("nan")


def png_rgba(width, height, fill=0):
    """A valid RGBA PNG of one colour (`fill` in every channel), written without holding the
    raw pixels."""
    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    comp = zlib.compressobj(9)
    row = b"\0" + bytes([fill]) * (4 * width)
    parts = []
    for _ in range(height):
        parts.append(comp.compress(row))
    parts.append(comp.flush())
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b"")


WORDS = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. "


def page_markdown(shape, size):
    unit = {
        "paragraphs": WORDS * 2 + "\n\n",
        "paragraph": WORDS,
        "runs": "**bold** and *italic* text ",
        "lines": "a short line\\\n",
        "list": "- an item of the list\n",
        "table": "| one cell | two cell | three cell |\n",
    }[shape]
    body = unit * (size // len(unit) + 1)
    if shape == "table":
        body = "| a | b | c |\n| --- | --- | --- |\n" + body
    return body[:size]


def compressible(rng, size, text=False):
    """`size` bytes that deflate about 50 times: a random block repeated, with a few random
    bytes between repeats (letters and spaces when `text`)."""
    alphabet = b"abcdefghijklmnopqrstuvwxyz     \n"

    def noise(n):
        b = bytes(rng.getrandbits(8) for _ in range(n))
        return bytes(alphabet[x % 32] for x in b) if text else b

    block, gap = noise(4096), (60 if text else 40)
    out = bytearray()
    while len(out) < size:
        out += block
        out += noise(gap)
    return bytes(out[:size])


def bomb_zip(kind, entries=240):
    rng = random.Random(7)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        if kind in ("assets", "linked"):
            links = "".join(f"[blob {i}](.gitbook/assets/blob-{i}.bin)\n\n" for i in range(entries))
            z.writestr("README.md", "# Assets\n\n" + (links if kind == "linked" else "A page.\n"))
            for i in range(entries):
                z.writestr(f".gitbook/assets/blob-{i}.bin", compressible(rng, 2_000_000))
        else:
            for i in range(entries):
                z.writestr(f"page-{i}.md", f"# Page {i}\n\n".encode() + compressible(rng, 2_000_000, True))
    return buf.getvalue()


class Serve(http.server.BaseHTTPRequestHandler):
    payload = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/zip")
        self.send_header("Content-Length", str(len(self.payload)))
        self.end_headers()
        self.wfile.write(self.payload)

    def log_message(self, *args):
        pass


def call(port, method, path, token, body=None, timeout=600):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t = time.perf_counter()
    try:
        conn.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        res = conn.getresponse()
        data = res.read()
        return res.status, data.decode(errors="replace")[:300], res.getheader("Retry-After"), time.perf_counter() - t
    except (ConnectionError, http.client.HTTPException, OSError) as e:
        return "dropped", str(e)[:200], None, time.perf_counter() - t
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["pdf-images", "pdf-page", "zip", "frontmatter", "signin"])
    ap.add_argument("--quire", default=QUIRE)
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--shape", default="paragraphs")
    ap.add_argument("--page-bytes", type=int, default=800_000)
    ap.add_argument("--zip-kind", default="assets", choices=["assets", "linked", "docs"])
    ap.add_argument("--images", type=int, default=3)
    ap.add_argument("--image-side", type=int, default=20000, help="pixels of each square PNG's side")
    ap.add_argument("--zip-entries", type=int, default=240, help="files of 2 MB in the zip")
    ap.add_argument("--settle", type=float, default=30)
    ap.add_argument("--string-kib", type=int, default=1024, help="frontmatter: the anchored string")
    ap.add_argument("--aliases", type=int, default=3000, help="frontmatter: aliases repeating it")
    ap.add_argument("--database-url")
    ap.add_argument("--mem-limit-mb", type=int)
    ap.add_argument("--extra", default="", help="more `quire serve` flags, space-separated")
    ap.add_argument("--wrap", default="", help="a command the server runs under (a profiler), space-separated")
    args = ap.parse_args()

    data = tempfile.mkdtemp(prefix="quire-bench-hostile-")
    port = free_port()
    env = dict(os.environ, QUIRE_LOG="warn")
    storage = ["--data-dir", data] + (["--database-url", args.database_url] if args.database_url else [])
    token = subprocess.run([args.quire, "admin", "create-token", "--email", "bench@example.com"] + storage,
                           capture_output=True, text=True, check=True, env=env).stdout.strip()
    cmd = [args.quire, "serve", "--bind", f"127.0.0.1:{port}", "--fetch-allow", "127.0.0.1/32",
           "--rate-limit-token", "0", "--rate-limit-address", "0"] + storage + args.extra.split()
    if args.case == "signin":
        cmd.append("--trust-forwarded-for")
    if args.wrap:
        cmd = args.wrap.split() + cmd
    if args.mem_limit_mb:
        cmd = ["prlimit", f"--as={args.mem_limit_mb * 1024 * 1024}", "--"] + cmd
    log = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen(cmd, env=env, stderr=log)
    pid = server.pid
    samples = []
    sampling = True

    def sample():
        while sampling and server.poll() is None:
            samples.append(status_of(pid, "VmRSS"))
            time.sleep(0.05)

    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/healthz")
        org = request("POST", f"{base}/v1/orgs", token, {"title": "Bench"})["id"]
        spaces = [request("POST", f"{base}/v1/orgs/{org}/spaces", token, {"title": f"Bench {i}"})["id"]
                  for i in range(max(1, args.clients))]
        space = spaces[0]
        cr = request("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "hostile"})["id"]
        content = f"{base}/v1/spaces/{space}/change-requests/{cr}/content?compat=false"
        results = []
        label = args.case
        if args.case == "pdf-images":
            import base64
            ids = []
            for n in range(args.images):
                # Each image differs, so that none is decoded once for several.
                png = png_rgba(args.image_side, args.image_side, n)
                made = request("POST", content, token, {"changes": [{"operation": "insert_files", "files": [
                    {"name": f"bomb-{n}.png", "base64": base64.b64encode(png).decode()}]}]})
                ids.append(made["insertedFiles"][0]["id"])
            md = "# Images\n\n" + "".join(f"![bomb {n}](/files/{i})\n\n" for n, i in enumerate(ids))
            request("POST", content, token, {"changes": [{"operation": "insert_page", "title": "Images", "document": {"markdown": md}}]})
            label += f" ({args.images} of {args.image_side} x {args.image_side}, {len(png)} bytes each)"
        elif args.case == "pdf-page":
            md = page_markdown(args.shape, args.page_bytes)
            request("POST", content, token, {"changes": [{"operation": "insert_page", "title": "Large", "document": {"markdown": md}}]})
            label += f" ({args.shape}, {len(md)} bytes)"
        if args.case.startswith("pdf"):
            request("POST", f"{base}/v1/spaces/{space}/change-requests/{cr}/merge", token, {})
            idle = status_of(pid, "VmRSS")
            threading.Thread(target=sample, daemon=True).start()
            results.append(call(port, "GET", f"/v1/spaces/{space}/pdf", token))
        elif args.case == "frontmatter":
            md = ("---\ndescription: &s " + "x" * (args.string_kib * 1024) + "\nlist: ["
                  + ", ".join(["*s"] * args.aliases) + "]\n---\n\n# Bomb\n\nBody.\n")
            expanded = args.string_kib * 1024 * args.aliases
            label += f" ({len(md)} bytes, {expanded} once expanded, {args.clients} at once)"
            idle = status_of(pid, "VmRSS")
            threading.Thread(target=sample, daemon=True).start()
            lock = threading.Lock()

            def one(s):
                c = request("POST", f"{base}/v1/spaces/{s}/change-requests", token, {"subject": "bomb"})["id"]
                r = call(port, "POST", f"/v1/spaces/{s}/change-requests/{c}/content?compat=false", token,
                         {"changes": [{"operation": "insert_page", "title": "Bomb", "document": {"markdown": md}}]})
                with lock:
                    results.append(r)

            threads = [threading.Thread(target=one, args=(s,)) for s in spaces[:args.clients]]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        elif args.case == "signin":
            from urllib.parse import urlencode
            label += f" ({args.clients} at once, each from its own address)"
            idle = status_of(pid, "VmRSS")
            threading.Thread(target=sample, daemon=True).start()
            lock = threading.Lock()

            def one(n):
                form = urlencode({"email": f"nobody{n}@example.com", "password": f"guess number {n}"})
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                t = time.perf_counter()
                try:
                    conn.request("POST", "/signin", body=form, headers={
                        "Content-Type": "application/x-www-form-urlencoded", "Origin": base,
                        "X-Forwarded-For": f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"})
                    res = conn.getresponse()
                    res.read()
                    r = (res.status, "", res.getheader("Retry-After"), time.perf_counter() - t)
                except (ConnectionError, http.client.HTTPException, OSError) as e:
                    r = ("dropped", str(e)[:200], None, time.perf_counter() - t)
                finally:
                    conn.close()
                with lock:
                    results.append(r)

            threads = [threading.Thread(target=one, args=(n,)) for n in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            payload = bomb_zip(args.zip_kind, args.zip_entries)
            Serve.payload = payload
            httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Serve)
            threading.Thread(target=httpd.serve_forever, daemon=True).start()
            url = f"http://127.0.0.1:{httpd.server_address[1]}/bomb.zip"
            expanded = sum(i.file_size for i in zipfile.ZipFile(io.BytesIO(payload)).infolist())
            label += f" ({args.zip_kind}: {len(payload)} bytes expanding to {expanded}, {args.clients} at once)"
            idle = status_of(pid, "VmRSS")
            threading.Thread(target=sample, daemon=True).start()
            lock = threading.Lock()

            def one(s):
                r = call(port, "POST", f"/v1/spaces/{s}/content/import", token, {"url": url, "source": "zip"})
                with lock:
                    results.append(r)

            threads = [threading.Thread(target=one, args=(s,)) for s in spaces[:args.clients]]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        peak = status_of(pid, "VmHWM")
        # The RSS left once the work is done, at a few moments after (blocking threads of
        # the runtime exit after 10 s idle).
        later, waited = {}, 0.0
        for at in [1, 5, 15, 30, 60]:
            if at > args.settle:
                break
            time.sleep(at - waited)
            waited = at
            later[f"{at}s"] = round(status_of(pid, "VmRSS"), 1)
        after = status_of(pid, "VmRSS")
        sampling = False
        alive = server.poll() is None
        summary = {}
        for status, body, retry, secs in results:
            key = f"{status}" + (f" Retry-After {retry}" if retry else "")
            summary.setdefault(key, {"count": 0, "max_s": 0, "body": body})
            summary[key]["count"] += 1
            summary[key]["max_s"] = round(max(summary[key]["max_s"], secs), 2)
        print(json.dumps({
            "input": label, "idle_rss_mb": round(idle, 1),
            "peak_rss_mb": round(peak, 1) if alive else None,
            "max_sampled_rss_mb": round(max(samples or [float("nan")]), 1),
            "rss_after_mb": round(after, 1) if alive else None, "rss_later_mb": later,
            "server_alive": alive, "answers": summary,
        }, indent=2))
        if not alive:
            log.seek(0)
            print(log.read()[-2000:], file=sys.stderr)
    finally:
        sampling = False
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
