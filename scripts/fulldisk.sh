#!/usr/bin/env bash
# Fills a real 40 MiB filesystem under the gregor binary (test/e2e
# TestFullDiskOnRealFilesystem): mounts a tmpfs of SIZE (default 40m) on a
# fresh temp dir, runs the test with GREGOR_FULLDISK_DIR pointing at it,
# unmounts it. Needs root (or password-less sudo) for mount; prints the
# test's figures (-v). Bounded by go test's -timeout.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
size="${SIZE:-40m}"
mnt="$(mktemp -d "${TMPDIR:-/tmp}/gregor-fulldisk-XXXXXX")"
if ! as_root mount -t tmpfs -o "size=$size" tmpfs "$mnt"; then
  log "mounting a tmpfs needs root or password-less sudo"
  rmdir "$mnt"
  exit 1
fi
trap 'as_root umount "$mnt"; rmdir "$mnt"' EXIT
as_root chmod 1777 "$mnt"
GREGOR_FULLDISK_DIR="$mnt" go test -count=1 -timeout=10m -v -run 'TestFullDiskOnRealFilesystem' ./test/e2e
