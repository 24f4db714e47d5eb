#!/usr/bin/env bash
# Replay and re-grade the agent runs committed to this repository against their committed
# baseline reports, offline (no API key, no network besides the install), and fail on a gate.
#
#   examples/ci/evaltape-ci.sh            # replay every run, grade it, compare, gate
#   examples/ci/evaltape-ci.sh --update   # write the new reports as the baselines (review the diff)
#
# Layout: one folder, evals/, in your repository (change with the variables below):
#   evals/runs/<name>/               a recorded or imported run (traces.jsonl, manifest.json,
#                                    http/), committed
#   evals/baselines/<name>/report.json   its accepted report, committed
#   evals/reports/<name>/            written here: report.json, report.md, report.html (the
#                                    evaltape view page; report-data/ beside it for a large
#                                    run), junit.xml; NOT committed: copy
#                                    examples/ci/evals/.gitignore to evals/.gitignore (the
#                                    recipe warns while git would commit the reports)
# Record into evals/runs/ with `evaltape record ... --out evals/runs/<name>` (a plain
# runs/ folder is where evaltape's own repository keeps experiments, and ignores it).
#
# Variables:
#   EVALTAPE_INSTALL    pip requirement to install first ("" = evaltape is already installed;
#                       replay needs the recorder: evaltape[record]); no package index
#                       serves evaltape: a git URL, "evaltape[record] @
#                       git+https://github.com/<owner>/evaltape@v0.1.0", or a path,
#                       "./vendor/evaltape[record]"
#   EVALTAPE_AGENT_INSTALL  pip arguments that install YOUR agent's own dependencies, which
#                       `evaltape replay` imports with the agent (module:function):
#                       "-r requirements.txt", "-e ." for a package; "" = none
#   EVALTAPE_PYTHON     the Python both installs go into and evaltape runs with
#                       (default: python3)
#   EVALTAPE_RUNS       folder of runs                       (default: evals/runs)
#   EVALTAPE_BASELINES  folder of baseline reports          (default: evals/baselines)
#   EVALTAPE_OUT        folder for the new reports           (default: evals/reports)
#   EVALTAPE_METRICS    metrics to grade with (default: those the baseline report used,
#                       else evaltape's default set)
#   EVALTAPE_CONFIG     --config file for grade (default: grade's own discovery of
#                       ./evaltape.toml or [tool.evaltape] in ./pyproject.toml)
#   EVALTAPE_THRESHOLD  also fail when a run's pass_rate is below this (0..1; default: none)
#   EVALTAPE_STRICT     1 = fail on the comparison's warnings too: any case with fewer
#                       passes, a mean worse by more than 0.05, a metric no longer graded
#                       (default: 1); 0 = fail on its failures only
#   EVALTAPE_REPLAY     1 = replay each recorded run first (default: 1); 0 = skip (say so)
#   GITHUB_STEP_SUMMARY set by GitHub Actions: the Markdown reports are appended to it
#
# Each run: `evaltape replay RUN` re-runs its agent against its cassettes (a run whose
# agent changed since recording no longer reproduces: the job fails with the divergence);
# an imported run has no agent to re-run and is graded only. Then `evaltape grade
# --baseline` applies evaltape's gate: an episode of the same recording that went from pass
# to fail, a case whose new recordings pass significantly less often (Fisher's exact test)
# or no longer at all, an episode of the baseline missing now, a mean worse by more than
# 0.10 -- and, strict, every warning. Every run prints why it passed or failed; the
# reports written (report.md, report.html, junit.xml) state the same gate, strict
# included. A run whose replay failed is graded without the comparison (a gate over a
# recording the agent no longer makes would read "pass"): its verdict is the replay's FAIL.
# A run without a baseline fails (write one with --update), and so does a committed
# baseline without its run folder (a run deleted or renamed: its gate would be off; delete
# the baseline folder to retire it), with or without --update; a folder under the runs
# folder without traces.jsonl is bad input. Each is named. Exit codes: 0 all runs pass;
# 1 a gate failed (replay divergence and a baseline without its run included); 2 usage;
# 3 bad input (a run or report evaltape cannot read, a run folder without traces.jsonl).
set -uo pipefail
# the job writes nothing in the work tree but its reports (no __pycache__ beside your agent)
export PYTHONDONTWRITEBYTECODE=1

