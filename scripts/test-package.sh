#!/usr/bin/env bash
# Tests what scripts/package.sh ships, as root on Debian:
#  - the static binary: statically linked, starts and answers /healthz with no environment;
#  - the container image: its configuration (user, volume, port, health check, OCI labels),
#    then its files unpacked and run in a chroot, in a network namespace of its own, as the
#    image runs (entrypoint, command, environment and user from its configuration): it serves,
#    passes its own health check, `quire admin create-token` works, the official client reads
#    /v1/user, git clones and pushes a space, and a PostgreSQL database named through DNS is
#    reached (the image holds no resolver library: the static glibc resolves);
#  - the Debian package: lintian without errors, its contents and maintainer scripts, the
#    systemd unit (`systemd-analyze verify`, and `security` at most 2.0), installed with
#    `dpkg -i` into a scratch root;
#  - deploy/: the compose file (docker-compose config) and the Kubernetes manifest (schemas).
# It installs its tools first (tools.sh: --no-install, CI=true), and builds what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

# The part that runs inside the network namespace (see below).
if [ "${1:-}" = __in-netns ]; then
  shift
  root=$1 work=$2
  ip link set lo up
  mapfile -t image_env <"$work/image.env"
  mapfile -t image_cmd <"$work/image.cmd"
  # As the image runs: its user, environment, entrypoint and command.
  chroot=$(command -v chroot)
  in_image() { env -i "${image_env[@]}" "$chroot" --userspec=10001:10001 "$root" "$@"; }

  # A DNS server for the chroot's resolv.conf: every A query answers 127.0.0.1.
  python3 - <<'EOF' &
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
while True:
    q, peer = s.recvfrom(512)
    end = 12
    while q[end]:
        end += q[end] + 1
    qtype = struct.unpack(">H", q[end + 1:end + 3])[0]
    answer = b""
    if qtype == 1:
        answer = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton("127.0.0.1")
    head = q[:2] + struct.pack(">HHHHH", 0x8180, 1, 1 if answer else 0, 0, 0)
    s.sendto(head + q[12:end + 5] + answer, peer)
