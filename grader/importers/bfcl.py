"""``bfcl``: Berkeley Function-Calling Leaderboard question files (+ model results) → run.
Each question (``BFCL_v<N>_<category>.json``, ground truth in ``possible_answer/``) becomes a
case: its user text, ``tools``, ``expected_tool_calls`` in BFCL's form, ``matching: "bfcl"``
and ``metadata.category``; only the Python categories are imported. Each result line
becomes an episode of one untaken assistant turn; a text or undecodable result is an episode
without calls (``decode_error`` says why). Shapes: docs/importers.md.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

import orjson

from evaltape.grader.errors import BadInputError
from evaltape.grader.importers.common import (EpisodeError, EpisodeProblem, ImportResult,
                                              Skipped, read_source, trace_from_messages)
from evaltape.grader.io.jsonfiles import iter_json_lines

FORMAT = "bfcl"
#: File-name category → checker category (BFCL ``ast_checker`` dispatch).
CATEGORIES = {"simple": "simple", "simple_python": "simple", "multiple": "multiple",
              "parallel": "parallel", "parallel_multiple": "parallel_multiple"}
_NAME = re.compile(r"^BFCL_v\d+_(.+?)(_result)?$")


def category_of(path: str) -> str | None:
    """``simple_python`` from ``BFCL_v4_simple_python.json`` (``None``: not a BFCL name)."""
    m = _NAME.match(Path(path).stem)
    return m.group(1) if m else None


def _lines(path: str, result: ImportResult) -> list[tuple[int, Any]]:
    data = read_source(path, result)
    if data is None:
        return []
    out = []
    for lineno, obj in iter_json_lines(data, path=path, keep_going=True):
        if isinstance(obj, BadInputError):
            result.errors.append(EpisodeError(path, obj.field or "", obj.message, line=lineno))
        else:
            out.append((lineno, obj))
    return out


def _input(question: Any) -> str:
    if not (isinstance(question, list) and question and isinstance(question[0], list)):
        raise EpisodeProblem("expected [[{role, content}, ...]]", "question")
    texts = []
    for i, m in enumerate(question[0]):
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            raise EpisodeProblem("expected {role, content: string}", f"question[0][{i}]")
        if m.get("role") == "user":
            texts.append(m["content"])
        elif m.get("role") != "system":
            raise EpisodeProblem(f"unsupported role {m.get('role')!r} (user, system)",
                                 f"question[0][{i}].role")
    if not texts:
        raise EpisodeProblem("the first turn has no user message", "question[0]")
    return "\n\n".join(texts)


def decode_result(value: Any) -> tuple[list[tuple[str, dict]], str | None]:
    """A result's calls ``[(name, arguments)]`` (one-key objects, ``args`` an object or JSON
    string), or ``([], why)`` when it holds none.
    """
    if isinstance(value, str):
        return [], "the result is text, not function calls"
    if not isinstance(value, list):
        return [], f"the result is {type(value).__name__}, not a list of calls"
    calls = []
    for j, item in enumerate(value):
        if not (isinstance(item, dict) and len(item) == 1):
            return [], f"result[{j}] is not a one-key {{func_name: arguments}} object"
        (name, args), = item.items()
        if isinstance(args, str):
            try:
                args = orjson.loads(args) if args.strip() else {}
            except orjson.JSONDecodeError as e:
                return [], f"result[{j}] arguments are not JSON ({e})"
        if not isinstance(args, dict):
            return [], f"result[{j}] arguments are not an object"
        calls.append((str(name), args))
    return calls, None


def _result_files(results: str, categories: set[str],
                  result: ImportResult) -> list[str]:
    """A result file as given; in a folder, the ``*.json`` files of the imported categories
    (BFCL writes one ``BFCL_v<N>_<category>_result.json`` per category; the others are
    listed as skipped)."""
    p = Path(results)
    if not p.is_dir():
        return [p.as_posix()]
    out = []
    for f in sorted(p.rglob("*.json")):
        if not f.is_file():
            continue
        if category_of(f.as_posix()) in categories:
            out.append(f.as_posix())
        else:
            result.skipped.append(Skipped(f.as_posix(), "file", "result file of a category "
                                          "not imported (no question file given for it)"))
    return out


def import_bfcl(paths: Sequence[str], model: str | None = None, *, answers: str | None = None,
                results: str | None = None) -> ImportResult:
    """Import BFCL question files ``paths``, their answers (``answers``, default the
    ``possible_answer`` folder beside each) and optionally ``results`` (a file or folder).
    Problems are recorded as errors naming file, line and place; the rest still imports.
    """
    result = ImportResult(sources=[])
    imported: set[str] = set()
    for path in paths:
        if Path(path).parent.name == "possible_answer":
            result.skipped.append(Skipped(path, "file", "an answer file: read with the question "
                                          "file of the same name"))
            continue
        result.sources.append(path)
        cat = category_of(path)
        if cat not in CATEGORIES:
            result.errors.append(EpisodeError(path, "", f"category {cat!r}: only BFCL's Python "
                                              f"categories ({', '.join(CATEGORIES)}) are "
                                              "checked by the AST rules"))
            continue
        ans_path = (Path(answers) if answers else Path(path).parent / "possible_answer") \
            / Path(path).name
        if not ans_path.is_file():
            result.errors.append(EpisodeError(path, "", f"no answer file {ans_path.as_posix()} "
                                              "(give --answers DIR)"))
            continue
        result.sources.append(ans_path.as_posix())
        imported.add(str(cat))
        truth: dict[str, Any] = {}
        for lineno, obj in _lines(ans_path.as_posix(), result):
            if not (isinstance(obj, dict) and isinstance(obj.get("id"), str)
                    and isinstance(obj.get("ground_truth"), list)):
                result.errors.append(EpisodeError(ans_path.as_posix(), "ground_truth",
                                                  "expected {id, ground_truth: [...]}",
                                                  line=lineno))
                continue
            truth[obj["id"]] = obj["ground_truth"]
        for lineno, obj in _lines(path, result):
            try:
                if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
                    raise EpisodeProblem("expected {id, question, function}", "id")
                if obj["id"] not in truth:
                    raise EpisodeProblem(f"no ground truth for {obj['id']!r} in "
                                         f"{ans_path.as_posix()}", "id")
                if not isinstance(obj.get("function"), list):
                    raise EpisodeProblem("expected a list of function schemas", "function")
                case = {"id": obj["id"], "input": _input(obj.get("question")),
                        "tools": obj["function"], "expected_tool_calls": truth[obj["id"]],
                        "matching": "bfcl",
                        "metadata": {"source": "bfcl", "category": CATEGORIES[cat],
                                     "file": Path(path).name}}
                if case["id"] in result.cases:
                    raise EpisodeProblem(f"duplicate id {case['id']!r}", "id")
            except EpisodeProblem as p:
                result.errors.append(EpisodeError(path, p.place, p.message, line=lineno))
                continue
            result.add_case(case)
    if results:
        for rpath in _result_files(results, imported, result):
            result.sources.append(rpath)
            for lineno, obj in _lines(rpath, result):
                try:
                    trace = _trace(obj, result, rpath, lineno, model)
                except EpisodeProblem as p:
                    result.errors.append(EpisodeError(rpath, p.place, p.message, line=lineno))
                    continue
                result.traces.append(trace)
    return result


def _trace(obj: Any, result: ImportResult, path: str, lineno: int,
           model: str | None) -> dict[str, Any]:
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or "result" not in obj:
        raise EpisodeProblem("expected {id, result}", "id")
    case = result.cases.get(obj["id"])
    if case is None:
        raise EpisodeProblem(f"id {obj['id']!r} names no imported question", "id")
    if any(t["case_id"] == obj["id"] for t in result.traces):
        raise EpisodeProblem(f"duplicate result for {obj['id']!r}", "id")
    calls, why = decode_result(obj["result"])
    if why is None:
        content: Any = [{"type": "tool_use", "id": f"{obj['id']}_call_{j}", "name": n,
                         "input": a} for j, (n, a) in enumerate(calls)]
    else:
        raw = obj["result"]
        content = raw if isinstance(raw, str) else orjson.dumps(raw).decode()
    messages = [{"role": "user", "content": case["input"]},
                {"role": "assistant", "content": content}]
    extra: dict[str, Any] = {"source": {"format": FORMAT, "path": path, "place": f"line {lineno}"}}
    if why is not None:
        extra["decode_error"] = why
    return trace_from_messages(messages, case_id=obj["id"], trial=0, input_text=case["input"],
                               stop_reason="tool_use" if calls else "end_turn",
                               model=model, extra=extra)
