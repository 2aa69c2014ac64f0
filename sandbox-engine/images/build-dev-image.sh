#!/bin/sh
# Builds the Berth developer guest root: Debian bookworm (debootstrap, Debian packages only) with bash, git, curl,
# ca-certificates, python3, nodejs, npm, build-essential, written as a read-only ext4 image (base.ext4).
# Each workspace boots the shared test-image kernel + initramfs; its /init mounts base.ext4 read-only as the lower
# layer of an overlayfs whose upper layer and /workspace live on the workspace's own data disk.
# Reproducible as far as debootstrap allows: fixed SOURCE_DATE_EPOCH, fixed mtimes, fixed ext4 UUID/hash seed.
# Usage: build-dev-image.sh <out-dir>          (needs root; takes minutes)
set -eu
out=$1
suite=${BERTH_DEV_SUITE:-bookworm}
mirror=${BERTH_DEV_MIRROR:-http://deb.debian.org/debian}
pkgs=bash,git,curl,ca-certificates,python3,nodejs,npm,build-essential,procps,less,xz-utils
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
root="$out/rootfs"
mkdir -p "$root"
# debootstrap's own resolver cannot configure npm's dependency web: bootstrap minbase, then let apt do the rest.
debootstrap --variant=minbase "$suite" "$root" "$mirror"
cp /etc/resolv.conf "$root/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"; chmod 0755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true' EXIT
chroot "$root" apt-get update -q
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q --no-install-recommends $(echo "$pkgs" | tr , ' ')
umount "$root/proc"
rm -f "$root/usr/sbin/policy-rc.d" "$root/etc/resolv.conf"
# Trim what a workspace never needs and what makes the image differ run to run.
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/* "$root"/tmp/* \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/dev/*
printf 'berth\n' > "$root/etc/hostname"
printf 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n' > "$root/etc/environment"
mkdir -p "$root/workspace"
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
size_mb=$(( $(du -sm "$root" | cut -f1) * 13 / 10 + 200 ))
mkfs.ext4 -q -F -L berth-base -U 6f1c3c8e-0b7a-4c1e-9d57-3a2f1e0b9a11 -E hash_seed=0b6f1e2d-2c3a-4b5c-8d9e-0f1a2b3c4d5e,root_owner=0:0 \
  -d "$root" "$out/base.ext4.tmp" "${size_mb}M"
mv "$out/base.ext4.tmp" "$out/base.ext4"
rm -rf "$root"
