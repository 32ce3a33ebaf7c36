#!/usr/bin/env python3
"""Search relevance (issue 69): Quire's search against tantivy's BM25 over the same pages,
on judged queries, in one run.

For each corpus (a Git Sync repository of real documentation, at a recorded commit): its
content folder is pushed with git to a new space; the same markdown files are indexed by
tantivy (title x5, headings x2, body; BM25). Two query sets:
  - known-item: every page's title, the page (any page of that title) expected first;
  - natural: the questions of `bench/search/<corpus>.json`, written by reading the pages,
    each with the pages that answer it.
Reported per corpus and set: top-1, top-3 and MRR (first relevant page among the first 20)
for Quire (`searchSpaceContent`) and tantivy, and each one's query latency (p50, p95):
Quire's over HTTP on loopback, tantivy's in process (its Python binding, no HTTP).

Usage: python3 bench/search_relevance.py [--corpus gitbook-docs] [--database-url URL]
                                        [--misses N] [--json FILE]
Needs: a quire binary (target/release, else target/debug, or QUIRE_BIN), git, and the
Python package tantivy (installed into target/search-venv on first use). The corpora are read
from the mirrors in QUIRE_CORPORA (default /work/.mirror: `<owner>+<name>/repo`), else
cloned from GitHub.
"""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tempfile, time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# Relaunched inside a venv that has tantivy, made on first use.
VENV = os.path.join(ROOT, "target", "search-venv")
TANTIVY = "tantivy==0.27.0"
if os.environ.get("QUIRE_SEARCH_VENV") != "1":
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", TANTIVY], check=True)
    os.execve(python, [python] + sys.argv, dict(os.environ, QUIRE_SEARCH_VENV="1"))

import tantivy  # noqa: E402
from git_crash import Node, call, git  # noqa: E402

DEPTH = 20
FRONTMATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


def corpus_folder(spec, tmp):
    """The corpus's content folder at its recorded commit, extracted under `tmp`."""
    owner_name = spec["corpus"]
    mirrors = os.environ.get("QUIRE_CORPORA", "/work/.mirror")
    repo = os.path.join(mirrors, owner_name.replace("/", "+"), "repo")
    if not os.path.isdir(repo):
        repo = os.path.join(tmp, "clone")
        ok, said = git(["clone", "-q", "--bare", f"https://github.com/{owner_name}.git", repo], tmp)
        if not ok:
            sys.exit(said)
    out = os.path.join(tmp, "corpus")
    tree = spec["commit"] if spec["root"] in (".", "") else f"{spec['commit']}:{spec['root']}"
    listed = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "-z", tree],
                            capture_output=True, check=True).stdout.split(b"\0")
    # File by file: a mirror may lack its largest blobs (images), which search does not read.
    for entry in filter(None, listed):
        meta, path = entry.split(b"\t", 1)
        mode, kind, oid = meta.split()
        if kind != b"blob" or mode == b"120000":
            continue
        blob = subprocess.run(["git", "-C", repo, "cat-file", "blob", oid], capture_output=True)
        if blob.returncode:
            continue
        dest = os.path.join(out, path.decode())
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(blob.stdout)
    return out


def push(node, token, org, folder, tmp, title):
    """A new space holding `folder`, pushed to main as one commit."""
    space = call("POST", f"{node.base}/v1/orgs/{org}/spaces", token, {"title": title})["id"]
    work = os.path.join(tmp, "push")
    ok, said = git(["clone", "-q", f"http://git:{token}@127.0.0.1:{node.port}/git/{space}.git", work], tmp)
    if not ok:
        sys.exit(said)
    subprocess.run(["cp", "-a", folder + "/.", work], check=True)
    git(["add", "-A"], work)
    git(["commit", "-qm", "Corpus"], work)
    ok, said = git(["push", "-q", "origin", "HEAD:main"], work, timeout=600)
    if not ok:
        sys.exit(f"push refused: {said}")
    return space


