#!/usr/bin/env bash
# Prints open_workspace {from_directory} of a git repository of N files beside `git clone --local` and
# `cp -a --reflink=auto` of it on the host (same run, ratios), and export of a patch and a branch after changing
# 10 and 1,000 files.
# Usage: bench/run-transfer.sh [namespace|microvm] [sizes=5000]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
mvn -B -q -pl sandbox-engine -am test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.cp -Dmdep.includeScope=test
exec java -cp "sandbox-engine/target/test-classes:sandbox-engine/target/classes:$(cat sandbox-engine/target/bench.cp)" \
  dev.berth.engine.TransferBenchmark "${1:-namespace}" "${2:-5000}"
