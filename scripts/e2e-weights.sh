#!/usr/bin/env bash
# Rewrites mcp-server/src/test/resources/e2e-class-seconds.txt (the order the end-to-end classes start in, slowest
# first: dev.berth.mcp.SlowestFirst) from the Failsafe reports of the last full run (./test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - > mcp-server/src/test/resources/e2e-class-seconds.txt <<'PY'
import glob, xml.etree.ElementTree as ET
rows = []
for f in glob.glob("mcp-server/target/failsafe-reports/TEST-*.xml"):
    s = ET.parse(f).getroot(); rows.append((float(s.get("time", 0)), s.get("name").split('.')[-1]))
if not rows: raise SystemExit("no Failsafe reports: run ./test.sh first")
print("# Seconds each end-to-end class took in a fresh-clone ./test.sh (2 cores, while other builds ran: the order is")
print("# what counts, see SlowestFirst). Refresh from mcp-server/target/failsafe-reports after a full run when the")
print("# slow classes change: scripts/e2e-weights.sh")
for t, n in sorted(rows, reverse=True): print("%6.1f %s" % (t, n))
PY
