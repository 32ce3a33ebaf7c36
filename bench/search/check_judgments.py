#!/usr/bin/env python3
"""Check the search relevance judgments in this directory (stdlib only).

For each judgments file: the schema, 60 unique questions, and that every
relevant path exists at the recorded commit of its corpus mirror
(`git -C <mirror> cat-file -e <commit>:<root>/<path>`).

Usage: python3 bench/search/check_judgments.py [--mirrors DIR]
DIR defaults to /work/.mirror; a corpus "owner/name" is looked up at
DIR/owner+name/repo.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["gitbook-docs.json", "beefree-docs.json"]
EXPECTED = 60
KEYS = {"corpus", "commit", "root", "natural"}
ENTRY_KEYS = {"q", "relevant", "why"}


def git_has(mirror, commit, path):
    r = subprocess.run(
        ["git", "-C", mirror, "cat-file", "-e", f"{commit}:{path}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


def check(path, mirrors):
    errors = []
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if set(doc) != KEYS:
        errors.append(f"top-level keys {sorted(doc)} != {sorted(KEYS)}")
        return errors, {}
    corpus, commit, root = doc["corpus"], doc["commit"], doc["root"]
    if not (isinstance(commit, str) and len(commit) == 40):
        errors.append(f"commit {commit!r} is not a 40-hex id")
    mirror = os.path.join(mirrors, corpus.replace("/", "+"), "repo")
    if not os.path.isdir(mirror):
        errors.append(f"mirror {mirror} not found")
        return errors, {}
    head = subprocess.run(["git", "-C", mirror, "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    if head != commit:
        print(f"  note: mirror HEAD is {head}, judgments recorded at {commit}")
    prefix = "" if root in ("", ".", "./") else root.rstrip("/") + "/"

    entries = doc["natural"]
    seen = set()
    n_rel = 0
    n_multi = 0
    short = 0
    pages = set()
    for i, e in enumerate(entries):
        where = f"natural[{i}]"
        if not isinstance(e, dict) or set(e) != ENTRY_KEYS:
            errors.append(f"{where}: keys {sorted(e) if isinstance(e, dict) else e}")
            continue
        q, rel, why = e["q"], e["relevant"], e["why"]
        if not (isinstance(q, str) and q.strip()):
            errors.append(f"{where}: empty question")
        key = " ".join(q.lower().split())
        if key in seen:
            errors.append(f"{where}: duplicate question {q!r}")
        seen.add(key)
        if len(q.split()) <= 3:
            short += 1
        if not (isinstance(why, str) and why.strip()):
            errors.append(f"{where}: empty why")
        if not (isinstance(rel, list) and rel and all(isinstance(p, str) for p in rel)):
            errors.append(f"{where}: relevant must be a non-empty list of paths")
            continue
        if len(set(rel)) != len(rel):
            errors.append(f"{where}: repeated path in relevant")
        n_rel += len(rel)
        n_multi += len(rel) > 1
        for p in rel:
            if p.startswith("/") or not p.endswith(".md") or p.endswith("SUMMARY.md"):
                errors.append(f"{where}: suspicious path {p!r}")
            if not git_has(mirror, commit, prefix + p):
                errors.append(f"{where}: {p!r} not found at {commit[:12]}:{prefix}")
            pages.add(p)
    if len(entries) != EXPECTED:
        errors.append(f"{len(entries)} questions, expected {EXPECTED}")
    stats = {"questions": len(entries), "unique": len(seen),
             "short (<=3 words)": short, "relevant paths": n_rel,
             "questions with >1 relevant": n_multi, "distinct pages": len(pages)}
    return errors, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirrors", default="/work/.mirror")
    args = ap.parse_args()
    failed = False
    for name in FILES:
        path = os.path.join(HERE, name)
        print(name)
        errors, stats = check(path, args.mirrors)
        for k, v in stats.items():
            print(f"  {k}: {v}")
        for e in errors:
            print(f"  ERROR {e}")
        failed |= bool(errors)
    print("FAILED" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