def pages_of(node, token, space, folder):
    """Document pages of the space: id -> (pushed file path, title).

    A page's `git.path` is where Quire's own layout would write it, which for a page of a
    pushed tree can differ from the pushed file (a group's README under another folder
    name, a slug without the dots of the file name): such a page is matched to the pushed
    file of the same title, by name first; where several files share the title (a corpus
    holding two copies of a page), to the one whose text holds most of the page's lines."""
    files, titled = {}, {}
    for base, _, names in os.walk(folder):
        for n in names:
            if n.endswith(".md"):
                rel = os.path.relpath(os.path.join(base, n), folder)
                files.setdefault(n, []).append(rel)
                titled.setdefault(title_of(os.path.join(folder, rel)), []).append(rel)

    def closest(page_id, candidates):
        body = call("GET", f"{node.base}/v1/spaces/{space}/content/page/{page_id}"
                           "?format=markdown", token)["markdown"]
        lines = {l.strip() for l in body.splitlines() if len(l.strip()) > 20}

        def held(f):
            with open(os.path.join(folder, f), encoding="utf-8", errors="replace") as fh:
                return len(lines & {l.strip() for l in fh})
        return max(candidates, key=held)
    tree = call("GET", f"{node.base}/v1/spaces/{space}/content", token)["pages"]
    out, stack, unmatched = {}, list(tree), []
    while stack:
        p = stack.pop()
        stack.extend(p.get("pages", []))
        if p.get("type") != "document" or not p.get("git"):
            continue
        path = p["git"]["path"]
        if not os.path.exists(os.path.join(folder, path)):
            same = [f for f in files.get(os.path.basename(path), [])
                    if title_of(os.path.join(folder, f)) == p["title"]]
            same = same or titled.get(p["title"], [])
            if not same:
                unmatched.append(path)
                continue
            path = same[0] if len(same) == 1 else closest(p["id"], same)
        out[p["id"]] = (path, p["title"])
    if unmatched:
        print(f"  {len(unmatched)} pages match no pushed file, e.g. {unmatched[:3]}")
    return out


