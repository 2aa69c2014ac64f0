#!/usr/bin/env bash
# Installs what the tests need and runs all of them: unit, driver (real bubblewrap, gVisor and QEMU sandboxes) and
# end-to-end tests (the official MCP TypeScript client against the built berth.jar), in two lanes side by side
# (scripts/test-lanes.sh). With arguments, one plain Maven run instead, e.g. the inner loop on one module:
#   ./test.sh -pl egress-proxy -am        ./test.sh -pl sandbox-engine -am -Dtest='Transitions*'
set -euo pipefail
cd "$(dirname "$0")"
source scripts/env.sh
scripts/install-deps.sh
if [ $# -gt 0 ]; then exec mvn -B verify "$@"; fi
exec scripts/test-lanes.sh
