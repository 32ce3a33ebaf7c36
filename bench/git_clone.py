#!/usr/bin/env python3
"""Git benchmark (issue 44): `git clone` of the space of 10,000 pages that
bench/site_pages.py builds (its history: about 200 revisions of one change request, then
its merge), cold (the node makes the repository from the database) and warm; a fetch
after a one-page merge; and the server's peak memory while it serves the clone.

Targets: clone < 10 s cold and < 2 s warm; fetch after a one-page merge < 300 ms; memory
bounded (streamed) while cloning.

Usage: python3 bench/git_clone.py [--pages 10000] [--keep | --reuse DIR]
Needs: a release build (cargo build --release -p quire) and git.
"""
import argparse, os, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIRE = os.environ.get("QUIRE_BIN") or os.path.join(ROOT, "target/release/quire")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from foundation import free_port, wait_ready  # noqa: E402
from site_pages import call, seed  # noqa: E402

EMAIL = "bench@example.com"
GIT_ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_TERMINAL_PROMPT="0")


def rss_kib(pid, key="VmHWM"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def git(args, cwd):
    t0 = time.perf_counter()
    out = subprocess.run(["git"] + args, cwd=cwd, env=GIT_ENV, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {out.stderr}")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=10000)
    ap.add_argument("--profile", help="record one step with perf into this file")
    ap.add_argument("--profile-step", choices=("clone", "fetch", "push"), default="clone",
                    help="the step --profile records: the cold clone (default), the fetch or the push")
    ap.add_argument("--keep", action="store_true", help="keep the data folder and say where")
    ap.add_argument("--reuse", metavar="DIR",
                    help="a data folder kept by --keep: no seeding, its repositories removed first "
                         "(the cold clone then measures making the commits alone); implies --keep")
    args = ap.parse_args()
    if args.reuse:
        data = args.reuse
        args.keep = True
        shutil.rmtree(os.path.join(data, "git"), ignore_errors=True)
    else:
        data = tempfile.mkdtemp(prefix="quire-git-")
    work = tempfile.mkdtemp(prefix="quire-git-clones-")
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
        if not args.reuse:
            t0 = time.time()
            seed(base, token, args.pages)
            print(f"seeded {args.pages} pages in {time.time() - t0:.0f} s", flush=True)
        org = call("GET", f"{base}/v1/orgs", token)["items"][0]["id"]
        space = call("GET", f"{base}/v1/orgs/{org}/spaces", token)["items"][0]["id"]
        url = f"http://git:{token}@127.0.0.1:{port}/git/{space}.git"
        before = rss_kib(server.pid, "VmRSS")
        def recording(step):
            """perf recording the server while `step` runs, when --profile asks for it."""
            if not args.profile or args.profile_step != step:
                return None
            perf = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-p", str(server.pid), "-o",
                                     args.profile], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            time.sleep(1)
            return perf

        def stop(perf):
            if perf:
                perf.send_signal(2)
                perf.wait()

        profile = recording("clone")
        cold = git(["clone", "-q", "--bare", url, "cold.git"], work)
        git(["clone", "-q", url, "cold"], work)
        stop(profile)
        files = int(subprocess.run(["git", "ls-files"], cwd=os.path.join(work, "cold"), env=GIT_ENV,
                                   capture_output=True, text=True, check=True).stdout.count("\n"))
        commits = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=os.path.join(work, "cold"),
                                 env=GIT_ENV, capture_output=True, text=True, check=True).stdout.strip()
        print(f"clone --bare, cold: {cold:.2f} s ({files} files, {commits} commits)", flush=True)
        warm = min(git(["clone", "-q", url, f"warm{i}"], work) for i in range(3))
        print(f"clone, warm (checkout of every file included): {warm:.2f} s", flush=True)
        bare = min(git(["clone", "-q", "--bare", url, f"bare{i}"], work) for i in range(3))
        print(f"clone --bare (no checkout), warm: {bare:.2f} s", flush=True)
        shallow = git(["clone", "-q", "--depth", "1", url, "shallow"], work)
        print(f"clone --depth 1, warm: {shallow:.2f} s", flush=True)
        print(f"server memory: {before // 1024} MiB before the clones, peak {rss_kib(server.pid) // 1024} MiB",
              flush=True)

        # A one-page merge, then a fetch.
        page = call("GET", f"{base}/v1/spaces/{space}/content/pages", token)["pages"][0]["id"]
        cr = call("POST", f"{base}/v1/spaces/{space}/change-requests", token, {"subject": "One page"})
        call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr['id']}/content", token,
             {"changes": [{"operation": "update_page", "page": page,
                           "document": {"markdown": "Edited.\n"}}]})
        call("POST", f"{base}/v1/spaces/{space}/change-requests/{cr['id']}/merge", token)
        profile = recording("fetch")
        fetch = git(["fetch", "-q"], os.path.join(work, "cold"))
        stop(profile)
        again = git(["fetch", "-q"], os.path.join(work, "warm0"))
        print(f"fetch after a one-page merge: {fetch * 1000:.0f} ms (first), {again * 1000:.0f} ms (next clone)",
              flush=True)

        # Small requests in a row: each starts git children on the server (their start-up
        # is the cost that shows).
        def median(xs):
            return sorted(xs)[len(xs) // 2]
        listed = median([git(["ls-remote", url], work) for _ in range(20)])
        idle = median([git(["fetch", "-q"], os.path.join(work, "warm0")) for _ in range(20)])
        print(f"20 in a row, median: ls-remote {listed * 1000:.0f} ms, fetch with nothing new "
              f"{idle * 1000:.0f} ms", flush=True)

        # A one-page push to a new branch: answered once its change request exists.
        cold = os.path.join(work, "cold")
        git(["pull", "-q", "--ff-only"], cold)
        with open(os.path.join(cold, "README.md"), "a") as f:
            f.write("\nOne more line.\n")
        git(["-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qam", "One page"], cold)
        profile = recording("push")
        pushed = git(["push", "-q", "origin", f"HEAD:refs/heads/one-page-{int(time.time())}"], cold)
        stop(profile)
        crs = call("GET", f"{base}/v1/spaces/{space}/change-requests", token)["items"]
        assert any(c["subject"] == "One page" for c in crs), crs
        print(f"one-page push to a new branch (change request opened): {pushed * 1000:.0f} ms", flush=True)
    finally:
        server.terminate()
        server.wait()
        if args.keep:
            print(f"data kept in {data}", flush=True)
        else:
            shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
