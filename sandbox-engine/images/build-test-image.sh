#!/bin/sh
# Builds the Berth test guest image: the extracted Debian cloud kernel + a small *uncompressed* newc initramfs
# holding busybox (static), the virtio/overlay modules, /init (images/init), the guest agent and berth-reseed.
# Reproducible: sorted file list, fixed mtimes, root ownership. Takes about a second.
# Usage: build-test-image.sh <out-dir> <kernel-dir from fetch-kernel.sh> <busybox-static> <berth-agent>
set -eu
out=$1 kdir=$2 busybox=$3 agent=$4
here=$(cd "$(dirname "$0")" && pwd)
kver=$(ls "$kdir/modules" | head -n1)
mods="$kdir/modules/$kver/kernel"
root=$(mktemp -d "${TMPDIR:-/tmp}/berth-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/proc" "$root/sys" "$root/dev" \
         "$root/tmp" "$root/run" "$root/mnt" "$root/workspace" "$root/etc" "$root/root" "$root/lib/modules/berth"
cp "$busybox" "$root/bin/busybox"
for a in $("$busybox" --list-full); do
  [ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
done
for m in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_mmio drivers/char/virtio_console \
         drivers/block/virtio_blk fs/overlayfs/overlay; do
  cp "$mods/$m.ko" "$root/lib/modules/berth/"
done
cp "$here/init" "$root/init"
cp "$agent" "$root/sbin/berth-agent"
${CC:-cc} -O2 -static -o "$root/sbin/berth-reseed" "$here/berth-reseed.c"
strip "$root/sbin/berth-reseed"
chmod 0755 "$root/init" "$root/sbin/berth-agent" "$root/sbin/berth-reseed" "$root/bin/busybox"
# the root itself came from mktemp (0700): a user other than root inside (su, an image's User) must get through it
chmod 0755 "$root"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
mkdir -p "$out"
find "$root" -exec touch -h -d @0 {} +
( cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --reproducible --quiet ) > "$out/initramfs.cpio.tmp"
mv "$out/initramfs.cpio.tmp" "$out/initramfs.cpio"
cp "$kdir/vmlinuz" "$out/vmlinuz"
