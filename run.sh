#!/usr/bin/env bash
# Sets up this machine and runs Berth. Default: a scripted agent session (official MCP TypeScript client) against
# `berth stdio` on the default isolation. `./run.sh stdio` serves MCP on stdin/stdout instead (for an MCP client).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/env.sh
scripts/install-deps.sh >&2
mvn -B -q package -DskipTests >&2
java -jar mcp-server/target/berth.jar setup >&2
case "${1:-demo}" in
  stdio) shift; exec java -jar mcp-server/target/berth.jar stdio "$@" ;;
  demo) shift || true; exec node examples/agent-session.mjs mcp-server/target/berth.jar "$@" ;;
  *) echo "usage: ./run.sh [demo|stdio] [berth options]" >&2; exit 2 ;;
esac
