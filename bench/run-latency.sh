#!/usr/bin/env bash
# Prints open_workspace -> first run latency and run("true") round trips through MCP stdio, next to bare bwrap measured
# interleaved in the same run, and where a run's time goes on the server (per phase); writes the figures as JSON to
# bench/results/run-latency-<isolation>[-<config>].json (RunLatencyRatioE2eTest compares its own short pass with
# bench/results/run-latency-baseline.json).
# Usage: bench/run-latency.sh [iterations] [namespace|microvm] [operator-config]   (as root, after ./run.sh or ./test.sh installed the packages)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
mvn -B -q package -DskipTests
out="bench/results/run-latency-${2:-namespace}${3:+-$(basename "$3" .json)}.json"
# the shaded jar carries the MCP SDK client and Jackson the benchmark uses
exec java -Dberth.bench.json="$out" -cp "mcp-server/target/test-classes:mcp-server/target/berth.jar" dev.berth.mcp.bench.LatencyBench \
  mcp-server/target/berth.jar "${1:-200}" "${2:-namespace}" ${3:+"$3"}