def title_of(path):
    """A markdown file's title: its frontmatter `title`, else its first `# ` heading."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    m = FRONTMATTER.match(text)
    if m:
        t = re.search(r"^title:\s*(.+)$", m.group(0), re.M)
        if t:
            return t.group(1).strip().strip("'\"")
        text = text[m.end():]
    h = re.search(r"^# (.+)$", text, re.M)
    return h.group(1).strip() if h else None



def tantivy_index(pages, folder):
    """tantivy over the same pages: title, headings (## and deeper), body; BM25."""
    schema = (tantivy.SchemaBuilder()
              .add_text_field("path", stored=True, tokenizer_name="raw")
              .add_text_field("title", tokenizer_name="en_stem")
              .add_text_field("headings", tokenizer_name="en_stem")
              .add_text_field("body", tokenizer_name="en_stem")
              .build())
    index = tantivy.Index(schema)
    writer = index.writer()
    missing = []
    for path, title in pages.values():
        if not os.path.exists(os.path.join(folder, path)):
            missing.append(path)
            continue
        with open(os.path.join(folder, path), encoding="utf-8", errors="replace") as f:
            text = FRONTMATTER.sub("", f.read())
        headings, body = [], []
        for line in text.splitlines():
            m = re.match(r"#{1,6}\s+(.*)", line)
            if m and line.startswith("# "):
                continue  # the title
            (headings if m else body).append(m.group(1) if m else line)
        writer.add_document(tantivy.Document(path=path, title=title, headings="\n".join(headings),
                                             body="\n".join(body)))
    writer.commit()
    index.reload()
    if missing:
        print(f"  {len(missing)} pages name a file that was not pushed, e.g. {missing[:3]}")
    return index


SPECIAL = re.compile(r'[+\-&|!(){}\[\]^"~*?:\\/<>=\'`]')


def tantivy_search(index, q):
    query = index.parse_query(SPECIAL.sub(" ", q) or "*", ["title", "headings", "body"],
                              field_boosts={"title": 5.0, "headings": 2.0})
    searcher = index.searcher()
    hits = searcher.search(query, DEPTH).hits
    return [searcher.doc(addr)["path"][0] for _, addr in hits]


def quire_search(node, token, space, ids, q, took):
    url = f"{node.base}/v1/spaces/{space}/search?limit={DEPTH}&query={urllib.parse.quote(q)}"
    start = time.perf_counter()
    got = call("GET", url, token)
    took.append((time.perf_counter() - start) * 1000)
    return [ids[i["id"]][0] for i in got["items"] if i["id"] in ids]


def scores(ranked_lists, relevant_sets):
    top1 = top3 = rr = 0.0
    for ranked, relevant in zip(ranked_lists, relevant_sets):
        rank = next((n for n, p in enumerate(ranked, 1) if p in relevant), None)
        if rank:
            top1 += rank == 1
            top3 += rank <= 3
            rr += 1 / rank
    n = len(relevant_sets) or 1
    return round(top1 / n, 3), round(top3 / n, 3), round(rr / n, 3)


def run(node, token, org, name, misses):
    """Rows for one corpus; its scratch folder is removed afterwards."""
    with open(os.path.join(HERE, "search", f"{name}.json")) as f:
        spec = json.load(f)
    tmp = tempfile.mkdtemp(prefix=f"quire-search-{name}-")
    try:
        return measure(node, token, org, name, misses, spec, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(node, token, org, name, misses, spec, tmp):
    """One corpus measured, its files extracted into the scratch folder `tmp`."""
    folder = corpus_folder(spec, tmp)
    start = time.perf_counter()
    space = push(node, token, org, folder, tmp, name)
    pushed_s = time.perf_counter() - start
    pages = pages_of(node, token, space, folder)
    index = tantivy_index(pages, folder)
    by_title = {}
    for path, title in pages.values():
        by_title.setdefault(title.strip().lower(), set()).add(path)
    sets = {
        "known-item": [(t, ps) for t, ps in sorted(by_title.items()) if t],
        "natural": [(n["q"], set(n["relevant"])) for n in spec["natural"]],
    }
    # Judged paths are relative to the corpus root, as the pushed files are.
    rows = []
    for kind, queries in sets.items():
        took = []
        quire = [quire_search(node, token, space, pages, q, took) for q, _ in queries]
        t_took = []
        tantivy_ranked = []
        for q, _ in queries:
            start = time.perf_counter()
            tantivy_ranked.append(tantivy_search(index, q))
            t_took.append((time.perf_counter() - start) * 1000)
        relevant = [r for _, r in queries]
        rows.append({
            "corpus": name, "set": kind, "queries": len(queries),
            "quire": scores(quire, relevant), "tantivy": scores(tantivy_ranked, relevant),
            "quire_p50_ms": round(statistics.median(took), 1),
            "quire_p95_ms": round(sorted(took)[int(0.95 * (len(took) - 1))], 1),
            "tantivy_p50_ms": round(statistics.median(t_took), 2),
            "tantivy_p95_ms": round(sorted(t_took)[int(0.95 * (len(t_took) - 1))], 2),
        })
        shown = 0
        for (q, r), got in zip(queries, quire):
            if got[:1] and got[0] in r or shown >= misses:
                continue
            shown += 1
            print(f"  {name} {kind} miss: {q!r}: wanted {sorted(r)[:2]}, got {got[:3]}")
    print(f"  {name}: {len(pages)} pages, pushed in {pushed_s:.1f} s")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="append",
                    help="a file of bench/search/ without .json (default: every one)")
    ap.add_argument("--database-url")
    ap.add_argument("--misses", type=int, default=0, help="print up to N misses per set")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args()
    names = args.corpus or sorted(f[:-5] for f in os.listdir(os.path.join(HERE, "search"))
                                  if f.endswith(".json"))
    data = tempfile.mkdtemp(prefix="quire-search-data-")
    node = Node(data, args.database_url, ["--max-import-bytes", str(1 << 30)])
    rows = []
    try:
        node.start()
        token = node.token()
        org = call("POST", f"{node.base}/v1/orgs", token, {"title": "Relevance"})["id"]
        for name in names:
            rows += run(node, token, org, name, args.misses)
    finally:
        node.stop()
        shutil.rmtree(data, ignore_errors=True)
    print("| corpus | queries | set | Quire top-1 / top-3 / MRR | tantivy top-1 / top-3 / MRR "
          "| Quire p50 / p95 | tantivy p50 / p95 |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        q, t = r["quire"], r["tantivy"]
        print(f"| {r['corpus']} | {r['queries']} | {r['set']} | {q[0]} / {q[1]} / {q[2]} "
              f"| {t[0]} / {t[1]} / {t[2]} | {r['quire_p50_ms']} / {r['quire_p95_ms']} ms "
              f"| {r['tantivy_p50_ms']} / {r['tantivy_p95_ms']} ms |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
