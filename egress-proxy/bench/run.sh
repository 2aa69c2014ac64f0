#!/usr/bin/env bash
# Egress proxy benchmark: direct loopback vs Berth proxy vs squid, same run, same allowlist.
# Usage: egress-proxy/bench/run.sh [bytes] [connects] [rounds]      (defaults: 1 GiB, 2000, 5)
# Needs: squid (Debian package `squid`); without it, only direct vs berth is measured.
# Everything listens on 127.0.0.1 only.
set -euo pipefail
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BYTES=${1:-1073741824}
CONNECTS=${2:-2000}
ROUNDS=${3:-5}
WORK=$(mktemp -d /tmp/egress-bench.XXXXXX)
chmod 755 "$WORK"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
UP_PORT=$(free_port)
SQUID_PORT=0
SQUID_PID=""
cleanup() { if [[ -n "$SQUID_PID" ]]; then kill "$SQUID_PID" 2>/dev/null || true; wait "$SQUID_PID" 2>/dev/null || true; fi; rm -rf "$WORK"; }
trap cleanup EXIT

if command -v squid >/dev/null 2>&1 || [[ -x /usr/sbin/squid ]]; then
  SQUID=$(command -v squid || echo /usr/sbin/squid)
  SQUID_PORT=$(free_port)
  echo "127.0.0.1 allowed.test" > "$WORK/hosts"
  # Same allowlist as the Berth side: CONNECT to allowed.test:$UP_PORT only; no cache, no ICP,
  # no disk cache, hosts file instead of DNS so nothing leaves loopback.
  cat > "$WORK/squid.conf" <<CONF
http_port 127.0.0.1:$SQUID_PORT
hosts_file $WORK/hosts
dns_nameservers 127.0.0.1
acl allowed_dst dstdomain allowed.test
acl bench_port port $UP_PORT
acl CONNECT method CONNECT
http_access allow CONNECT allowed_dst bench_port
http_access deny all
cache deny all
cache_mem 8 MB
access_log none
cache_log $WORK/cache.log
pid_filename $WORK/squid.pid
coredump_dir $WORK
icp_port 0
htcp_port 0
shutdown_lifetime 0 seconds
client_db off
max_filedescriptors 8192
CONF
  if [[ $(id -u) == 0 ]]; then echo "cache_effective_user proxy" >> "$WORK/squid.conf"; chown proxy "$WORK" 2>/dev/null || true; fi
  "$SQUID" -N -f "$WORK/squid.conf" &
  SQUID_PID=$!
  for _ in $(seq 1 50); do
    if (exec 3<>/dev/tcp/127.0.0.1/$SQUID_PORT) 2>/dev/null; then break; fi; sleep 0.1
  done
  echo "squid $("$SQUID" -v | head -1 | awk '{print $4}') on 127.0.0.1:$SQUID_PORT"
else
  echo "squid not installed: measuring direct vs berth only"
fi

cd "$ROOT"
mvn -q -o -pl egress-proxy test-compile
mvn -q -o -pl egress-proxy exec:java -Dexec.mainClass=dev.berth.proxy.EgressBenchmark -Dexec.classpathScope=test \
  -Dexec.args="$SQUID_PORT $UP_PORT $BYTES $CONNECTS $ROUNDS"
