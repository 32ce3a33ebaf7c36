#!/usr/bin/env bash
# Builds Quire's release artefacts under dist/ (git-ignored):
#   static  dist/quire-<version>-x86_64-linux: one static-pie binary (glibc linked in), which
#           the image and the package below also carry
#   image   dist/quire-<version>-image.tar: a container image (docker-archive; `docker load`,
#           `podman load`), built FROM scratch with buildah, no daemon
#   deb     dist/quire_<version>-1_amd64.deb: a Debian package built with cargo-deb
# Each builds what it needs first. The tools come from Debian (buildah, help2man) and
# crates.io (cargo-deb); run as root on Debian, `scripts/test-package.sh` installs them.
set -euo pipefail
cd "$(dirname "$0")/.."

triple=x86_64-unknown-linux-gnu
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
bin="$target_dir/$triple/release/quire"
mkdir -p dist

# One release build for all three. `--target` keeps build scripts and proc-macros dynamic
# while the binary links glibc statically (static-pie).
build_static() {
  CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static" \
    cargo build --release --locked -p quire --target "$triple"
  # A dynamic binary here would fail in the image, which holds no glibc for it.
  if ! file -L "$bin" | grep -q 'static-pie linked\|statically linked'; then
    echo "error: $bin is not statically linked: $(file -L "$bin")" >&2
    exit 1
  fi
}

version() { "$bin" --version | awk '{print $2}'; }

static() {
  build_static
  install -s -m 0755 "$bin" "dist/quire-$(version)-x86_64-linux"
  echo "dist/quire-$(version)-x86_64-linux"
}

# Copies a program and the shared libraries it loads (as ldd lists them) into a root.
copy_with_libs() {
  local root=$1 prog=$2 lib
  install -D -m 0755 "$prog" "$root$prog"
  for lib in $(ldd "$prog" | grep -o '/[^ ]*'); do
    install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
  done
}

image() {
  build_static
  local v ctr out
  v=$(version)
  out="dist/quire-$v-image.tar"
  # Global, for the trap: the image's files, and buildah's storage for this build alone.
  root=$(mktemp -d "$target_dir/image-root.XXXXXX")
  store=$(mktemp -d "$target_dir/image-store.XXXXXX")
  trap 'rm -rf "$root" "$store"' EXIT

  install -D -s -m 0755 "$bin" "$root/usr/bin/quire"
  # Git access runs `git` (upload-pack, receive-pack and the pack commands they start, all
  # built into the one program); the server gives it its whole environment, so no HOME.
  copy_with_libs "$root" /usr/bin/git
  mkdir -p "$root/usr/lib/git-core"
  ln -s ../../bin/git "$root/usr/lib/git-core/git"
  find /usr/lib/git-core -maxdepth 1 -type l -lname git -printf '%f\n' \
    | while read -r name; do ln -s git "$root/usr/lib/git-core/$name"; done
  install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  # Names resolve from /etc/hosts, then DNS (both built into the static glibc).
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  printf 'root:x:0:0:root:/:/sbin/nologin\nquire:x:10001:10001:Quire:/data:/sbin/nologin\n' \
    >"$root/etc/passwd"
  printf 'root:x:0:\nquire:x:10001:\n' >"$root/etc/group"
  install -d -m 1777 "$root/tmp"
  install -d -m 0750 -o 10001 -g 10001 "$root/data"

  # Docker's format: the OCI image format has no health check.
  export BUILDAH_FORMAT=docker
  local b=(buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs)
  ctr=$("${b[@]}" from scratch)
  local mnt
  mnt=$("${b[@]}" mount "$ctr")
  cp -a "$root/." "$mnt/"
  "${b[@]}" umount "$ctr" >/dev/null
  local labels=(
    org.opencontainers.image.title=Quire
    "org.opencontainers.image.description=Self-hostable documentation workspace server speaking the GitBook v1 API"
    "org.opencontainers.image.version=$v"
    org.opencontainers.image.licenses=Apache-2.0
    "org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  )
  if rev=$(git rev-parse HEAD 2>/dev/null); then labels+=("org.opencontainers.image.revision=$rev"); fi
  local l config=()
  for l in "${labels[@]}"; do config+=(--label "$l"); done
  "${b[@]}" config "${config[@]}" \
    --entrypoint '["/usr/bin/quire"]' --cmd serve \
    --env PATH=/usr/bin --env QUIRE_BIND=0.0.0.0:8080 --env QUIRE_DATA_DIR=/data \
    --user 10001:10001 --workingdir /data --volume /data --port 8080/tcp \
    --stop-signal SIGTERM \
    --healthcheck 'CMD /usr/bin/quire health' --healthcheck-interval 30s \
    --healthcheck-timeout 10s --healthcheck-start-period 30s --healthcheck-retries 3 \
    "$ctr"
  "${b[@]}" commit -q --format docker --rm "$ctr" "quire:$v" >/dev/null
  rm -f "$out"
  "${b[@]}" push -q "quire:$v" "docker-archive:$out:quire:$v"
  echo "$out"
}

deb() {
  build_static
  local v
  v=$(version)
  local rel="$target_dir/$triple/release"
  # The man page, from the program's own --help (the serve and admin options included): each
  # option a tagged paragraph, the rest plain text that man wraps.
  local inc
  inc=$(mktemp)
  {
    for cmd in serve admin; do
      echo "[${cmd^^} OPTIONS]"
      "$bin" "$cmd" --help | sed 's/\\/\\e/g; s/^[.'\'']/\\\&&/' | awk '
        /^ *-/ { sub(/^ +/, ""); print ".TP"; print "\\fB" $0 "\\fR"; next }
        /^ +[a-z-]+  / { sub(/^ +/, ""); name = $1; $1 = ""; print ".TP"; print "\\fB" name "\\fR"; sub(/^ +/, ""); print; next }
        /^$/ { print ".PP"; next }
        { sub(/^ +/, ""); print }'
    done
    printf '[FILES]\n.TP\n/etc/default/quire\nSettings of quire.service, as QUIRE_* variables.\n'
    printf '.TP\n/var/lib/quire\nThe service'\''s data (SQLite database and blobs).\n'
  } >"$inc"
  help2man --no-info --no-discard-stderr --include "$inc" \
    --name "self-hostable documentation workspace server speaking the GitBook v1 API" \
    --version-string "$v" "$bin" | gzip -9n >"$rel/quire.1.gz"
  rm -f "$inc"
  # Debian wants a changelog; this one names the source it was built from, dated as its commit.
  local when rev
  when=$(git log -1 --format=%cD 2>/dev/null || date -R)
  rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  printf 'quire (%s-1) unstable; urgency=medium\n\n  * Built from Quire %s (commit %s).\n\n -- %s  %s\n' \
    "$v" "$v" "$rev" "Quire developers <quire@example.org>" "$when" | gzip -9n >"$rel/changelog.Debian.gz"
  cargo deb -p quire --no-build --target "$triple" --output dist/ --deb-revision 1
}

case "${1:-}" in
  static) static ;;
  image) image ;;
  deb) deb ;;
  *)
    echo "usage: $0 static|image|deb" >&2
    exit 2
    ;;
esac
