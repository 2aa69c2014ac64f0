#!/usr/bin/env bash
# Prints ping and run("true") throughput over stdio and Streamable HTTP, hardened JSON-RPC boundary next to the old
# path (the SDK's stdio transport; HTTP without the guard), in the same run.
# Usage: bench/run-transport.sh [pings] [runs] [rounds]   (as root, after ./run.sh or ./test.sh installed the packages)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
mvn -B -q package -DskipTests -pl mcp-server -am
exec java -cp "mcp-server/target/test-classes:mcp-server/target/berth.jar" dev.berth.mcp.bench.TransportBench \
  mcp-server/target/berth.jar "${1:-2000}" "${2:-200}" "${3:-3}"
