# evaltape — make targets. Everything runs inside .venv (created on first use).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
RUN    ?= cassettes/helpdesk-qwen1.5b
DATASET ?= datasets/helpdesk_eval.json
AGENT  ?= helpdesk
OUT    ?= runs/$(AGENT)-$(notdir $(basename $(DATASET)))
TRIALS ?= 1
ARGS   ?=
# pytest-xdist processes for `make test`: two per core (the end-to-end tests spend much of
# their time waiting on the processes and servers they start, so a second worker per core
# fills that time: 4:00 against 5:27 with one per core on a 2-core machine)
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(2 * (os.cpu_count() or 1))")

.PHONY: install grade record replay test bench bench-grounding audit check-golden update-golden \
        clean local-model serve-local record-local stop-local node-agents

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

## grade: offline scoring of the committed run (no key, no network)
grade: install
	$(BIN)/evaltape grade $(RUN) $(ARGS)

## record: run the live agent (needs ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL)
record: install
	$(BIN)/evaltape record $(DATASET) --agent $(AGENT) --out $(OUT) --trials $(TRIALS) $(ARGS)

## replay: re-run every committed run against its cassettes, offline
replay: install
	@set -e; for run in cassettes/*/; do $(BIN)/evaltape replay $$run; done

## test: the whole suite, spread over TEST_WORKERS processes (slow end-to-end tests first)
## (the package is byte-compiled first: every `python -m evaltape.cli` a test starts reads it)
test: install
	$(BIN)/python -m compileall -q grader recorder src
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal

## node-agents: the non-Python example agents of docs/proxy.md (Node SDK agent, Claude Code
## CLI), installed from the npm registry into examples/*/node_modules (git-ignored)
node-agents:
	npm ci --prefix examples/node-agent --no-audit --no-fund
	npm ci --prefix examples/claude-code --no-audit --no-fund

## check-golden: re-grade every committed run and compare with tests/golden/ (exit 1 on change)
check-golden: install
	$(BIN)/python scripts/check_golden.py

## update-golden: rewrite tests/golden/ on purpose; review its diff
update-golden: install
	$(BIN)/python scripts/check_golden.py --update

audit: install
	$(BIN)/evaltape audit cassettes

## bench: throughput and concurrency ratios, then every scripts/bench_*.py (grounding's
## precision/recall and confusion counts on bench/grounding/episodes.jsonl among them)
bench: install
	$(BIN)/python scripts/bench.py

## bench-grounding: only the grounding benchmark, every miss listed
bench-grounding: install
	$(BIN)/python scripts/bench_grounding.py -v

## local model (docs/local-model.md): llama-server + Qwen2.5-Coder on 127.0.0.1, no API key.
## Builds/fetches once into ~/.cache/evaltape (never into the repo); CI never runs these.
LOCAL_MODEL ?= qwen1.5b
# A new folder under runs/ (git-ignored): recording into a committed cassettes/ folder
# resumes it, so a fresh clone would record nothing. Refreshing a committed run:
# docs/local-model.md, "Reproducing and refreshing a committed run".
LOCAL_OUT   ?= runs/$(AGENT)-$(LOCAL_MODEL)

local-model: install
	$(BIN)/python scripts/local_model.py setup --model $(LOCAL_MODEL)

serve-local: install
	$(BIN)/python scripts/local_model.py serve --model $(LOCAL_MODEL)

record-local: install
	$(BIN)/python scripts/local_model.py record $(DATASET) --agent $(AGENT) --out $(LOCAL_OUT) --trials $(TRIALS) --model $(LOCAL_MODEL) $(ARGS)

stop-local:
	$(BIN)/python scripts/local_model.py stop

clean:
	rm -rf $(VENV) reports .pytest_cache examples/*/node_modules
