#!/usr/bin/env bash
# Sets up this machine and runs Berth. Default: a scripted agent session (official MCP TypeScript client) against
# `berth stdio` (through the launcher `berth setup` installs) on the default isolation. `./run.sh stdio` serves MCP on stdin/stdout instead (for an MCP client).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/env.sh
scripts/install-deps.sh >&2
mvn -B -q package -DskipTests >&2
java -jar mcp-server/target/berth.jar setup >&2      # also installs the `berth` launcher (/usr/local/bin as root)
export PATH="/usr/local/bin:$HOME/.local/bin:$PATH"
case "${1:-demo}" in
  stdio) shift; exec berth stdio "$@" ;;
  demo) shift || true; exec node examples/agent-session.mjs "$@" ;;
  *) echo "usage: ./run.sh [demo|stdio] [berth options]" >&2; exit 2 ;;
esac
