"""A corpus of hostile inputs for the command line, generated into a folder.

Each :class:`Hostile` is one kind of bad input (a wrong type, a wrong shape, a name that
breaks a file system or a terminal, an unreadable folder...), written as small files under
its own folder, with the command that reads them and the exit code DESIGN.md §6 requires:
3 for bad input (the message names the file, and the line and field when there is one),
2 for usage, 1 only for a failed gate, 0 when the input is odd but valid.

``python tests/hostile_corpus.py DIR`` writes the corpus to ``DIR`` (one folder per case and
an ``index.json``) so it can be replayed by hand; ``tests/test_hostile_inputs.py`` builds it
into a temporary folder and runs every case in CI.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

#: The one-case dataset the issue's reproductions use.
DATASET = [{"id": "c", "user_query": "hi"}]


def trace(**over) -> dict:
    """A valid trace of case ``c`` with ``over`` applied (a ``None`` value drops the key)."""
    t = {"schema": "evaltape.trace/1", "case_id": "c", "trial": 0, "input": "hi",
         "tool_calls": [{"id": "t1", "name": "lookup", "arguments": {"q": "x"},
                         "result": "{}", "is_error": False, "step": 1}],
         "final_response": "done", "stop_reason": "end_turn", "steps": 2,
         "messages": [{"role": "user", "content": "hi"}],
         "usage": {"input_tokens": 3, "output_tokens": 4}, "latency_s": 0.1,
         "model": "m", "error": None}
    for k, v in over.items():
        if v is None:
            t.pop(k, None)
        else:
            t[k] = v
    return t


def call(**over) -> dict:
    """A valid tool call with ``over`` applied."""
    c = {"id": "t1", "name": "lookup", "arguments": {"q": "x"}, "result": "{}",
         "is_error": False, "step": 1}
    c.update(over)
    return c


@dataclass
class Hostile:
    """One hostile input: files to write, the command, and what a correct CLI does.

    Attributes:
        name: folder name of the case (also the pytest id).
        files: relative path → text (``str``), raw ``bytes``, or a JSON value.
        argv: the ``evaltape`` arguments; ``{d}`` is replaced by the case's folder.
        code: the exit code required (DESIGN.md §6).
        names: substrings stderr must hold (file, ``:line``, ``field '...'``); ``{d}``
            is replaced as in ``argv``.
        setup: an optional callable run on the case folder after the files are written
            (e.g. to remove permissions); ``teardown`` undoes it.
    """

    name: str
    files: dict
    argv: list
    code: int
    names: list = field(default_factory=list)
    setup: Callable[[Path], None] | None = None
    teardown: Callable[[Path], None] | None = None


def _jsonl(*rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _grade_trace(name: str, tr: dict, *, line_field: str, code: int = 3) -> Hostile:
    """``grade traces.jsonl --dataset d.json`` on one bad trace at line 2 (line 1 is valid)."""
    good = trace(case_id="c")
    other = dict(tr)
    return Hostile(name, {"d.json": DATASET + [{"id": "c2", "user_query": "hi"}],
                          "traces.jsonl": _jsonl(good, {**other, "case_id": "c2"})},
                   ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                    "--out", "{d}/out"], code, ["traces.jsonl:2", f"field '{line_field}'"])


def _metric_source(name: str, details: str) -> str:
    """A user metric module ``M`` called ``name`` whose score has ``details`` (Python)."""
    return ("from dataclasses import dataclass\nfrom typing import ClassVar\n"
            "import evaltape\n\n@dataclass(frozen=True)\nclass M(evaltape.Metric):\n"
            f"    name: ClassVar[str] = {name!r}\n    version: ClassVar[int] = 1\n\n"
            "    def score(self, ctx):\n"
            f"        return evaltape.Score(1.0, {details})\n")


def _chmod(mode: int, path: str = "run") -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        (d / path).chmod(mode)
    return apply


def corpus() -> list[Hostile]:
    """Every hostile case, in a stable order."""
    cases: list[Hostile] = []
    add = cases.append
    # --- traces: wrong types of fields the grader reads
    add(_grade_trace("trace_step_string", trace(tool_calls=[call(step="abc")]),
                     line_field="tool_calls[0].step"))
    add(_grade_trace("trace_step_negative", trace(tool_calls=[call(step=-1)]),
                     line_field="tool_calls[0].step"))
    add(_grade_trace("trace_step_float", trace(tool_calls=[call(step=1.5)]),
                     line_field="tool_calls[0].step"))
    add(_grade_trace("trace_messages_int", trace(messages=5), line_field="messages"))
    add(_grade_trace("trace_messages_item_string", trace(messages=["x"]),
                     line_field="messages[0]"))
    add(_grade_trace("trace_usage_string_count", trace(usage={"input_tokens": "many"}),
                     line_field="usage.input_tokens"))
    add(_grade_trace("trace_usage_float_count", trace(usage={"output_tokens": 1.5}),
                     line_field="usage.output_tokens"))
    add(_grade_trace("trace_usage_list", trace(usage=[1, 2]), line_field="usage"))
    add(_grade_trace("trace_call_id_object", trace(tool_calls=[call(id={"a": 1})]),
                     line_field="tool_calls[0].id"))
    add(_grade_trace("trace_is_error_string", trace(tool_calls=[call(is_error="no")]),
                     line_field="tool_calls[0].is_error"))
    add(_grade_trace("trace_latency_string", trace(latency_s="fast"), line_field="latency_s"))
    add(_grade_trace("trace_model_int", trace(model=5), line_field="model"))
    add(_grade_trace("trace_error_list", trace(error=[1]), line_field="error"))
    add(_grade_trace("trace_trial_bool", trace(trial=True), line_field="trial"))
    add(_grade_trace("trace_huge_int_steps", trace(steps=10 ** 30), line_field="steps"))
    add(_grade_trace("trace_infra_error_int", trace(infra_error=5), line_field="infra_error"))
    add(_grade_trace("trace_unfinished_string", trace(unfinished="yes"),
                     line_field="unfinished"))
    add(_grade_trace("trace_timing_turn_latency_string",
                     trace(timing={"turns": [{"step": 1, "latency_s": "slow"}]}),
                     line_field="timing.turns[0].latency_s"))
    add(_grade_trace("trace_call_duration_negative", trace(tool_calls=[call(duration_s=-1)]),
                     line_field="tool_calls[0].duration_s"))
    # --- traces that are not JSON (handled before; kept as regression)
    for name, raw in (("trace_truncated_line", b'{"schema": "evaltape.trace/1", "case_'),
                      ("trace_invalid_utf8", b'{"schema": "\xff\xfe"}'),
                      ("trace_nan", b'{"schema": "evaltape.trace/1", "trial": NaN}'),
                      ("trace_deep_nesting", b"[" * 100_000 + b"]" * 100_000)):
        add(Hostile(name, {"d.json": DATASET,
                           "traces.jsonl": _jsonl(trace()).encode() + raw + b"\n"},
                    ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                     "--out", "{d}/out"], 3, ["traces.jsonl:2"]))
    # the position of a byte that is not UTF-8 (orjson names none): `{"schema": "é` is 13
    # characters (é one, though two bytes), so the bad byte is at column 14
    add(Hostile("trace_invalid_utf8_mid_line", {"d.json": DATASET, "traces.jsonl": _jsonl(
        trace()).encode() + '{"schema": "é'.encode() + b'\xff"}\n'},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--out", "{d}/out"], 3,
                ["traces.jsonl:2: not valid JSON (not UTF-8: byte 0xff at column 14)"]))
    add(Hostile("trace_bom", {"d.json": DATASET,
                              "traces.jsonl": b"\xef\xbb\xbf" + _jsonl(trace()).encode()},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--out", "{d}/out"], 3, ["traces.jsonl:1", "BOM"]))
    # --- gates and usage: 1 only for a gate
    add(Hostile("gate_threshold_fails", {"d.json": [{"id": "c", "user_query": "hi",
                                                     "expected_tools": ["other"]}],
                                         "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--threshold", "0.9", "--out", "{d}/out"], 1, ["0.9"]))
    add(Hostile("usage_unknown_metric", {"d.json": DATASET, "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--metrics", "no_such_metric", "--out", "{d}/out"], 2, ["no_such_metric"]))
    add(Hostile("require_complete_names_missing_trial",
                {"d.json": DATASET + [{"id": "c2", "user_query": "hi"}],
                 "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--require-complete", "--out", "{d}/out"], 1, ["c2"]))
    # --- datasets
    for i, bad in enumerate((5, True, ["a"])):
        add(Hostile(f"dataset_difficulty_{i}", {"d.json": [{"id": "c", "user_query": "hi",
                                                            "difficulty": bad}],
                                                "traces.jsonl": _jsonl(trace())},
                    ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                     "--out", "{d}/out"], 3, ["d.json", "difficulty"]))
    add(Hostile("case_id_300_chars", {"d.json": [{"id": "x" * 300, "user_query": "hi"}],
                                      "traces.jsonl": _jsonl(trace(case_id="x" * 300))},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--format", "json,md,junit,html", "--out", "{d}/out"], 0))
    # --- manifests of the wrong shape
    for name, manifest in (("manifest_dataset_string", {"dataset": "d.json"}),
                           ("manifest_cases_list", {"dataset": {"path": "d.json",
                                                                "cases": ["c"]}}),
                           ("manifest_path_int", {"dataset": {"path": 5}})):
        add(Hostile(name, {"run/manifest.json": manifest, "run/traces.jsonl": _jsonl(trace()),
                           "d.json": DATASET},
                    ["grade", "{d}/run", "--quiet", "--out", "{d}/out"], 3,
                    ["manifest.json", "dataset"]))
    # --- configuration files
    add(Hostile("config_tool_string", {"c.toml": 'tool = "x"\n', "d.json": DATASET,
                                       "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--config", "{d}/c.toml", "--out", "{d}/out"], 3, ["c.toml", "tool"]))
    add(Hostile("config_evaltape_string", {"pyproject.toml": '[tool]\nevaltape = "x"\n',
                                           "d.json": DATASET,
                                           "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--config", "{d}/pyproject.toml", "--out", "{d}/out"], 3,
                ["pyproject.toml", "tool.evaltape"]))
    add(Hostile("config_arg_wrong_type",
                {"c.toml": '[metrics_args.composite]\nweights = "heavy"\n',
                 "d.json": DATASET, "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--metrics", "composite", "--config", "{d}/c.toml", "--out", "{d}/out"], 3,
                ["c.toml", "metrics_args.composite.weights"]))
    add(Hostile("config_arg_table_item_type",
                {"c.toml": '[metrics_args.composite]\nweights = {tools = "a"}\n',
                 "d.json": DATASET, "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--metrics", "composite", "--config", "{d}/c.toml", "--out", "{d}/out"], 3,
                ["c.toml", "metrics_args.composite.weights.tools"]))
    add(Hostile("config_unknown_argument",
                {"c.toml": '[metrics_args.composite]\nwieghts = 1\n',
                 "d.json": DATASET, "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--metrics", "composite", "--config", "{d}/c.toml", "--out", "{d}/out"], 3,
                ["c.toml", "metrics_args.composite"]))
    # --- user metrics (kept as regression: handled before)
    add(Hostile("metric_raises_runtimeerror_on_import",
                {"badmetric_rt.py": "raise RuntimeError('boom at import')\n",
                 "d.json": DATASET, "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--metrics", "badmetric_rt:M", "--out", "{d}/out"], 2, ["badmetric_rt"]))
    add(Hostile("metric_syntax_error",
                {"badmetric_syn.py": "def (:\n", "d.json": DATASET,
                 "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--metrics", "badmetric_syn:M", "--out", "{d}/out"], 2, ["badmetric_syn"]))
    add(Hostile("metric_shadows_builtin",
                {"shadowmetric.py": _metric_source("task_completion", "'x'"),
                 "d.json": DATASET, "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--metrics", "task_completion,shadowmetric:M", "--out", "{d}/out"], 2,
                ["task_completion"]))
    add(Hostile("metric_dict_details",
                {"dictmetric.py": _metric_source("dict_details", "{'a': 1}"),
                 "d.json": DATASET, "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--metrics", "dictmetric:M", "--format", "json,md,junit,html",
                 "--out", "{d}/out"], 0))
    # --- names that reach the terminal (rich markup, escape sequences)
    add(Hostile("markup_in_model_name", {
        "d.json": DATASET, "run/traces.jsonl": _jsonl(trace(model="llama[/q4]")),
        "run/manifest.json": {"schema": "evaltape.manifest/1", "agent": "a[b]",
                              "model": "llama[/q4]"}},
                ["grade", "{d}/run", "--dataset", "{d}/d.json", "--out", "{d}/out"], 0))
    add(Hostile("markup_in_run_folder", {"exp[/v2]/traces.jsonl": _jsonl(trace()),
                                         "d.json": DATASET},
                ["grade", "{d}/exp[/v2]/traces.jsonl", "--dataset", "{d}/d.json",
                 "--out", "{d}/out"], 0))
    add(Hostile("escape_in_answer", {"d.json": DATASET, "traces.jsonl": _jsonl(
        trace(final_response="\x1b[2J\x1b]0;pwned\x07done"))},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--out",
                 "{d}/out"], 0))
    # --- folders and files the OS refuses
    add(Hostile("run_folder_mode_000", {"run/traces.jsonl": _jsonl(trace()),
                                        "d.json": DATASET},
                ["grade", "{d}/run", "--dataset", "{d}/d.json", "--quiet", "--out",
                 "{d}/out"], 3, ["run"], setup=_chmod(0), teardown=_chmod(0o755)))
    for workers in ("1", "2"):
        add(Hostile(f"traces_file_mode_000_workers_{workers}",
                    {"run/traces.jsonl": _jsonl(trace()), "d.json": DATASET},
                    ["grade", "{d}/run", "--dataset", "{d}/d.json", "--quiet", "--workers",
                     workers, "--out", "{d}/out"], 3,
                    ["{d}/run/traces.jsonl: cannot read: Permission denied"],
                    setup=_chmod(0, "run/traces.jsonl"),
                    teardown=_chmod(0o644, "run/traces.jsonl")))
    chat = _jsonl([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    add(Hostile("import_subfolder_mode_000", {"src/a.jsonl": chat, "src/sub/b.jsonl": chat},
                ["import", "openai-messages", "{d}/src", "--out", "{d}/imp"], 3,
                ["{d}/src/sub: cannot read this folder (Permission denied)"],
                setup=_chmod(0, "src/sub"), teardown=_chmod(0o755, "src/sub")))
    add(Hostile("import_source_file_mode_000", {"src/a.jsonl": chat, "src/c.jsonl": chat},
                ["import", "openai-messages", "{d}/src", "--out", "{d}/imp"], 3,
                ["{d}/src/c.jsonl: cannot read: Permission denied",
                 "1 episode(s) or file(s) could not be imported"],
                setup=_chmod(0, "src/c.jsonl"), teardown=_chmod(0o644, "src/c.jsonl")))
    # the unreadable file is listed and the others are still scanned (a.jsonl's key found)
    add(Hostile("audit_file_mode_000", {"runs/a.jsonl": '{"k": "sk-ant-' + "a" * 24 + '"}\n',
                                        "runs/b.jsonl": "{}\n"},
                ["audit", "{d}/runs"], 3, ["{d}/runs/b.jsonl: cannot read (Permission denied)",
                                           "{d}/runs/a.jsonl:1: key-shaped string",
                                           "1 secret(s) found in 2 file(s); 1 file(s) or "
                                           "folder(s) could not be read"],
                setup=_chmod(0, "runs/b.jsonl"), teardown=_chmod(0o644, "runs/b.jsonl")))
    add(Hostile("audit_folder_mode_000", {"runs/a.jsonl": "{}\n", "runs/http/b.jsonl": "{}\n"},
                ["audit", "{d}/runs"], 3,
                ["{d}/runs/http: cannot read this folder (Permission denied); its files would "
                 "go unscanned"],
                setup=_chmod(0, "runs/http"), teardown=_chmod(0o755, "runs/http")))
    # a key where only a reader that decodes finds it: no live key is needed for any
    import base64 as _b64
    import gzip as _gzip
    key = "sk-ant-api03-" + "Zq7" * 20
    add(Hostile("audit_key_in_gzip_file", {"runs/r.json.gz": _gzip.compress(
        ('{"k": "' + key + '"}').encode())}, ["audit", "{d}/runs"], 3,
        ["{d}/runs/r.json.gz (compressed):1: key-shaped string (sk-ant-api…)"]))
    add(Hostile("audit_key_in_utf16_text", {"runs/n.txt": ("\ufeff" + key).encode("utf-16-le")},
                ["audit", "{d}/runs"], 3, ["{d}/runs/n.txt (UTF-16):1: key-shaped string"]))
    add(Hostile("audit_key_escaped_in_indented_json", {"runs/r.json": '{\n  "a": [\n    "'
                                                       + "\\u0073" + key[1:] + '"\n  ]\n}\n'},
                ["audit", "{d}/runs"], 3,
                ["{d}/runs/r.json:3: key-shaped string (sk-ant-api… in a JSON string)"]))
    add(Hostile("audit_key_as_base64_of_gzip_in_json", {"runs/t.jsonl": '{"b": "' + _b64.b64encode(
        _gzip.compress(key.encode())).decode() + '"}\n'}, ["audit", "{d}/runs"], 3,
        ["{d}/runs/t.jsonl:1: key-shaped string (sk-ant-api… in base64 › compressed)"]))
    add(Hostile("traces_symlink_loop", {"d.json": DATASET},
                ["grade", "{d}/run", "--dataset", "{d}/d.json", "--quiet", "--out", "{d}/out"],
                3, ["{d}/run/traces.jsonl: a symbolic link to nothing (or a loop of links)"],
                setup=_symlink_loop))
    add(Hostile("run_with_a_dataset_only", {"run/dataset.jsonl": _jsonl({"id": "c",
                                                                         "input": "q"}),
                                            "run/manifest.json": {"agent": "imported:bfcl"}},
                ["grade", "{d}/run", "--quiet", "--out", "{d}/out"], 3,
                ["{d}/run: this run holds a dataset and no episodes"]))
    add(Hostile("cases_without_expectations", {"d.json": [{"id": "c", "user_query": "hi"}],
                                               "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet", "--out",
                 "{d}/out"], 0,
                ["warning: 1 of 1 graded case(s) state no expectation",
                 "follow the rules for missing expectations", "not the task: c"]))
    add(Hostile("traces_in_run_is_a_fifo", {"d.json": DATASET},
                ["grade", "{d}/run", "--dataset", "{d}/d.json", "--quiet", "--out", "{d}/out"],
                3, ["{d}/run/traces.jsonl: not a regular file"], setup=_fifo("run/traces.jsonl")))
    add(Hostile("traces_file_is_a_fifo", {"d.json": DATASET},
                ["grade", "{d}/t.jsonl", "--dataset", "{d}/d.json", "--quiet", "--out",
                 "{d}/out"], 3, ["{d}/t.jsonl: not a regular file"], setup=_fifo("t.jsonl")))
    add(Hostile("dataset_is_a_fifo", {"traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet", "--out",
                 "{d}/out"], 3, ["{d}/d.json: not a regular file"], setup=_fifo("d.json")))
    add(Hostile("import_out_inside_its_source", {"src/a.jsonl": chat},
                ["import", "openai-messages", "{d}/src", "--out", "{d}/src/out", "--force"], 2,
                ["--out {d}/src/out is inside the source folder {d}/src"]))
    add(Hostile("traces_is_a_folder", {"run/traces.jsonl/x": "", "d.json": DATASET},
                ["grade", "{d}/run/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--out", "{d}/out"], 3, ["traces.jsonl"]))
    add(Hostile("out_is_a_file", {"out": "", "d.json": DATASET,
                                  "traces.jsonl": _jsonl(trace())},
                ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                 "--out", "{d}/out"], 2, ["--out {d}/out: is a file"]))
    # --- reports for diff
    add(Hostile("diff_unrelated_reports", {}, ["diff", "{d}/a/report.json",
                                               "{d}/b/report.json"], 2,
                ["different", "dataset"], setup=_two_unrelated_reports))
    add(Hostile("diff_unrelated_reports_allowed", {}, ["diff", "{d}/a/report.json",
                                                       "{d}/b/report.json",
                                                       "--allow-unrelated"], 0,
                ["warning: they were graded on different dataset inputs"],
                setup=_two_unrelated_reports))
    add(Hostile("diff_no_shared_episode", {}, ["diff", "{d}/a/report.json",
                                               "{d}/b/report.json", "--allow-unrelated"], 2,
                ["share no episode"], setup=lambda d: _two_unrelated_reports(d, "c2", "1")))
    add(Hostile("diff_baseline_without_its_episodes", {}, ["diff", "{d}/a/report.json",
                                                           "{d}/b/report.json"], 3,
                ["a/report.json: field 'episodes': the summary counts 1 episodes but the "
                 "report lists 0"], setup=_emptied_baseline))
    add(Hostile("diff_not_a_report", {"a.json": [1, 2], "b.json": {"x": 1}},
                ["diff", "{d}/a.json", "{d}/b.json"], 3, ["a.json"]))
    # --- record: agents and runs (no model needed: scripted agent or refusal before any call)
    add(Hostile("agent_raises_on_import",
                {"badagent_rt.py": "raise RuntimeError('agent boom')\n",
                 "d.json": DATASET},
                ["record", "{d}/d.json", "--agent", "badagent_rt:run", "--out", "{d}/run",
                 "--base-url", "http://127.0.0.1:9"], 2, ["badagent_rt", "agent boom"]))
    add(Hostile("agent_syntax_error",
                {"badagent_syn.py": "def run(:\n", "d.json": DATASET},
                ["record", "{d}/d.json", "--agent", "badagent_syn:run", "--out", "{d}/run",
                 "--base-url", "http://127.0.0.1:9"], 2, ["badagent_syn"]))
    add(Hostile("record_case_id_300_chars",
                {"d.json": [{"id": "x" * 300, "task": "hi", "script": ["fine"]}]},
                ["record", "{d}/d.json", "--agent", "scripted", "--out", "{d}/run"], 0))
    add(Hostile("record_case_ids_beyond_ascii",
                {"d.json": [{"id": i, "task": "hi", "script": ["fine"]}
                            for i in ("café", "😀", "\u202eRTL", "nul\u0000id", "new\nline",
                                      "pct%20x", " lead", "trail ")]},
                ["record", "{d}/d.json", "--agent", "scripted", "--out", "{d}/run"], 0))
    add(Hostile("record_command_case_id_with_nul",
                {"d.json": [{"id": "ok", "task": "hi", "script": ["fine"]},
                            {"id": "nul\u0000id", "task": "hi", "script": ["fine"]}]},
                ["record", "{d}/d.json", "--command", "true {input_file}", "--out", "{d}/run"],
                3, ["d.json:2: field 'id': a case id with a NUL character cannot reach a "
                    "--command program"]))
    for target in ("run/http/sum__t0.jsonl", "run/http"):
        add(Hostile(f"replay_cassette_mode_000_{target.count('/')}", {},
                    ["replay", "{d}/run", "--dataset", str(SEED002_DATASET)], 3,
                    ["cannot read the cassette (Permission denied)"],
                    setup=_seed002_run_with(target, 0), teardown=_chmod(0o755, target)))
        add(Hostile(f"merge_cassette_mode_000_{target.count('/')}", {},
                    ["merge", "{d}/run", "{d}/run2", "--out", "{d}/merged"], 3, [
                        "{d}/run/http" + ("/sum__t0.jsonl: cannot read this file" if "." in
                                          target else ": cannot read this folder")],
                    setup=_seed002_run_with(target, 0), teardown=_chmod(0o755, target)))
    add(Hostile("merge_out_inside_a_shard", {},
                ["merge", "{d}/run", "{d}/run2", "--out", "{d}/run/http/sub"], 2,
                ["--out {d}/run/http/sub: inside {d}/run, one of the runs to merge"],
                setup=_seed002_run_with("run", 0o755)))
    add(Hostile("record_out_mode_000", {"d.json": [{"id": "c", "task": "hi",
                                                   "script": ["fine"]}],
                                        "run/.keep": ""},
                ["record", "{d}/d.json", "--agent", "scripted", "--out", "{d}/run"], 2,
                ["run"], setup=_chmod(0), teardown=_chmod(0o755)))
    cases.extend(_nested_too_deep())
    cases.extend(_break_round())
    return cases


#: Report fields of the wrong type (``(block path, value)``) that crashed ``diff``,
#: ``grade --baseline`` and ``view`` (exit 70) before they were checked.
WRONG_REPORT_FIELDS = [
    (("summary", "cases"), "x"), (("summary", "trials"), [1]),
    (("summary", "infra_failures"), {"a": 1}), (("summary", "unrecorded_cases"), 7),
    (("summary", "verdict", "gate"), 7), (("summary", "verdict", "gate"), [[1]]),
    (("summary", "pass_at_k"), "x"), (("summary", "k_cases"), {"1": "x"}),
    (("grader", "metrics"), 7), (("grader", "lower_is_better"), [{"a": 1}]),
    (("grader", "metric_specs"), True), (("episodes", 0, "steps"), "x"),
    (("episodes", 0, "steps"), [1]),
    # summary.judge: a string where a count belongs, a number where a list belongs
    (("summary", "judge", "not_recorded"), "x"), (("summary", "judge", "truncated"), [1]),
    (("summary", "judge", "parse_failure"), -1), (("summary", "judge", "ambiguous"), 1.5),
    (("summary", "judge", "metrics"), 7), (("summary", "judge", "not_recorded_episodes"), 7),
    (("summary", "judge", "record_command"), [1]), (("summary", "judge", "stability"), 7),
    (("summary", "judge"), 7),
]


def _edited_report(where: tuple, value) -> Callable[[Path], None]:
    """Setup: two reports of one run (``a/``, ``b/``); ``b``'s field at ``where`` set."""
    def apply(d: Path) -> None:
        _two_unrelated_reports(d, "c", "1")
        doc = json.loads((d / "b" / "report.json").read_text())
        doc["summary"]["verdict"] = {"gate": ["task_completion"]}
        if where[:2] == ("summary", "judge") and len(where) > 2:  # a judged run's block
            doc["summary"]["judge"] = {
                "metrics": ["rubric_judge"], "not_recorded": 1, "truncated": 0,
                "parse_failure": 0, "ambiguous": 0, "not_recorded_episodes": ["c#t0:rubric_judge"],
                "record_command": "evaltape judge run", "stability": {}}
        cur = doc
        for k in where[:-1]:
            cur = cur[k]
        cur[where[-1]] = value
        (d / "b" / "report.json").write_text(json.dumps(doc))
    return apply