RUNS="${EVALTAPE_RUNS:-evals/runs}"
BASELINES="${EVALTAPE_BASELINES:-evals/baselines}"
OUT="${EVALTAPE_OUT:-evals/reports}"
THRESHOLD="${EVALTAPE_THRESHOLD:-}"
STRICT="${EVALTAPE_STRICT:-1}"
REPLAY="${EVALTAPE_REPLAY:-1}"
for flag in STRICT REPLAY; do  # a switch is 0 or 1: "true" or "yes" must not turn a check off
  case "${!flag}" in
    0|1) ;;
    *) echo "EVALTAPE_$flag must be 0 or 1, not '${!flag}'" >&2; exit 2 ;;
  esac
done
CONFIG="${EVALTAPE_CONFIG:-}"
PYTHON="${EVALTAPE_PYTHON:-python3}"
UPDATE=0
case "${1:-}" in
  "") ;;
  --update) UPDATE=1 ;;
  *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac

if [ -n "${EVALTAPE_INSTALL:-}" ]; then
  case "$EVALTAPE_INSTALL" in
    *"<owner>"*)
      echo "EVALTAPE_INSTALL still says <owner> ($EVALTAPE_INSTALL): name the git" \
           "repository your evaltape comes from, or a path to it (see evaltape.yml)" >&2
      exit 2 ;;
  esac
  # an old pip (23.2, as some virtual environments bundle) misreads "name @ git+file://..."
  "$PYTHON" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  "$PYTHON" -m pip install --quiet "$EVALTAPE_INSTALL" || {
    echo "cannot install EVALTAPE_INSTALL=$EVALTAPE_INSTALL (pip's message above)" >&2
    exit 2
  }
fi
if [ -n "${EVALTAPE_AGENT_INSTALL:-}" ]; then
  # word-split on purpose: pip arguments, "-r requirements.txt" or "-e ."
  # shellcheck disable=SC2086
  "$PYTHON" -m pip install --quiet $EVALTAPE_AGENT_INSTALL || {
    echo "cannot install your agent's dependencies, EVALTAPE_AGENT_INSTALL=" \
         "$EVALTAPE_AGENT_INSTALL (pip's message above)" >&2
    exit 2
  }
fi
"$PYTHON" -c "import evaltape.cli" 2>/dev/null || {
  echo "evaltape is not installed for $PYTHON (set EVALTAPE_INSTALL or EVALTAPE_PYTHON)" >&2
  exit 2
}
evaltape() {  # the evaltape of $PYTHON, the environment the agent's dependencies went into
  "$PYTHON" -m evaltape.cli "$@"
}
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

imported() {  # the import format when the run was imported (no agent to replay), else ""
  "$PYTHON" - "$1" <<'PY'
import json, sys
try:
    print((json.load(open(sys.argv[1])).get("imported") or {}).get("format") or "")
except (OSError, ValueError, AttributeError):
    print("")
PY
}

worst=0
found=0
mkdir -p "$OUT"
# the reports are build output: warn while git would commit them (exit 1 of check-ignore:
# inside this work tree and not ignored; 128: no git, or outside the work tree)
if command -v git >/dev/null; then
  git check-ignore -q "$OUT" 2>/dev/null
  if [ $? -eq 1 ]; then
    echo "warning: $OUT is not ignored by git: copy examples/ci/evals/.gitignore to" \
         "evals/.gitignore (or add $OUT/ to your .gitignore)" >&2
  fi
