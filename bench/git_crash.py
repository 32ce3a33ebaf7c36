#!/usr/bin/env python3
"""Git crash soak (issue 66): a node killed with SIGKILL at random points of git activity
(pushes to main and to branches, merges through the API, clones) and started again; after
each restart every space must clone afresh and pass `git fsck`, and the node's own copy of
each repository too. Bounded: `--cycles` kills, then it stops itself.

With `--pushes N --push-mb M` it first measures the node's peak memory (VmHWM) while N
editors push M MB each at once, each to a space of their own.

Targets: no space unclonable after any restart; peak memory <= 512 MB under 12 pushes of
60 MB.

Usage: python3 bench/git_crash.py [--cycles 50] [--spaces 3] [--seed 1]
                                  [--database-url postgres://...] [--pushes 12 --push-mb 60]
Needs: a build of `quire` (target/release/quire, else target/debug/quire; or QUIRE_BIN) and
git.
"""
import argparse, json, os, random, shutil, signal, subprocess, sys, tempfile, threading, time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready  # noqa: E402


def quire_bin():
    if os.environ.get("QUIRE_BIN"):
        return os.environ["QUIRE_BIN"]
    for profile in ("release", "debug"):
        path = os.path.join(ROOT, "target", profile, "quire")
        if os.path.exists(path):
            return path
    sys.exit("no quire binary: cargo build --release -p quire")


QUIRE = quire_bin()
EMAIL = "crash@example.com"
GIT_ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
               GIT_TERMINAL_PROMPT="0", GIT_AUTHOR_NAME="Soak", GIT_AUTHOR_EMAIL="soak@example.com",
               GIT_COMMITTER_NAME="Soak", GIT_COMMITTER_EMAIL="soak@example.com")