def _damaged_cassette(how: str) -> Callable[[Path], None]:
    """Setup: a copy of the seed-002 run and its dataset (where its manifest says, from the
    case folder), its ``sum`` cassette damaged as ``how`` says."""
    def apply(d: Path) -> None:
        shutil.copytree(SEED002_RUN, d / "run")
        (d / "datasets").mkdir()
        shutil.copyfile(SEED002_DATASET, d / "datasets" / SEED002_DATASET.name)
        c = d / "run" / "http" / "sum__t0.jsonl"
        data = c.read_bytes()
        if how == "truncated":
            c.write_bytes(data[:len(data) // 2])
        elif how == "not_utf8":
            c.write_bytes(b"\xff\xfe" + data)
        elif how == "wrong_shape":
            c.write_text('{"format": "evaltape.cassette/1"}\n[1, 2]\n')
        elif how == "folder":
            c.unlink()
            c.mkdir()
    return apply


def _tau2(**edit) -> dict:
    """A one-simulation τ²-bench results file with ``edit`` applied."""
    sim = {"task_id": "1", "trial": edit.get("trial", 0), "reward_info": {"reward": 1.0},
           "messages": edit.get("messages", [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "ok"}])}
    if "action_checks" in edit:
        sim["reward_info"]["action_checks"] = edit["action_checks"]
    doc = {"tasks": [{"id": "1", "user_scenario": {"instructions": "x"}}],
           "simulations": [sim]}
    if "info" in edit:
        doc["info"] = edit["info"]
    return doc


BIG = 10 ** 23  # beyond 64 bits


def _break_round() -> list[Hostile]:
    """Inputs a break round found crashing with exit 70: wrong-typed report fields in
    ``diff``, ``grade --baseline`` and ``view``; integers beyond 64 bits in the fields a
    case feeds the agent; ``record --refresh`` over damaged cassettes; τ²-bench files of
    the wrong shape."""
    out: list[Hostile] = []
    for i, (where, value) in enumerate(WRONG_REPORT_FIELDS):
        field = ".".join(str(k) for k in where).replace("episodes.0", "episodes[0]")
        out.append(Hostile(f"diff_report_field_{i}_{where[-1]}", {},
                           ["diff", "{d}/a/report.json", "{d}/b/report.json"], 3,
                           [f"b/report.json: field '{field}'"],
                           setup=_edited_report(where, value)))
        out.append(Hostile(f"diff_baseline_field_{i}_{where[-1]}", {},
                           ["diff", "{d}/b/report.json", "{d}/a/report.json"], 3,
                           [f"b/report.json: field '{field}'"],
                           setup=_edited_report(where, value)))
    out.append(Hostile("grade_baseline_report_field_cases_string", {},
                       ["grade", str(SEED002_RUN), "--baseline", "{d}/b/report.json", "--out",
                        "{d}/out", "--quiet"], 3, ["b/report.json: field 'summary.cases'"],
                       setup=_edited_report(("summary", "cases"), "x")))
    out.append(Hostile("view_report_pass_at_k_string", {},
                       ["view", "{d}/b/report.json", "--export", "{d}/page"], 3,
                       ["b/report.json: field 'summary.pass_at_k'"],
                       setup=_edited_report(("summary", "pass_at_k"), "x")))
    fed = {"max_steps": {"max_steps": BIG},
           "user_max_turns": {"user": {"turns": ["a"], "max_turns": BIG}},
           "tools": {"tools": [{"name": "t", "input_schema": {"type": "object",
                                                              "maxLength": BIG}}]},
           "initial_state": {"initial_state": {"a": [1, -BIG]}}}
    field = {"max_steps": "max_steps", "user_max_turns": "user.max_turns",
             "tools": "tools[0].input_schema.maxLength", "initial_state": "initial_state.a[1]"}
    for name, extra in fed.items():
        ds = [{"id": "c", "user_query": "hi", "script": ["fine"], **extra}]
        out.append(Hostile(f"record_int_beyond_64_bits_{name}", {"d.json": ds},
                           ["record", "{d}/d.json", "--agent", "scripted", "--out", "{d}/run"],
                           3, [f"d.json: field '[0].{field[name]}': an integer beyond 64 bits"]))
        out.append(Hostile(f"grade_int_beyond_64_bits_{name}",
                           {"d.json": ds, "traces.jsonl": _jsonl(trace())},
                           ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet",
                            "--out", "{d}/out"],
                           3, [f"d.json: field '[0].{field[name]}': an integer beyond 64 bits"]))
    for how, why in (("truncated", "cassette cannot be read: cassette line 3: not valid JSON"),
                     ("not_utf8", "cassette is not UTF-8 text"),
                     ("wrong_shape", "cassette cannot be read: cassette line 2: expected the "
                                     "header or an object"),
                     ("folder", "cassette is not a file")):
        out.append(Hostile(f"refresh_over_a_{how}_cassette", {},
                           ["record", f"datasets/{SEED002_DATASET.name}", "--agent", "scripted",
                            "--out", "run", "--refresh"], 3,
                           [f"run/http/sum__t0.jsonl: {why}"], setup=_damaged_cassette(how)))
    call = {"id": "c1", "name": "f", "arguments": {}}
    for name, doc, place in (
            ("action_string", _tau2(action_checks=[{"action": "x", "action_match": True}]),
             "simulations[0].reward_info.action_checks[0].action"),
            ("action_checks_object", _tau2(action_checks={"a": 1}),
             "simulations[0].reward_info.action_checks"),
            ("tool_message_id_list", _tau2(messages=[
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "id": ["c1"], "content": "r"},
                {"role": "assistant", "content": "ok"}]), "simulations[0].messages[2].id"),
            ("llm_object", _tau2(info={"agent_info": {"llm": {"name": "x"}}}),
             "info.agent_info.llm"),
            ("trial_negative", _tau2(trial=-1), "simulations[0].trial")):
        out.append(Hostile(f"import_tau2_{name}", {"t.json": doc},
                           ["import", "tau2", "{d}/t.json", "--out", "{d}/imp"], 3,
                           [f"t.json: {place}"]))
    return out


