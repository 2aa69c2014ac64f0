#!/usr/bin/env bash
# Prints snapshot time and fork -> first exec for an empty workspace and for 5k and 50k files of 2 KB (ratios to the
# empty case, same run), run("true") next to them, and a fork of 16 in one call vs 16 single forks.
# Usage: bench/run-templates.sh [namespace|microvm] [sizes=0,5000,50000] [forks=16]   (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# one reactor run: the sibling modules resolve to their target/classes, so nothing needs `mvn install` first
mvn -B -q -pl sandbox-engine -am test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.cp -Dmdep.includeScope=test
exec java -cp "sandbox-engine/target/test-classes:sandbox-engine/target/classes:$(cat sandbox-engine/target/bench.cp)" \
  dev.berth.engine.TemplateBenchmark "${1:-namespace}" "${2:-0,5000,50000}" "${3:-16}"
