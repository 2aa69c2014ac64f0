#!/usr/bin/env bash
# Prints line and branch coverage per module from the JaCoCo reports that `./test.sh` (mvn verify) writes.
set -euo pipefail
cd "$(dirname "$0")/.."
printf '%-16s %8s %8s %10s\n' module lines branches "lines hit"
for m in tool-schemas egress-proxy sandbox-engine fleet mcp-server; do
  csv="$m/target/site/jacoco/jacoco.csv"
  [ -f "$csv" ] || { printf '%-16s %8s\n' "$m" "(no report)"; continue; }
  awk -F, -v m="$m" 'NR>1 {bm+=$6; bc+=$7; lm+=$8; lc+=$9}
    END {printf "%-16s %7.1f%% %7.1f%% %5d/%-5d\n", m, (lm+lc)?100*lc/(lm+lc):0, (bm+bc)?100*bc/(bm+bc):0, lc, lm+lc}' "$csv"
done