EOF
  dns=$!
  pg_dir=$(mktemp -d /tmp/quire-pkg-pg.XXXXXX)
  server=""
  trap 'kill $dns $server 2>/dev/null; scripts/pg-cluster.sh stop "$pg_dir" >/dev/null 2>&1 || true; rm -rf "$pg_dir"' EXIT

  started=$(date +%s%N)
  # Not through in_image: a function in the background is a subshell, which SIGTERM would stop
  # instead of the server.
  env -i "${image_env[@]}" "$chroot" --userspec=10001:10001 "$root" "${image_cmd[@]}" >"$work/serve.log" 2>&1 &
  server=$!
  # The image's own health check, until it passes.
  for _ in $(seq 100); do
    in_image /usr/bin/quire health 2>/dev/null && break
    sleep 0.1
  done
  in_image /usr/bin/quire health || {
    cat "$work/serve.log"
    echo "FAIL: the image's health check does not pass" >&2
    exit 1
  }
  echo "image: serving on 0.0.0.0:8080, healthy after $((($(date +%s%N) - started) / 1000000)) ms"
  token=$(in_image /usr/bin/quire admin create-token --email alice@example.com --name Alice)
  [ -n "$token" ] || { echo "FAIL: no token" >&2; exit 1; }
  echo "image: quire admin create-token made a token"
  # The official client, against the image's server.
  space=$(cd conformance && TOKEN=$token node --input-type=module -e '
    import { GitBookAPI } from "@gitbook/api";
    const endpoint = "http://127.0.0.1:8080";
    const api = new GitBookAPI({ authToken: process.env.TOKEN, endpoint });
    const { data: me } = await api.user.getAuthenticatedUser();
    if (me.email !== "alice@example.com") throw new Error(`/v1/user: ${JSON.stringify(me)}`);
    const post = async (path, body) => {
      const res = await fetch(endpoint + path, { method: "POST", body: JSON.stringify(body),
        headers: { authorization: `Bearer ${process.env.TOKEN}`, "content-type": "application/json" } });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    const org = await post("/v1/orgs", { title: "Acme" });
    const space = await post(`/v1/orgs/${org.id}/spaces`, { title: "Docs" });
    console.log(space.id);
  ')
  echo "image: the official client read /v1/user"
  # Git access runs the image's git (receive-pack, then upload-pack).
  export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 \
    GIT_AUTHOR_NAME=Alice GIT_AUTHOR_EMAIL=alice@example.com \
    GIT_COMMITTER_NAME=Alice GIT_COMMITTER_EMAIL=alice@example.com
  url="http://git:$token@127.0.0.1:8080/git/$space.git"
  git clone -q "$url" "$work/push" 2>/dev/null
  printf '# Home\n\nFrom git.\n' >"$work/push/README.md"
  printf '# Table of contents\n\n* [Home](README.md)\n' >"$work/push/SUMMARY.md"
  git -C "$work/push" add README.md SUMMARY.md
  git -C "$work/push" commit -q -m "Home"
  git -C "$work/push" push -q origin HEAD:main
  git clone -q "$url" "$work/clone"
  grep -rq 'From git.' "$work/clone" || {
    git -C "$work/clone" log --stat >&2 || true
    echo "FAIL: the clone lacks the pushed page" >&2
    exit 1
  }
  echo "image: git pushed a page to a space and cloned it back"

  # PostgreSQL, named through DNS.
  pg_url=$(scripts/pg-cluster.sh start "$pg_dir")
  dns_url=$(echo "$pg_url" | sed 's#@127\.0\.0\.1:#@db.quire.test:#')
  [ "$dns_url" != "$pg_url" ] || { echo "FAIL: unexpected database URL $pg_url" >&2; exit 1; }
  in_image /usr/bin/quire admin create-token --database-url "$dns_url" --email bob@example.com >/dev/null
  echo "image: reached PostgreSQL at db.quire.test (resolved by DNS)"

  kill -TERM "$server"
  status=0
  wait "$server" || status=$?
  [ "$status" = 0 ] || { tail -n 5 "$work/serve.log"; echo "FAIL: the server stopped with status $status" >&2; exit 1; }
  echo "image: stopped cleanly on SIGTERM"
  exit 0
fi

# shellcheck source=scripts/tools.sh
source scripts/tools.sh
step() {
  echo "-- $1 ($((SECONDS - step_start)) s since the last step)"
  step_start=$SECONDS
}
step_start=$SECONDS

echo "== packaging tools"
need_deb file file "checks that the binary is statically linked" || true
need_deb buildah buildah "builds the container image without a daemon" || true
need_deb help2man help2man "makes the Debian package's man page from --help" || true
need_deb lintian lintian "checks the Debian package" || true
need_deb systemd systemd-analyze "checks the package's systemd unit" || true
need_deb docker-compose docker-compose "validates deploy/compose.yaml (docker-compose config)" || true
need_deb git git "clones and pushes a space through the image's server" || true
present initdb || need_deb postgresql "/usr/lib/postgresql/*/bin/initdb" \
  "the image's binary reaches a PostgreSQL database" || true
need_crate cargo-deb 3.8.0 "${CARGO_HOME:-$HOME/.cargo}/bin/cargo-deb" "builds the Debian package" || true
present npm || note_missing "npm (Node.js 20+): the official client and the Kubernetes schema check"
if [ "$(id -u)" != 0 ]; then note_missing "root: the image test runs a chroot and a network namespace"; fi
if [ ${#missing[@]} -gt 0 ]; then
  fail_if_missing
  echo "NOTICE: the packaging tests are skipped"
  exit 0
fi
step "tools"

work=$(mktemp -d /tmp/quire-pkg.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== static binary"
bash scripts/package.sh static
step "built the static binary"
version=$(awk -F'"' '/^version/ {print $2; exit}' Cargo.toml)
bin=dist/quire-$version-x86_64-linux
file -L "$bin" | grep -q 'static-pie linked' || { file -L "$bin"; echo "FAIL: not static-pie" >&2; exit 1; }
echo "static: static-pie linked, $(du -h "$bin" | cut -f1) stripped"
# Start-up with no environment at all, on a free port.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
started=$(date +%s%N)
env -i "$bin" serve --bind "127.0.0.1:$port" --data-dir "$work/static-data" >"$work/static.log" 2>&1 &
server=$!
for _ in $(seq 100); do "$bin" health --bind "127.0.0.1:$port" 2>/dev/null && break; sleep 0.1; done
"$bin" health --bind "127.0.0.1:$port" || { cat "$work/static.log"; echo "FAIL: the static binary does not serve" >&2; exit 1; }
echo "static: healthy after $((($(date +%s%N) - started) / 1000000)) ms"
kill -TERM "$server"
wait "$server" || { cat "$work/static.log"; echo "FAIL: the static binary did not stop cleanly" >&2; exit 1; }
step "static binary checked"

echo "== container image"
bash scripts/package.sh image
step "built the image"
image=dist/quire-$version-image.tar
echo "image: $(du -h "$image" | cut -f1) ($image)"
mkdir "$work/archive" "$work/root"
tar -xf "$image" -C "$work/archive"
# The configuration, checked; then the environment and the command it runs with.
python3 - "$work/archive" "$version" >"$work/image.env" <<'EOF'
import json, sys
archive, version = sys.argv[1], sys.argv[2]
manifest = json.load(open(f"{archive}/manifest.json"))[0]
config = json.load(open(f"{archive}/{manifest['Config']}"))["config"]
env = dict(e.split("=", 1) for e in config["Env"])
labels = config.get("Labels") or {}
checks = {
    "user": config.get("User") == "10001:10001",
    "entrypoint": config.get("Entrypoint") == ["/usr/bin/quire"],
    "command": config.get("Cmd") == ["serve"],
    "bind": env.get("QUIRE_BIND") == "0.0.0.0:8080",
    "data dir": env.get("QUIRE_DATA_DIR") == "/data",
    "volume": "/data" in (config.get("Volumes") or {}),
    "port": "8080/tcp" in (config.get("ExposedPorts") or {}),
    "health check": (config.get("Healthcheck") or {}).get("Test") == ["CMD", "/usr/bin/quire", "health"],
    "labels": labels.get("org.opencontainers.image.version") == version
    and all(f"org.opencontainers.image.{k}" in labels for k in ("title", "description", "licenses", "created")),
}
failed = [k for k, ok in checks.items() if not ok]
if failed:
    sys.exit(f"FAIL: image configuration: {', '.join(failed)}: {json.dumps(config, indent=1)}")
for k, v in env.items():
    print(f"{k}={v}")
with open(f"{archive}/../image.cmd", "w") as f:
    f.write("\n".join(config["Entrypoint"] + config["Cmd"]) + "\n")
for layer in manifest["Layers"]:
    print(f"{archive}/{layer}", file=open(f"{archive}/layers.txt", "a"))
EOF
while read -r layer; do tar -xf "$layer" -C "$work/root"; done <"$work/archive/layers.txt"
echo "image: configuration checked (user 10001, /data, 8080, health check, OCI labels)"
# What a container runtime provides: the standard device nodes, /etc/hosts, /etc/resolv.conf.
# /dev/urandom and /dev/random matter where the kernel's getrandom call is filtered: the
# random source then falls back to the device files.
mkdir -p "$work/root/dev"
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
  IFS=: read -r name major minor <<<"$node"
  mknod -m 666 "$work/root/dev/$name" c "$major" "$minor"
done
printf '127.0.0.1 localhost\n' >"$work/root/etc/hosts"
printf 'nameserver 127.0.0.1\n' >"$work/root/etc/resolv.conf"
[ -d conformance/node_modules/@gitbook/api ] || (cd conformance && npm ci --no-audit --no-fund --loglevel=error)
step "unpacked the image"
unshare --net -- bash "$0" __in-netns "$work/root" "$work"
step "ran the image"

echo "== Debian package"
bash scripts/package.sh deb
step "built the package"
deb=$(ls dist/quire_"$version"-1_*.deb)
echo "deb: $(du -h "$deb" | cut -f1) ($deb)"
lintian --fail-on error --tag-display-limit 0 "$deb" || { echo "FAIL: lintian" >&2; exit 1; }
step "lintian"
dpkg-deb -c "$deb" >"$work/contents"
for f in ./usr/bin/quire ./usr/lib/systemd/system/quire.service ./etc/default/quire \
  ./usr/share/man/man1/quire.1.gz; do
  grep -q " $f\$" "$work/contents" || { cat "$work/contents"; echo "FAIL: the package lacks $f" >&2; exit 1; }
done
dpkg-deb -e "$deb" "$work/control"
grep -qx /etc/default/quire "$work/control/conffiles" || { echo "FAIL: /etc/default/quire is no conffile" >&2; exit 1; }
grep -q 'deb-systemd-helper' "$work/control/postinst" && grep -q 'deb-systemd-invoke' "$work/control/postinst" \
  || { cat "$work/control/postinst"; echo "FAIL: postinst does not enable and start quire.service" >&2; exit 1; }
# Installed into a scratch root: dpkg's own database, its maintainer scripts run outside a
# chroot (the scratch root has no shell) with DPKG_ROOT naming it.
scratch=$work/scratch
mkdir -p "$scratch/var/lib/dpkg/info" "$scratch/var/lib/dpkg/updates"
touch "$scratch/var/lib/dpkg/status"
# Starting services is refused in the scratch root (deb-systemd-invoke asks this there).
install -D -m 0755 /dev/stdin "$scratch/usr/sbin/policy-rc.d" <<<$'#!/bin/sh\nexit 101'
dpkg --root="$scratch" --force-script-chrootless --force-not-root --log=/dev/null -i "$deb" >"$work/dpkg.log" 2>&1 \
  || { cat "$work/dpkg.log"; echo "FAIL: dpkg -i" >&2; exit 1; }
[ -L "$scratch/etc/systemd/system/multi-user.target.wants/quire.service" ] \
  || { cat "$work/dpkg.log"; echo "FAIL: quire.service was not enabled" >&2; exit 1; }
"$scratch/usr/bin/quire" --version
# The units the unit names (targets and the like) are this system's.
cp -an /usr/lib/systemd/system/. "$scratch/usr/lib/systemd/system/"
systemd-analyze verify --root="$scratch" --man=no quire.service || { echo "FAIL: systemd-analyze verify" >&2; exit 1; }
systemd-analyze security --offline=true --root="$scratch" --threshold=20 quire.service >"$work/security" 2>&1 \
  || { cat "$work/security"; echo "FAIL: the unit's exposure is above 2.0" >&2; exit 1; }
echo "deb: $(tail -n 1 "$work/security")"
MANWIDTH=80 man -l "$scratch/usr/share/man/man1/quire.1.gz" 2>/dev/null | grep -q -- '--database-url' \
  || { echo "FAIL: the man page lacks the serve options" >&2; exit 1; }
echo "deb: installed into a scratch root, unit enabled and checked, man page holds the options"
step "package checked"

echo "== deploy examples"
docker-compose -f deploy/compose.yaml config -q || { echo "FAIL: deploy/compose.yaml" >&2; exit 1; }
# The validator must refuse a misspelt key, or its pass proves nothing.
sed 's/^    restart:/    restrat:/' deploy/compose.yaml >"$work/bad-compose.yaml"
if docker-compose -f "$work/bad-compose.yaml" config -q 2>/dev/null; then
  echo "FAIL: docker-compose accepted a misspelt key" >&2
  exit 1
fi
echo "compose: deploy/compose.yaml valid (docker-compose config)"
(cd deploy/check && npm ci --no-audit --no-fund --loglevel=error && node check.mjs ../kubernetes.yaml)
step "deploy examples checked"
echo "== packaging tests passed"
