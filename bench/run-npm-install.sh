#!/usr/bin/env bash
# Prints npm install times of a project with many dependencies from a loopback Verdaccio: the host's npm straight to
# the registry, a namespace workspace through the egress tunnel, and a workspace with the npm registry rule
# (interception + release-age filtering), in the same run (NpmInstallBench).
# Usage: bench/run-npm-install.sh [packages] [rounds]   (as root, after ./test.sh or scripts/install-deps.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
mvn -B -q verify -DskipTests -pl mcp-server -am
CP="mcp-server/target/test-classes:sandbox-engine/target/test-classes:mcp-server/target/berth.jar"
exec java -Dberth.node.dir=mcp-server/src/test/node -Dberth.jar=mcp-server/target/berth.jar \
  -Dberth.verdaccio.dir=mcp-server/src/test/verdaccio -cp "$CP" dev.berth.mcp.NpmInstallBench "${1:-200}" "${2:-3}"
