#!/usr/bin/env bash
# Prints open, run("true"), park, resume, snapshot and fork latency through MCP stdio for two builds side by side
# (rounds alternate between them). BEFORE is a berth.jar or a git revision (built into target/bench-jars/).
# Usage: bench/run-lifecycle.sh BEFORE [namespace|microvm] [rounds] [reps] [runs]   (as root, after ./test.sh installed the packages)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
before="${1:?usage: bench/run-lifecycle.sh BEFORE.jar|REVISION [namespace|microvm] [rounds] [reps] [runs]}"
if [ ! -f "$before" ]; then
  rev=$(git rev-parse --short "$before")
  jar="target/bench-jars/berth-$rev.jar"
  if [ ! -f "$jar" ]; then
    tmp=$(mktemp -d)
    git worktree add -q --detach "$tmp" "$rev"
    (cd "$tmp" && mvn -B -q package -DskipTests -Djacoco.skip=true)
    mkdir -p target/bench-jars && cp "$tmp/mcp-server/target/berth.jar" "$jar"
    git worktree remove --force "$tmp"
  fi
  before="$jar"
fi
mvn -B -q package -DskipTests -Djacoco.skip=true
cp mcp-server/target/berth.jar target/bench-jars/berth-now.jar 2>/dev/null || { mkdir -p target/bench-jars; cp mcp-server/target/berth.jar target/bench-jars/berth-now.jar; }
exec java -cp "mcp-server/target/test-classes:mcp-server/target/berth.jar" dev.berth.mcp.bench.LifecycleBench \
  "$before" target/bench-jars/berth-now.jar "${2:-namespace}" "${3:-3}" "${4:-3}" "${5:-50}"
