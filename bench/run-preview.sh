#!/usr/bin/env bash
# Prints request latency and throughput of a Node dev server through an exposed port (expose_port) next to the same
# app run directly on the host, and parked -> first byte. Usage: bench/run-preview.sh [requests] [namespace|microvm] [stdio|http]
# (http: berth http, the port reached on the MCP server's own port at /p/<id>/ and at <id>.previews.test)
# (as root, after ./run.sh or ./test.sh installed the packages)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
mvn -B -q package -DskipTests
exec java -cp "mcp-server/target/test-classes:mcp-server/target/berth.jar" dev.berth.mcp.bench.PreviewBench \
  mcp-server/target/berth.jar "${1:-1000}" "${2:-namespace}" "${3:-stdio}"
