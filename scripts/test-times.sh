#!/usr/bin/env bash
# Per-module test time and the slowest test classes, from the Surefire/Failsafe XML reports of the last run; then
# the tests' closing line, and the failed tests by name (exit 1 when any failed or none ran). Prints coverage per
# module where the reports exist.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
python3 - "${1:-20}" <<'PY' || status=$?
import glob, sys, xml.etree.ElementTree as ET
top = int(sys.argv[1]); rows = []; mods = {}; total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for f in glob.glob("*/target/surefire-reports/TEST-*.xml") + glob.glob("*/target/failsafe-reports/TEST-*.xml"):
    s = ET.parse(f).getroot(); mod = f.split("/")[0]; kind = "e2e" if "failsafe" in f else "unit"
    t = float(s.get("time", 0)); rows.append((t, s.get("name"), mod, kind))
    mods[(mod, kind)] = mods.get((mod, kind), 0) + t
    for k in total: total[k] += int(s.get(k, 0))
print("time per module (sum of class times):")
for (m, k), t in sorted(mods.items()): print(f"  {m:16} {k:5} {t:8.1f} s")
print(f"slowest {top} test classes:")
for t, n, m, k in sorted(rows, reverse=True)[:top]: print(f"  {t:8.1f} s  {n}")
failed = total["failures"] + total["errors"]
print(f"tests: {total['tests'] - failed - total['skipped']} passed, {failed} failed, {total['skipped']} skipped")
if failed or total["tests"] == 0:
    for f in sorted(glob.glob("*/target/surefire-reports/TEST-*.xml") + glob.glob("*/target/failsafe-reports/TEST-*.xml")):
        s = ET.parse(f).getroot()
        for c in s.iter("testcase"):
            if c.find("failure") is not None or c.find("error") is not None:
                print(f"  failed: {c.get('classname')}.{c.get('name')}")
    sys.exit(1)
PY
scripts/coverage.sh
exit $status