def _nest(depth: int, inner: str = "1") -> str:
    """``depth`` arrays, one inside the other, around ``inner`` (JSON text)."""
    return "[" * depth + inner + "]" * depth


#: What stderr says of a value nested deeper than evaltape reads (254 levels).
TOO_DEEP = "nested deeper than 254 levels of arrays and objects (the most evaltape reads)"


def _nested_too_deep() -> list[Hostile]:
    """Values nested deeper than the 254 levels evaltape reads (and orjson writes back), in
    every JSON file the grader reads: 300 levels (orjson reads them, cannot write them) and
    1,100 (beyond what orjson reads). Each is bad input naming file, line and JSON path."""
    out: list[Hostile] = []
    grade = ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--quiet", "--out",
             "{d}/out"]
    good = json.dumps(trace()) + "\n"
    for depth in (300, 1100):
        deep = json.dumps(trace(trial=1)).replace('{"q": "x"}', '{"q": ' + _nest(depth) + "}")
        out.append(Hostile(f"trace_nested_{depth}", {"d.json": DATASET,
                                                     "traces.jsonl": good + deep + "\n"},
                           grade, 3, ["traces.jsonl:2: field 'tool_calls[0].arguments.q[0][0]"
                                      "[0][0]…': " + TOO_DEEP]))
    # the dataset (an array: the line of the case; JSONL: the line), the run's manifest
    out.append(Hostile("dataset_nested_300", {
        "d.json": '[{"id": "c", "user_query": "hi"},\n {"id": "c2", "user_query": "hi", '
                  '"tags": ' + _nest(300, '"t"') + "}]", "traces.jsonl": good}, grade, 3,
        ["d.json:2: field '[1].tags[0][0][0][0][0][0]…': " + TOO_DEEP]))
    out.append(Hostile("dataset_jsonl_nested_1100", {
        "d.jsonl": '{"id": "c", "user_query": "hi"}\n{"id": "c2", "user_query": "hi", '
                   '"tags": ' + _nest(1100, '"t"') + "}\n", "traces.jsonl": good},
        ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.jsonl", "--quiet", "--out",
         "{d}/out"], 3, ["d.jsonl:2: field 'tags[0][0][0][0][0][0][0]…': " + TOO_DEEP]))
    out.append(Hostile("manifest_nested_300", {
        "d.json": DATASET, "run/traces.jsonl": good,
        "run/manifest.json": '{"schema": "evaltape.manifest/1", "agent": "a", "model": "m",\n'
                             ' "dataset": {"path": "../d.json"}, "extra": {"k": '
                             + _nest(300) + "}}"},
        ["grade", "{d}/run", "--quiet", "--out", "{d}/out"], 3,
        ["run/manifest.json:2: field 'extra.k[0][0][0][0][0][0]…': " + TOO_DEEP]))
    # judge records, a baseline report, the configuration
    answer = {"request": {"method": "POST", "uri": "http://x/v1/messages",
                          "body": {"json": {"messages": []}}},
              "response": {"status": {"code": 200}, "body": {"json": {"content": []}}}}
    out.append(Hostile("judge_record_nested_300", {
        "d.json": DATASET, "run/traces.jsonl": good,
        "run/judge/c__t0.jsonl": '{"format": "evaltape.cassette/1"}\n'
        + json.dumps(answer).replace('"content": []', '"content": ' + _nest(300)) + "\n"},
        ["grade", "{d}/run", "--dataset", "{d}/d.json", "--metrics", "hallucination",
         "--quiet", "--out", "{d}/out"], 3,
        ["run/judge/c__t0.jsonl:2: field 'response.body.json.content[0][0][0][0]…': "
         + TOO_DEEP]))
    for depth in (300, 1100):
        out.append(Hostile(f"baseline_nested_{depth}", {
            "d.json": DATASET, "traces.jsonl": good,
            "old/report.json": '{"schema": "evaltape.report/2",\n"summary": {"metrics": '
                               + _nest(depth) + "}}"},
            grade + ["--baseline", "{d}/old/report.json"], 3,
            ["old/report.json:2: field 'summary.metrics[0][0][0][0][0][0]…': " + TOO_DEEP]))
    out.append(Hostile("config_nested_300", {
        "d.json": DATASET, "traces.jsonl": good,
        "c.toml": "[metrics_args.composite]\nweights = " + _nest(300) + "\n"},
        grade + ["--metrics", "composite", "--config", "{d}/c.toml"], 3,
        ["c.toml: field 'metrics_args.composite.weights[0][0][0][0][0]…': " + TOO_DEEP]))
    out.append(Hostile("config_nested_1100", {
        "d.json": DATASET, "traces.jsonl": good,
        "pyproject.toml": "[tool.evaltape.metrics_args.mine]\nx = " + _nest(1100) + "\n"},
        grade + ["--config", "{d}/pyproject.toml"], 3,
        ["pyproject.toml: nested deeper than 254 levels of arrays and tables"]))
    # imports: a source line too deep, and a tool input that is too deep only once it sits
    # inside the trace (a source line of 254 levels; the trace holds the message one level
    # deeper)
    chat = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "f",
                                               "input": {"k": "INPUT"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1",
                                          "content": "ok"}]},
            {"role": "assistant", "content": "done"}]
    line = json.dumps(chat)
    out.append(Hostile("import_nested_1100", {
        "src/a.jsonl": line.replace('"INPUT"', _nest(1100)) + "\n"},
        ["import", "anthropic-messages", "{d}/src", "--out", "{d}/imp"], 3,
        ["src/a.jsonl:1: [1].content[0].input.k[0][0][0]…: " + TOO_DEEP]))
    out.append(Hostile("import_nested_inside_the_trace", {
        "src/a.jsonl": line + "\n" + line.replace('"INPUT"', _nest(249)) + "\n"},
        ["import", "anthropic-messages", "{d}/src", "--out", "{d}/imp"], 3,
        ["src/a.jsonl: line 2: field 'messages[1].content[0].input.k[0][0]…': " + TOO_DEEP,
         "imported 1 episode(s) of 1 case(s)"]))
    out.append(Hostile("config_with_a_utf8_bom", {
        "d.json": DATASET, "traces.jsonl": _jsonl(trace()),
        "c.toml": "\ufeff[thresholds]\ntask_completion = 0.5\n".encode("utf-8")},
        ["grade", "{d}/traces.jsonl", "--dataset", "{d}/d.json", "--config", "{d}/c.toml",
         "--quiet", "--out", "{d}/out"], 3,
        ["c.toml: the file starts with a UTF-8 byte-order mark (BOM, bytes EF BB BF), which "
         "TOML does not allow"]))
    return out