fi
for run in "$RUNS"/*/; do
  run="${run%/}"
  [ -d "$run" ] || continue  # (no folder at all: the glob itself)
  found=$((found + 1))
  if [ ! -f "$run/traces.jsonl" ]; then  # a run that cannot be graded: its gate would be off
    name="$(basename "$run")"
    verdict="error (exit 3): no traces.jsonl in $run (a run folder holds the run's traces;"
    verdict="$verdict restore it, or remove the folder and its baseline to retire the run)"
    echo "$name: $verdict" >&2
    printf '# evaltape: `%s` — %s\n\n' "$name" "$verdict" | summary
    worst=3
    continue
  fi
  name="$(basename "$run")"
  base="$BASELINES/$name/report.json"
  log="$OUT/$name.log"
  : > "$log"

  # 1. replay: the committed recording must still be what the agent does
  replayed=""
  rrc=0
  if [ "$REPLAY" != 1 ]; then
    replayed="replay skipped (EVALTAPE_REPLAY=$REPLAY)"
  elif [ -n "$(imported "$run/manifest.json")" ]; then
    replayed="replay skipped (imported from $(imported "$run/manifest.json"): no agent to re-run)"
  else
    evaltape replay "$run" 2>> "$log"
    rrc=$?
    if [ "$rrc" -eq 0 ]; then
      replayed="$(grep -m1 '^replay ok: ' "$log" || echo "replay ok")"
    else
      replayed="replay FAILED: $(grep -m1 '^Error: ' "$log" | sed 's/^Error: //' || true)"
    fi
  fi

  # 2. grade against the baseline
  args=(grade "$run" --out "$OUT/$name" --format json,md,html,junit --quiet)
  metrics="${EVALTAPE_METRICS:-}"
  if [ -z "$metrics" ] && [ -f "$base" ]; then metrics="$(baseline_metrics "$base")"; fi
  [ -n "$metrics" ] && args+=(--metrics "$metrics")
  [ -n "$CONFIG" ] && args+=(--config "$CONFIG")
  [ -n "$THRESHOLD" ] && args+=(--threshold "$THRESHOLD")
  if [ "$UPDATE" = 0 ] && [ -f "$base" ] && [ "$rrc" -eq 0 ]; then
    args+=(--baseline "$base")
    [ "$STRICT" = 1 ] && args+=(--strict)
  elif [ "$UPDATE" = 0 ] && [ -f "$base" ]; then
    # the recording no longer is what the agent does: a gate over it would say "pass" for
    # a run that failed; the reports are still written, without a comparison
    echo "gate: not applied (the replay failed: the committed recording is no longer what" \
         "the agent does; re-record it, then compare)" >> "$log"
  fi
  evaltape "${args[@]}" 2>> "$log"
  rc=$?
  gate="$(grep -m1 '^gate: ' "$log" || true)"
  if [ "$rc" -ge 2 ]; then
    verdict="error (exit $rc): $(grep -m1 '^Error: ' "$log" | sed 's/^Error: //' || true)"
  elif [ "$rrc" -ge 2 ]; then
    verdict="error (replay exit $rrc): ${replayed#replay FAILED: }"
    rc=$rrc
  elif [ "$UPDATE" = 1 ]; then
    mkdir -p "$BASELINES/$name" && cp "$OUT/$name/report.json" "$base"
    verdict="baseline written: $base"
    rc=$rrc
  elif [ ! -f "$base" ]; then
    verdict="FAIL: no baseline $base (run with --update to write it)"
    rc=1
  elif [ "$rrc" -eq 1 ]; then
    verdict="FAIL: $replayed"
    rc=1
  elif [ "$rc" -eq 1 ]; then
    verdict="FAIL: $(grep '^Error: ' "$log" | tail -1 | sed 's/^Error: //' || true)"
  else
    verdict="pass: $replayed; ${gate:-gate: not compared}"
  fi
  echo "$name: $verdict" >&2
  cat "$log" >&2  # why, in both cases: replay, notes, the comparison and its gate
  {
    echo "# evaltape: \`$name\` — $verdict"
    echo
    echo "- $replayed"
    echo
    [ -f "$OUT/$name/report.md" ] && cat "$OUT/$name/report.md"
    echo
  } | summary
  [ "$rc" -gt "$worst" ] && worst=$rc  # 3 (bad input) > 2 (usage) > 1 (gate) > 0
done
# a committed baseline whose run is gone (deleted, renamed): its gate would be off silently
for base in "$BASELINES"/*/report.json; do
  [ -f "$base" ] || continue  # (no baseline at all: the glob itself)
  name="$(basename "$(dirname "$base")")"
  [ -d "$RUNS/$name" ] && continue
  verdict="FAIL: baseline $base has no run $RUNS/$name (deleted or renamed: restore the run,"
  verdict="$verdict or delete the baseline folder to retire its gate)"
  echo "$name: $verdict" >&2
  printf '# evaltape: `%s` — %s\n\n' "$name" "$verdict" | summary
  [ "$worst" -lt 1 ] && worst=1
done
if [ "$found" -eq 0 ]; then
  echo "no run (a folder with traces.jsonl) under $RUNS" >&2
  exit 2
fi
exit "$worst"
