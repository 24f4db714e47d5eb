#!/usr/bin/env bash
# Re-grade the agent runs committed to this repository against their committed baseline
# reports, offline (no API key, no network besides the install), and fail on a gate.
#
#   examples/ci/evaltape-ci.sh            # grade every run, compare, gate
#   examples/ci/evaltape-ci.sh --update   # write the new reports as the baselines (review the diff)
#
# Layout (change with the variables below):
#   runs/<name>/                    a recorded or imported run (traces.jsonl, manifest.json)
#   evaltape-baselines/<name>/report.json   its accepted report, committed
#   evaltape-reports/<name>/        written here: report.json, report.md, report.html, junit.xml
#
# Variables:
#   EVALTAPE_INSTALL    pip requirement to install first ("" = evaltape is already installed)
#   EVALTAPE_RUNS       folder of runs                       (default: runs)
#   EVALTAPE_BASELINES  folder of baseline reports          (default: evaltape-baselines)
#   EVALTAPE_OUT        folder for the new reports           (default: evaltape-reports)
#   EVALTAPE_METRICS    metrics to grade with (default: those the baseline report used,
#                       else evaltape's default set)
#   EVALTAPE_THRESHOLD  also fail when a run's pass_rate is below this (0..1; default: none)
#   EVALTAPE_STRICT     1 = also fail when any episode went from pass to fail or any metric
#                       mean got worse by more than 0.05 ("warning" level) (default: 0)
#   GITHUB_STEP_SUMMARY set by GitHub Actions: the Markdown reports are appended to it
#
# The gate: `evaltape grade --baseline` exits 1 when a metric mean got worse by more than
# 0.10 (evaltape's "critical" level); --threshold and EVALTAPE_STRICT add their own checks.
# A run without a baseline fails (write one with --update). Exit codes: 0 all runs pass the
# gates; 1 a gate failed; 2 usage; 3 bad input (a run or report evaltape cannot read).
set -uo pipefail

RUNS="${EVALTAPE_RUNS:-runs}"
BASELINES="${EVALTAPE_BASELINES:-evaltape-baselines}"
OUT="${EVALTAPE_OUT:-evaltape-reports}"
THRESHOLD="${EVALTAPE_THRESHOLD:-}"
STRICT="${EVALTAPE_STRICT:-0}"
PYTHON="${EVALTAPE_PYTHON:-python3}"
UPDATE=0
case "${1:-}" in
  "") ;;
  --update) UPDATE=1 ;;
  *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac

if [ -n "${EVALTAPE_INSTALL:-}" ]; then
  "$PYTHON" -m pip install --quiet "$EVALTAPE_INSTALL" || exit 2
fi
command -v evaltape >/dev/null || { echo "evaltape is not on PATH" >&2; exit 2; }
[ -d "$RUNS" ] || { echo "no runs folder: $RUNS (set EVALTAPE_RUNS)" >&2; exit 2; }

summary() {  # append stdin to the GitHub job summary when there is one
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat >> "$GITHUB_STEP_SUMMARY"; else cat >/dev/null; fi
}

baseline_metrics() {  # the metric names a baseline report was graded with, comma-separated
  "$PYTHON" - "$1" <<'PY'
import json, sys
try:
    specs = json.load(open(sys.argv[1]))["grader"]["metric_specs"]
    print(",".join(s["name"] for s in specs))
except (OSError, ValueError, KeyError, TypeError):
    print("")
PY
}

strict_findings() {  # pass→fail flips and warning-level metric drops, from the comparison
  "$PYTHON" - "$1" <<'PY'
import json, sys
cmp = json.load(open(sys.argv[1])).get("baseline_comparison") or {}
found = [f"{f['case_id']}#t{f['trial']} pass→fail" for f in cmp.get("flips", []) if f["before"]]
found += [f"{m['name']} {m['before']}→{m['after']}" for m in cmp.get("metrics", [])
          if m.get("level") in ("warning", "critical")]
print("; ".join(found))
PY
}

worst=0
found=0
mkdir -p "$OUT"
for run in "$RUNS"/*/; do
  run="${run%/}"
  [ -f "$run/traces.jsonl" ] || continue
  found=$((found + 1))
  name="$(basename "$run")"
  base="$BASELINES/$name/report.json"
  args=(grade "$run" --out "$OUT/$name" --format json,md,html,junit --quiet)
  metrics="${EVALTAPE_METRICS:-}"
  if [ -z "$metrics" ] && [ -f "$base" ]; then metrics="$(baseline_metrics "$base")"; fi
  [ -n "$metrics" ] && args+=(--metrics "$metrics")
  [ -n "$THRESHOLD" ] && args+=(--threshold "$THRESHOLD")
  [ "$UPDATE" = 0 ] && [ -f "$base" ] && args+=(--baseline "$base")

  evaltape "${args[@]}" 2> "$OUT/$name.log"
  rc=$?
  verdict="pass"
  if [ "$rc" -ge 2 ]; then
    verdict="error (exit $rc)"
  elif [ "$UPDATE" = 1 ]; then
    mkdir -p "$BASELINES/$name" && cp "$OUT/$name/report.json" "$base"
    verdict="baseline written: $base"
    rc=0
  elif [ ! -f "$base" ]; then
    verdict="FAIL: no baseline $base (run with --update to write it)"
    rc=1
  elif [ "$rc" -eq 1 ]; then
    verdict="FAIL: $(grep -m1 '^Error: ' "$OUT/$name.log" | sed 's/^Error: //' \
      || true)"
  elif [ "$STRICT" = 1 ]; then
    findings="$(strict_findings "$OUT/$name/report.json")"
    if [ -n "$findings" ]; then verdict="FAIL (strict): $findings"; rc=1; fi
  fi
  echo "$name: $verdict" >&2
  [ "$rc" -ne 0 ] && cat "$OUT/$name.log" >&2
  {
    echo "# evaltape: \`$name\` — $verdict"
    echo
    [ -f "$OUT/$name/report.md" ] && cat "$OUT/$name/report.md"
    echo
  } | summary
  [ "$rc" -gt "$worst" ] && worst=$rc  # 3 (bad input) > 2 (usage) > 1 (gate) > 0
done
if [ "$found" -eq 0 ]; then
  echo "no run (a folder with traces.jsonl) under $RUNS" >&2
  exit 2
fi
exit "$worst"