def call(method, url, token, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, method=method, data=data, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def git(args, cwd, timeout=300):
    """Runs git; (ok, output)."""
    try:
        out = subprocess.run(["git"] + args, cwd=cwd, env=GIT_ENV, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"git {' '.join(args)}: timed out"
    return out.returncode == 0, out.stdout + out.stderr


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class Node:
    """The `quire serve` process on one data folder (and database), started again at will."""

    def __init__(self, data, database_url, extra=()):
        self.data, self.database_url, self.extra = data, database_url, list(extra)
        self.port = free_port()
        self.proc = None

    def storage(self):
        args = ["--data-dir", self.data]
        if self.database_url:
            args += ["--database-url", self.database_url]
        return args

    def start(self):
        env = dict(os.environ, QUIRE_LOG="warn")
        self.proc = subprocess.Popen(
            [QUIRE, "serve", "--bind", f"127.0.0.1:{self.port}"] + self.storage() + self.extra,
            env=env, stderr=open(os.path.join(self.data, "server.log"), "ab"))
        wait_ready(f"{self.base}/healthz", deadline=120)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def token(self):
        return subprocess.run([QUIRE, "admin", "create-token", "--email", EMAIL] + self.storage(),
                              capture_output=True, text=True, check=True,
                              env=dict(os.environ, QUIRE_LOG="warn")).stdout.strip()


def new_space(node, token, org, title):
    space = call("POST", f"{node.base}/v1/orgs/{org}/spaces", token, {"title": title})["id"]
    cr = call("POST", f"{node.base}/v1/spaces/{space}/change-requests", token, {"subject": "Start"})["id"]
    call("POST", f"{node.base}/v1/spaces/{space}/change-requests/{cr}/content?compat=false", token,
         {"changes": [{"operation": "insert_page", "title": "Home", "document": {"markdown": "Start.\n"}}]})
    call("POST", f"{node.base}/v1/spaces/{space}/change-requests/{cr}/merge", token, {})
    return space


def repo_url(node, token, space):
    return f"http://git:{token}@127.0.0.1:{node.port}/git/{space}.git"


def api_merge(node, token, space, n):
    """A change request adding a page, merged (ignores a node that died meanwhile)."""
    try:
        cr = call("POST", f"{node.base}/v1/spaces/{space}/change-requests", token,
                  {"subject": f"Web {n}"})["id"]
        call("POST", f"{node.base}/v1/spaces/{space}/change-requests/{cr}/content?compat=false", token,
             {"changes": [{"operation": "insert_page", "title": f"Web {n}",
                           "document": {"markdown": f"From the web, {n}.\n"}}]})
        call("POST", f"{node.base}/v1/spaces/{space}/change-requests/{cr}/merge", token, {})
    except Exception:
        pass


def pushes(node, token, space, work, n, rng):
    """Commits pushed to main and to a branch of their own, its change request merged."""
    url = repo_url(node, token, space)
    ok, _ = git(["pull", "-q", "--no-rebase", "-X", "theirs", url, "main"], work)
    if not ok:
        git(["fetch", "-q", url, "main"], work)
        git(["reset", "-q", "--hard", "FETCH_HEAD"], work)
    for i in range(rng.randint(1, 3)):
        with open(os.path.join(work, f"git-{n}-{i}.md"), "w") as f:
            f.write(f"# Git {n} {i}\n\nPushed {rng.random()}.\n")
        git(["add", "-A"], work)
        git(["commit", "-qm", f"Git {n} {i}"], work)
        if rng.random() < 0.5:
            git(["push", "-q", url, "HEAD:main"], work)
        else:
            ok, said = git(["push", url, f"HEAD:refs/heads/b{n}-{i}"], work)
            number = None
            for line in said.splitlines():
                if "Change request #" in line:
                    number = line.split("#", 1)[1].split()[0]
            if number:
                try:
                    call("POST", f"{node.base}/v1/spaces/{space}/change-requests/{number}/merge", token, {})
                except Exception:
                    pass


def clone_and_check(node, token, space, into):
    """A fresh clone and `git fsck` of it and of the node's copy; None, or what failed."""
    shutil.rmtree(into, ignore_errors=True)
    ok, said = git(["clone", "-q", repo_url(node, token, space), into], os.path.dirname(into))
    if not ok:
        return f"clone: {said.strip()[-400:]}"
    ok, said = git(["fsck", "--strict", "--no-dangling"], into)
    if not ok:
        return f"fsck of the clone: {said.strip()[-400:]}"
    ok, said = git(["--git-dir", os.path.join(node.data, "git", f"{space}.git"), "fsck", "--no-dangling"],
                   os.path.dirname(into))
    if not ok:
        return f"fsck of the node's copy: {said.strip()[-400:]}"
    return None


def push_memory(node, token, org, count, mb, tmp):
    """The node's peak memory while `count` editors push `mb` MB each at once."""
    spaces = [new_space(node, token, org, f"Big {i}") for i in range(count)]
    works = []
    for i, space in enumerate(spaces):
        work = os.path.join(tmp, f"big-{i}")
        ok, said = git(["clone", "-q", repo_url(node, token, space), work], tmp)
        assert ok, said
        os.makedirs(os.path.join(work, ".gitbook", "assets"), exist_ok=True)
        with open(os.path.join(work, ".gitbook", "assets", "big.bin"), "wb") as f:
            f.write(os.urandom(mb << 20))
        with open(os.path.join(work, "README.md"), "a") as f:
            f.write("\n![big](.gitbook/assets/big.bin)\n")
        git(["add", "-A"], work)
        git(["commit", "-qm", "Big file"], work)
        works.append((space, work))
    before = peak_kib(node.proc.pid)
    results = [None] * count

    def one(i, space, work):
        results[i] = git(["push", repo_url(node, token, space), "HEAD:refs/heads/big"], work, timeout=600)

    threads = [threading.Thread(target=one, args=(i, s, w)) for i, (s, w) in enumerate(works)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - t0
    accepted = sum(1 for r in results if r and r[0])
    refused = [r[1].strip().splitlines()[-1] for r in results if r and not r[0]]
    return before, peak_kib(node.proc.pid), accepted, refused, took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=50)
    ap.add_argument("--spaces", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--database-url", help="a PostgreSQL URL (default: the data folder's SQLite)")
    ap.add_argument("--pushes", type=int, default=0, help="editors pushing at once (memory step)")
    ap.add_argument("--push-mb", type=int, default=60)
    ap.add_argument("--keep", action="store_true", help="keep the data folder and say where")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    data = tempfile.mkdtemp(prefix="quire-crash-")
    tmp = tempfile.mkdtemp(prefix="quire-crash-clones-")
    node = Node(data, args.database_url,
                ["--max-import-bytes", str((args.push_mb + 8) << 20)] if args.pushes else [])
    node.start()
    try:
        token = node.token()
        org = call("POST", f"{node.base}/v1/orgs", token, {"title": "Crash"})["id"]
        if args.pushes:
            before, peak, accepted, refused, took = push_memory(node, token, org, args.pushes,
                                                                args.push_mb, tmp)
            print(f"{args.pushes} pushes of {args.push_mb} MB at once: {accepted} accepted in "
                  f"{took:.1f} s, peak memory {peak / 1024:.0f} MB (before: {before / 1024:.0f} MB)",
                  flush=True)
            for r in refused:
                print(f"  refused: {r}")
        spaces = [new_space(node, token, org, f"Docs {i}") for i in range(args.spaces)]
        works = {}
        for space in spaces:
            work = os.path.join(tmp, f"work-{space}")
            ok, said = git(["clone", "-q", repo_url(node, token, space), work], tmp)
            assert ok, said
            works[space] = work
        broken, kills, n = [], 0, 0
        for cycle in range(args.cycles):
            threads = []
            for space in spaces:
                n += 1
                threads.append(threading.Thread(target=pushes, args=(node, token, space, works[space], n,
                                                                       random.Random(rng.random()))))
                threads.append(threading.Thread(target=api_merge, args=(node, token, space, n)))
                threads.append(threading.Thread(target=git, args=(
                    ["clone", "-q", repo_url(node, token, space), os.path.join(tmp, f"c-{n}")], tmp)))
            for t in threads:
                t.start()
            time.sleep(rng.uniform(0.05, 2.0))
            node.kill()
            kills += 1
            for t in threads:
                t.join()
            node.start()
            for space in spaces:
                why = clone_and_check(node, token, space, os.path.join(tmp, "fresh"))
                if why:
                    broken.append((cycle, space, why))
                    print(f"cycle {cycle}: space {space} is broken: {why}", flush=True)
            for d in os.listdir(tmp):
                if d.startswith("c-"):
                    shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)
            print(f"cycle {cycle + 1}/{args.cycles}: killed, restarted, {len(spaces)} spaces checked",
                  flush=True)
        unclonable = len({(c, s) for c, s, _ in broken})
        with open(os.path.join(data, "server.log"), errors="replace") as f:
            log = f.read()
        remade = log.count("repository was damaged")
        print(f"\n{kills} kills with SIGKILL, {len(spaces)} spaces checked after each: "
              f"{unclonable} unclonable or unsound (space, cycle) pairs out of {kills * len(spaces)}; "
              f"{n} rounds of pushes, merges and clones; {remade} damaged copies made again")
        return 1 if broken else 0
    finally:
        node.stop()
        if args.keep:
            print(f"data kept in {data}")
        else:
            shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
