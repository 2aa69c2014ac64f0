#!/usr/bin/env bash
# Prints the microVM driver's figures (cold boot, park, resume -> first exec, fork) next to bare QEMU doing the same
# in the same run. Usage: bench/run-microvm.sh [rounds=3] [memoryMiB=256] [test|developer]
# (as root, after ./run.sh or ./test.sh installed the packages; the developer image needs `berth setup`)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# one reactor run: the sibling modules resolve to their target/classes, so nothing needs `mvn install` first
mvn -B -q -pl sandbox-engine -am test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.cp -Dmdep.includeScope=test
exec java -cp "sandbox-engine/target/test-classes:sandbox-engine/target/classes:$(cat sandbox-engine/target/bench.cp)" \
  dev.berth.engine.microvm.MicrovmBenchmark "${1:-3}" "${2:-256}" ${3:+"$3"}