def _two_unrelated_reports(d: Path, other_case: str = "c", other_sha: str = "2") -> None:
    """Two minimal reports of different runs: the second over ``other_case`` with dataset
    hash ``other_sha * 64`` (the first: case ``c``, hash ``"1" * 64``)."""
    def report(run: str, sha: str, case: str) -> dict:
        return {"schema": "evaltape.report/2",
                "run": {"path": run, "agent": "a", "model": "m", "inputs_sha256": sha},
                "grader": {"version": "0", "config_sha256": "0",
                           "metrics": ["task_completion"]},
                "summary": {"cases": 1, "trials": 1, "episodes": 1, "pass_rate": 1.0,
                            "exact_tool_match_rate": 1.0, "avg_steps": 1.0, "failures": {},
                            "metrics": {"task_completion": 1.0}},
                "episodes": [{"case_id": case, "trial": 0, "passed": True, "failure": None,
                              "metrics": {"task_completion": {"score": 1.0,
                                                              "details": "ok"}}}]}
    for sub, run, sha, case in (("a", "runs/one", "1" * 64, "c"),
                                ("b", "runs/two", other_sha * 64, other_case)):
        (d / sub).mkdir(parents=True, exist_ok=True)
        (d / sub / "report.json").write_text(json.dumps(report(run, sha, case)))


