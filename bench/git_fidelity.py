#!/usr/bin/env python3
"""Git fidelity: a Git Sync repository pushed to a new space comes back as pushed, and an
edit through the API changes only the file of the page it edited.

For each repository folder given: a new space is cloned, the folder's files copied in and
pushed to main as one commit; then a fresh clone is compared with what was pushed (files
rewritten, deleted, added; whether main is the pushed commit), the push timed and the
server's peak memory read. Then one page is edited through the API (a paragraph added) and
a fresh clone compared again: every other file must be as pushed.

Usage: python3 bench/git_fidelity.py [--database-url URL] FOLDER [FOLDER...]
  FOLDER: a checkout's content folder, e.g. a clone of GitbookIO/public-docs' `documentation/`.
Needs: a quire binary (target/release or target/debug, or QUIRE_BIN) and git.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from git_crash import Node, call, git, peak_kib  # noqa: E402


def files_of(root):
    """Every file under `root` (not `.git`): path -> bytes."""
    out = {}
    for base, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for n in names:
            p = os.path.join(base, n)
            if os.path.islink(p):
                continue
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def compare(pushed, got):
    rewritten = sorted(p for p in pushed if p in got and got[p] != pushed[p])
    deleted = sorted(p for p in pushed if p not in got)
    added = sorted(p for p in got if p not in pushed)
    return rewritten, deleted, added


def clone(node, token, space, into):
    ok, said = git(["clone", "-q", f"http://git:{token}@127.0.0.1:{node.port}/git/{space}.git", into],
                   cwd=os.path.dirname(into))
    if not ok:
        sys.exit(said)


def run(node, token, org, folder, tmp, name):
    space = call("POST", f"{node.base}/v1/orgs/{org}/spaces", token, {"title": name})["id"]
    work = os.path.join(tmp, f"{name}-push")
    clone(node, token, space, work)
    for entry in os.listdir(work):
        if entry != ".git":
            p = os.path.join(work, entry)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    shutil.copytree(folder, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
    git(["add", "-A"], work)
    git(["commit", "-qm", "Git Sync repository"], work)
    _, pushed_commit = git(["rev-parse", "HEAD"], work)
    pushed = files_of(work)
    start = time.perf_counter()
    ok, said = git(["push", "-q", "origin", "HEAD:main"], work, timeout=600)
    took = time.perf_counter() - start
    if not ok:
        print(f"{name}: push refused: {said}")
        return None
    back = os.path.join(tmp, f"{name}-back")
    clone(node, token, space, back)
    _, head = git(["rev-parse", "HEAD"], back)
    rewritten, deleted, added = compare(pushed, files_of(back))
    md = [p for p in pushed if p.endswith(".md")]
    row = {
        "repository": name, "files": len(pushed), "markdown": len(md),
        "megabytes": round(sum(len(b) for b in pushed.values()) / 1e6, 1),
        "push_s": round(took, 2), "main_is_pushed": head.strip() == pushed_commit.strip(),
        "rewritten": len(rewritten), "deleted": len(deleted), "added": len(added),
    }
    for label, paths in (("rewritten", rewritten), ("deleted", deleted), ("added", added)):
        for p in paths[:5]:
            print(f"  {name}: {label} {p}")

    # One page edited through the API: only its file may change.
    pages = call("GET", f"{node.base}/v1/spaces/{space}/content", token)["pages"]
    stack, target = list(pages), None
    while stack and target is None:
        p = stack.pop(0)
        if p.get("type") == "document" and p.get("path") and "git" in p:
            target = p
        stack.extend(p.get("pages", []))
    if target:
        cr = call("POST", f"{node.base}/v1/spaces/{space}/change-requests", token,
                  {"subject": "One edit"})["id"]
        page = call("GET", f"{node.base}/v1/spaces/{space}/change-requests/{cr}/content/page/"
                    f"{target['id']}?format=markdown", token)
        call("POST", f"{node.base}/v1/spaces/{space}/change-requests/{cr}/content?compat=false",
             token, {"changes": [{"operation": "update_page", "page": target["id"],
                                  "document": {"markdown": page["markdown"].rstrip("\n")
                                               + "\n\nOne more paragraph.\n"}}]})
        call("POST", f"{node.base}/v1/spaces/{space}/change-requests/{cr}/merge", token, {})
        edited = os.path.join(tmp, f"{name}-edited")
        clone(node, token, space, edited)
        r2, d2, a2 = compare(pushed, files_of(edited))
        own = target["git"]["path"]
        row["edit_page"] = own
        after = files_of(edited)
        if own in pushed and own in after:
            import difflib
            diff = difflib.unified_diff(pushed[own].decode(errors="replace").splitlines(),
                                        after[own].decode(errors="replace").splitlines(), lineterm="", n=0)
            changed = [l for l in diff if l[:1] in "+-" and not l.startswith(("+++", "---"))]
            row["edit_lines_changed"] = len(changed)
            for l in changed[:6]:
                print(f"  {name}: edited page: {l[:100]}")
        row["edit_rewritten_others"] = len([p for p in r2 if p != own])
        row["edit_deleted"] = len(d2)
        row["edit_added"] = len(a2)
        for p in [p for p in r2 if p != own][:5] + d2[:5] + a2[:5]:
            print(f"  {name}: after the edit, also changed {p}")
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--database-url")
    ap.add_argument("folders", nargs="+")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="quire-fidelity-")
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    node = Node(data, args.database_url, ["--max-import-bytes", str(1 << 30)])
    try:
        node.start()
        token = node.token()
        org = call("POST", f"{node.base}/v1/orgs", token, {"title": "Fidelity"})["id"]
        rows = []
        for i, folder in enumerate(args.folders):
            name = f"{i}-{os.path.basename(os.path.abspath(folder))}"
            row = run(node, token, org, folder, tmp, name)
            if row:
                rows.append(row)
        peak = peak_kib(node.proc.pid) / 1024
        for row in rows:
            print(json.dumps(row))
        print(json.dumps({"peak_rss_mb": round(peak, 1)}))
    finally:
        node.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
