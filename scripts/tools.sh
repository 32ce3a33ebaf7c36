# Sourced by scripts/test.sh and scripts/test-package.sh: installs what a test needs, saying
# what and why, or (with --no-install) only names what is missing.
#   QUIRE_NO_INSTALL=1  install nothing
#   CI=true             a missing component fails the run (fail_if_missing) instead of
#                       skipping its tests

QUIRE_NO_INSTALL=${QUIRE_NO_INSTALL:-0}
missing=()

# Whether a thing is there: a path (a glob) when it starts with /, else a command.
present() {
  case $1 in
    /*) compgen -G "$1" >/dev/null ;;
    *) command -v "$1" >/dev/null ;;
  esac
}

# need_deb PACKAGE THING WHY: makes THING present by installing Debian's PACKAGE if needed (as
# root, with apt-get, unless QUIRE_NO_INSTALL=1). Returns 1, and notes PACKAGE as missing,
# when THING is still absent.
need_deb() {
  local pkg=$1 thing=$2 why=$3
  present "$thing" && return 0
  if [ "$QUIRE_NO_INSTALL" != 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing $pkg (Debian package): $why"
    apt-get install -y -q "$pkg" >/dev/null 2>&1 \
      || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$pkg" >/dev/null 2>&1) \
      || echo "could not install $pkg"
  fi
  present "$thing" && return 0
  missing+=("$pkg (Debian): $why")
  return 1
}

# need_crate CRATE VERSION BINARY WHY [CARGO INSTALL ARGS...]: the same for a program built
# from crates.io.
need_crate() {
  local crate=$1 version=$2 binary=$3 why=$4
  shift 4
  present "$binary" && return 0
  if [ "$QUIRE_NO_INSTALL" != 1 ]; then
    echo "== installing $crate $version (crates.io, built with cargo install): $why"
    cargo install "$crate" --version "$version" --locked --quiet "$@" || echo "could not install $crate"
  fi
  present "$binary" && return 0
  missing+=("$crate $version (crates.io): $why")
  return 1
}

# Notes something missing that this script does not install.
note_missing() { missing+=("$1"); }

# After the installs: the list of what is missing, and in CI the end of the run.
fail_if_missing() {
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "Missing, so their tests are skipped:"
  printf '  - %s\n' "${missing[@]}"
  if [ "${CI:-}" = true ]; then
    echo "error: in CI (CI=true) every component must be present" >&2
    exit 1
  fi
}