#: A committed recorded run (5 cases, one trial) and its dataset.
SEED002_RUN = Path(__file__).resolve().parent.parent / "cassettes" / "scripted-harness"
SEED002_DATASET = SEED002_RUN.parent.parent / "datasets" / "scripted_eval.json"


def _seed002_run_with(path: str, mode: int) -> Callable[[Path], None]:
    """Setup: a copy of the seed-002 run in ``run/``, then ``path`` (under the case
    folder) given ``mode``."""
    def apply(d: Path) -> None:
        shutil.copytree(SEED002_RUN, d / "run")
        # a second shard of the same recording, with no episode (for merge)
        shutil.copytree(SEED002_RUN, d / "run2", ignore=shutil.ignore_patterns("*__t*"))
        (d / "run2" / "traces.jsonl").write_text("")
        (d / path).chmod(mode)
    return apply


def _fifo(path: str) -> Callable[[Path], None]:
    """Setup: a named pipe at ``path`` (nothing ever writes to it: reading would wait)."""
    def apply(d: Path) -> None:
        (d / path).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(d / path)
    return apply


def _symlink_loop(d: Path) -> None:
    (d / "run").mkdir()
    (d / "run" / "traces.jsonl").symlink_to("loop.jsonl")
    (d / "run" / "loop.jsonl").symlink_to("traces.jsonl")


