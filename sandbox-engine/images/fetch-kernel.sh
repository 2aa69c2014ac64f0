#!/bin/sh
# Fetches the Debian cloud kernel (package linux-image-cloud-amd64 -> its versioned linux-image-*-cloud-amd64
# dependency) with `apt-get download` and extracts it with `dpkg-deb -x` into <cache>/kernel-<package>_<version>/.
# Never installs anything on the host. Prints the extract directory on stdout (last line).
# Usage: fetch-kernel.sh <cache-dir>
set -eu
cache=$1
meta=${BERTH_KERNEL_META:-linux-image-cloud-amd64}
pkg=$(apt-cache depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)
[ -n "$pkg" ] || { echo "fetch-kernel: cannot resolve $meta (run apt-get update?)" >&2; exit 1; }
ver=$(apt-cache show "$pkg" | sed -n 's/^Version: //p' | head -n1)
dir="$cache/kernel-${pkg}_${ver}"
if [ -f "$dir/.complete" ]; then echo "$dir"; exit 0; fi
tmp=$(mktemp -d "$cache/.kernel-tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && apt-get download -q "$pkg=$ver" >/dev/null 2>&1 ) || { echo "fetch-kernel: apt-get download $pkg=$ver failed" >&2; exit 1; }
dpkg-deb -x "$tmp"/*.deb "$tmp/x"
vmlinuz=$(ls "$tmp"/x/boot/vmlinuz-* | head -n1)
kver=${vmlinuz##*/vmlinuz-}
mkdir -p "$tmp/out/modules"
cp "$vmlinuz" "$tmp/out/vmlinuz"
cp "$tmp/x/boot/config-$kver" "$tmp/out/config"
# Keep only the kernel and the module tree (no firmware, no docs).
cp -a "$tmp/x/lib/modules/$kver" "$tmp/out/modules/$kver"
echo "$pkg $ver $kver" > "$tmp/out/.complete"
rm -rf "$dir"; mv "$tmp/out" "$dir"
echo "$dir"
