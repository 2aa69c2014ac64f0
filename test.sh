#!/usr/bin/env bash
# Installs what the tests need and runs all of them: unit, driver (real bubblewrap and QEMU sandboxes) and
# end-to-end tests (the official MCP TypeScript client against the built berth.jar).
set -euo pipefail
cd "$(dirname "$0")"
source scripts/env.sh
scripts/install-deps.sh
exec mvn -B verify "$@"
