#!/usr/bin/env bash
# The whole suite in two lanes that run side by side (called by ./test.sh with no arguments):
#   1. one build of every module (jars, berth.jar, the sandbox-engine test fixtures) into the local Maven repository;
#   2. lane "units": tool-schemas, egress-proxy, sandbox-engine and fleet (unit and driver tests: real bubblewrap, gVisor
#      and QEMU sandboxes; a real etcd cluster); lane "e2e": mcp-server (its unit tests, then the end-to-end tests: real MCP clients from
#      npm against the built berth.jar).
# The lanes share nothing but the read-only installed jars and the guest image cache (built under a file lock), so
# they overlap the waits of one (VM boots, npm, fsyncs) with the work of the other on two cores.
# Each lane's whole Maven output is printed when both have ended, then the per-module times and the slowest classes.
# A failing test does not stop its lane: every test runs, and the count from the reports (and each lane's build
# status) decides the exit status.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=target/test-lanes
mkdir -p "$logs"
start=$(date +%s)
# the build runs Surefire, Failsafe and JaCoCo on no test, so every plugin is resolved before the lanes run offline
# (two Maven processes must not download into one local repository at once)
mvn -B -q install -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false -Dit.test=NoSuchTest \
    -Dfailsafe.failIfNoSpecifiedTests=false || { echo "test-lanes: the build failed" >&2; exit 1; }
echo "test-lanes: built in $(( $(date +%s) - start )) s; lanes start" >&2

lane() { # name, maven arguments...
  local name=$1; shift
  local t0=$(date +%s)
  mvn -B -o "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  echo "$rc $(( $(date +%s) - t0 ))" > "$logs/$name.rc"
  echo "test-lanes: lane $name ended: exit $rc after $(( $(date +%s) - t0 )) s" >&2
}
lane units -fae -Dmaven.test.failure.ignore=true verify -pl tool-schemas,egress-proxy,sandbox-engine,fleet &
lane e2e -fae -Dmaven.test.failure.ignore=true verify -pl mcp-server &
wait

rc=0
for name in units e2e; do
  echo "================================================================ lane $name"
  cat "$logs/$name.log"
  read -r code secs < "$logs/$name.rc"
  [ "$code" -eq 0 ] || rc=1
done
echo "================================================================ summary"
for name in units e2e; do read -r code secs < "$logs/$name.rc"; echo "lane $name: exit $code, ${secs} s"; done
# a failed test does not stop its lane (every test runs and is reported); the reports decide the outcome
scripts/test-times.sh || rc=1
echo "whole suite: $(( $(date +%s) - start )) s"
exit $rc
