# shellcheck shell=bash
# Shared helpers for scripts/test.sh and scripts/conformance.sh (sourced).

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf '==> %s\n' "$*"; }

# as_root CMD...: run CMD as root (directly, or with sudo when it needs no
# password). Returns 1 without running it when neither is possible.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    return 1
  fi
}

APT_UPDATED=
# apt_install PKG: install Debian package PKG with apt-get (as root or with
# password-less sudo). Never fails the script: prints what to do when it
# cannot install, and returns 1.
apt_install() {
  local pkg="$1"
  if ! command -v apt-get >/dev/null 2>&1; then
    log "apt-get is not available: install $pkg by hand"
    return 1
  fi
  if ! as_root true 2>/dev/null; then
    log "installing $pkg needs root (or password-less sudo): run 'sudo apt-get install -y $pkg'"
    return 1
  fi
  log "installing $pkg (apt-get)"
  if [ -z "$APT_UPDATED" ]; then
    as_root env DEBIAN_FRONTEND=noninteractive timeout 300 apt-get update -qq >/dev/null || true
    APT_UPDATED=1
  fi
  if ! as_root env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq "$pkg" >/dev/null; then
    log "apt-get install $pkg failed"
    return 1
  fi
}

# ensure_pkg CMD PKG: install Debian package PKG when command CMD is missing.
ensure_pkg() {
  local cmd="$1" pkg="$2"
  command -v "$cmd" >/dev/null 2>&1 && return 0
  log "$cmd not found"
  apt_install "$pkg" || return 1
  command -v "$cmd" >/dev/null 2>&1
}

# build_gregor DIR: build the gregor binary into DIR/gregor.
build_gregor() {
  (cd "$ROOT" && timeout 15m go build -o "$1/gregor" ./cmd/gregor)
}

# http_status URL: print the HTTP status code of a GET to an http://host:port/path URL
# (bash /dev/tcp, so no curl is needed). Prints nothing on connection failure.
http_status() {
  local rest="${1#http://}" hostport path host port
  hostport="${rest%%/*}"
  path="/${rest#*/}"
  host="${hostport%:*}"
  port="${hostport##*:}"
  # shellcheck disable=SC2016 # the inner script expands its own arguments
  timeout 5 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$2" "$0" >&3
    read -r _ code _ <&3 && printf "%s" "$code"
  ' "$host" "$port" "$path" 2>/dev/null
}