def _emptied_baseline(d: Path) -> None:
    """Two reports of one run; the baseline's episode list emptied, its summary kept."""
    _two_unrelated_reports(d, "c", "1")
    doc = json.loads((d / "a" / "report.json").read_text())
    doc["episodes"] = []
    (d / "a" / "report.json").write_text(json.dumps(doc))


def write_case(root: Path, h: Hostile) -> Path:
    """Write one case's files under ``root/<name>`` and run its ``setup``; returns the folder."""
    d = root / h.name
    d.mkdir(parents=True, exist_ok=True)
    for rel, content in h.files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        elif isinstance(content, str):
            p.write_text(content)
        else:
            p.write_text(json.dumps(content))
    if h.setup:
        h.setup(d)
    return d


def argv(h: Hostile, d: Path) -> list[str]:
    """The case's command with ``{d}`` replaced by its folder."""
    return [a.replace("{d}", str(d)) for a in h.argv]


if __name__ == "__main__":  # pragma: no cover - a helper for replaying by hand
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "hostile-corpus")
    index = []
    for h in corpus():
        d = write_case(out, h)
        index.append({"name": h.name, "argv": argv(h, d), "code": h.code})
    (out / "index.json").write_text(json.dumps(index, indent=1))
    print(f"{len(index)} cases in {out}")
