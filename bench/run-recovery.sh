#!/usr/bin/env bash
# Prints crash-recovery time through MCP stdio: N running persistent microVM workspaces, the server killed with
# SIGKILL, a new server started on the same home (QEMUs taken over), next to a clean restart of the same workspaces.
# Usage: bench/run-recovery.sh [workspaces=3]   (as root, after ./run.sh or ./test.sh installed the packages)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
mvn -B -q package -DskipTests
mvn -B -q -pl mcp-server test-compile
exec java -cp "mcp-server/target/test-classes:mcp-server/target/berth.jar" dev.berth.mcp.bench.RecoveryBench \
  mcp-server/target/berth.jar "${1:-3}"
