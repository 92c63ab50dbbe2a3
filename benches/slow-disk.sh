#!/usr/bin/env bash
# A slowed disk for the benchmarks' blob store (root only; cgroup v1 blkio or v2 io).
#
#   sudo benches/slow-disk.sh up      # prints the directory to pass as PJ_SERVER_DIR
#   PJ_SERVER_DIR=/mnt/pj-slow-disk cargo bench --bench trace
#   sudo benches/slow-disk.sh down
#
# `up` makes an ext4 file system in an image file, attaches it as a loop device (direct
# I/O to the image, so the host's page cache does not absorb it twice), limits writes to
# that device (PJ_SLOW_RATE bytes/s, default 150000000; the probe below prints what the
# disk then takes for a 1.5 GB write with fsync), and lowers the
# kernel's dirty-page limits (vm.dirty_bytes 128 MiB, vm.dirty_background_bytes 32 MiB)
# so a writer is paced by the disk instead of filling gigabytes of page cache first (as
# on a host whose memory is taken). `down` restores all of it.
set -euo pipefail
mnt=${PJ_SLOW_MNT:-/mnt/pj-slow-disk}
img=${PJ_SLOW_IMG:-$(cd "$(dirname "$0")/.." && pwd)/target/slow-disk.img}
size=${PJ_SLOW_SIZE:-12G}
rate=${PJ_SLOW_RATE:-150000000}
state=$img.state

throttle() { # device, bytes/s (0 removes the limit)
  local dev=$1 bps=$2
  if [ -f /sys/fs/cgroup/blkio/blkio.throttle.write_bps_device ]; then
    echo "$dev $bps" >/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
  elif [ -f /sys/fs/cgroup/io.max ]; then
    local v=$bps; [ "$bps" = 0 ] && v=max
    echo "$dev wbps=$v" >/sys/fs/cgroup/io.max
  else
    echo "no blkio/io controller to limit writes with" >&2; exit 1
  fi
}

case "${1:-}" in
up)
  [ -e "$state" ] && { echo "already up (see $state); run '$0 down' first" >&2; exit 1; }
  mkdir -p "$(dirname "$img")" "$mnt"
  truncate -s "$size" "$img"
  mkfs.ext4 -q -F "$img"
  loop=$(losetup -f --show --direct-io=on "$img")
  mount "$loop" "$mnt"
  dev=$(lsblk -ndo MAJ:MIN "$loop" | tr -d ' ')
  printf 'loop=%s\ndev=%s\ndirty_bytes=%s\ndirty_background_bytes=%s\ndirty_ratio=%s\ndirty_background_ratio=%s\n' \
    "$loop" "$dev" "$(cat /proc/sys/vm/dirty_bytes)" "$(cat /proc/sys/vm/dirty_background_bytes)" \
    "$(cat /proc/sys/vm/dirty_ratio)" "$(cat /proc/sys/vm/dirty_background_ratio)" >"$state"
  throttle "$dev" "$rate"
  sysctl -q vm.dirty_bytes=134217728 vm.dirty_background_bytes=33554432
  echo "measuring the slowed disk (1.5 GB written, then fsync):"
  dd if=/dev/zero of="$mnt/probe" bs=1M count=1500 conv=fsync 2>&1 | tail -n 1
  rm -f "$mnt/probe"
  echo "$mnt"
  ;;
down)
  [ -f "$state" ] || { echo "not up" >&2; exit 0; }
  # shellcheck disable=SC1090
  . "$state"
  throttle "$dev" 0 || true
  umount "$mnt" || true
  losetup -d "$loop" || true
  if [ "$dirty_bytes" != 0 ]; then sysctl -q vm.dirty_bytes="$dirty_bytes"; else sysctl -q vm.dirty_ratio="$dirty_ratio"; fi
  if [ "$dirty_background_bytes" != 0 ]; then sysctl -q vm.dirty_background_bytes="$dirty_background_bytes"; else sysctl -q vm.dirty_background_ratio="$dirty_background_ratio"; fi
  rm -f "$img" "$state"
  ;;
*)
  echo "usage: $0 up|down" >&2; exit 2
  ;;
esac
