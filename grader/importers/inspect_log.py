"""``inspect``: Inspect (UK AISI ``inspect_ai``) eval logs → one episode per sample and epoch.
Reads the JSON log and the ``.eval`` zip (told apart by content). Case id
``<task>:<sample id>``, trial ``epoch - 1``, input the sample's ``input``, ``target`` in
``metadata.target``; messages become Anthropic form (system dropped, attachments resolved);
usage summed over models; reference label from the first scorer with a ``"C"``/``"I"`` or
boolean value (all scores under ``reference.scores``). A bad sample is one error naming
file and place. Mapping: docs/importers.md.
"""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, Iterator

import orjson

from evaltape.grader.importers.common import (EPISODE_FAILURES, EpisodeError, EpisodeProblem,
                                              ImportResult, Skipped, episode_error,
                                              read_source, too_deep, trace_from_messages)

FORMAT = "inspect"
#: Inspect's score value constants (inspect_ai.scorer: CORRECT="C", INCORRECT="I").
PASS_FAIL = {"C": True, "I": False}
ATTACHMENT = "attachment://"


def score_label(scores: Any) -> tuple[bool | None, str | None]:
    """``(label, scorer)`` from a sample's ``scores``: the first scorer whose ``value`` is ``"C"``/
    ``"I"`` or a boolean (``C``/``true`` → True); else ``(None, None)``.
    """
    if not isinstance(scores, dict):
        return None, None
    for name, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else None
        if isinstance(value, bool):
            return value, name
        if isinstance(value, str) and value in PASS_FAIL:
            return PASS_FAIL[value], name
    return None, None


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith(ATTACHMENT):
        return attachments.get(value[len(ATTACHMENT):], value)
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _text_blocks(content: Any, place: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if content is None:
        return []
    if not isinstance(content, list):
        raise EpisodeProblem(f"content must be a string or a list of parts, got "
                             f"{type(content).__name__}", place)
    return [{"type": "text", "text": p["text"]} for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
            and p["text"]]


def _plain_text(content: Any) -> str:
    return "\n".join(b["text"] for b in _text_blocks(content, ""))


def inspect_messages(messages: Any, place: str) -> list[dict[str, Any]]:
    """Convert Inspect ``ChatMessage`` dicts to Anthropic-format messages (system excluded).

    Raises:
        EpisodeProblem: not a list, an unknown role, or a malformed tool call (Inspect path).
    """
    if not isinstance(messages, list):
        raise EpisodeProblem("expected a list of messages", place)
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        where = f"{place}[{i}]"
        if not isinstance(m, dict):
            raise EpisodeProblem("expected a message object", where)
        role = m.get("role")
        if role == "system":
            continue
        if role == "user":
            out.append({"role": "user", "content": _text_blocks(m.get("content"), where)})
        elif role == "assistant":
            blocks = _text_blocks(m.get("content"), where + ".content")
            for j, tc in enumerate(m.get("tool_calls") or []):
                tw = f"{where}.tool_calls[{j}]"
                if not isinstance(tc, dict) or not isinstance(tc.get("id"), str) \
                        or not isinstance(tc.get("function"), str):
                    raise EpisodeProblem("expected {id, function, arguments}", tw)
                args = tc.get("arguments")
                args = {} if args is None else args
                if not isinstance(args, dict):
                    raise EpisodeProblem(f"arguments must be an object, got "
                                         f"{type(args).__name__}", tw + ".arguments")
                blocks.append({"type": "tool_use", "id": tc["id"], "name": tc["function"],
                               "input": args})
            out.append({"role": "assistant", "content": blocks})
        elif role == "tool":
            if not isinstance(m.get("tool_call_id"), str):
                raise EpisodeProblem("tool message without a string tool_call_id",
                                     where + ".tool_call_id")
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m["tool_call_id"],
                                     "content": _plain_text(m.get("content"))}
            err = m.get("error")
            if err:
                block["is_error"] = True
                if not block["content"] and isinstance(err, dict):
                    block["content"] = str(err.get("message", ""))
            prev = out[-1] if out else None
            if prev is not None and prev["role"] == "user" and prev["content"] and all(
                    b.get("type") == "tool_result" for b in prev["content"]):
                prev["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        else:
            raise EpisodeProblem(f"unsupported role {role!r} (system, user, assistant, tool)",
                                 where + ".role")
    return out


def _usage(model_usage: Any) -> dict[str, int]:
    if not isinstance(model_usage, dict) or not model_usage:
        return {}
    total = {"input_tokens": 0, "output_tokens": 0}
    for u in model_usage.values():
        if isinstance(u, dict):
            for k in total:
                if isinstance(u.get(k), int):
                    total[k] += u[k]
    return total


def _samples(path: str, data: bytes) -> tuple[dict[str, Any], Iterator[tuple[str, Any]]]:
    """The log's ``eval`` block and its samples as ``(place, sample)`` pairs.

    Raises:
        EpisodeProblem: not JSON / not a zip log, or no ``eval`` block.
    """
    if data[:2] == b"PK":
        try:
            z = zipfile.ZipFile(path)
            header = orjson.loads(z.read("header.json"))
        except (zipfile.BadZipFile, KeyError, orjson.JSONDecodeError) as e:
            raise EpisodeProblem(f"not an Inspect .eval log (zip with header.json): {e}",
                                 "header.json") from None
        if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
            raise EpisodeProblem("no 'eval' object in header.json", "header.json")
        names = sorted((n for n in z.namelist() if n.startswith("samples/")
                        and n.endswith(".json")), key=_sample_order)

        def from_zip() -> Iterator[tuple[str, Any]]:
            for n in names:
                raw = z.read(n)
                try:
                    sample = orjson.loads(raw)
                    too_deep(raw, sample)
                    yield n, sample
                except orjson.JSONDecodeError as e:
                    yield n, EpisodeProblem(f"not valid JSON ({e})", n)
                except EpisodeProblem as e:
                    yield n, EpisodeProblem(e.message, f"{n}: {e.place}", line=e.line)
        return header["eval"], from_zip()
    try:
        log = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise EpisodeProblem(f"neither a JSON log nor a zip .eval log ({e})") from None
    too_deep(data, log)
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise EpisodeProblem("not an Inspect log: expected an object with an 'eval' block")
    samples = log.get("samples") or []
    if not isinstance(samples, list):
        raise EpisodeProblem("'samples' must be a list", "samples")
    return log["eval"], ((f"samples[{i}]", s) for i, s in enumerate(samples))


def _sample_order(name: str) -> tuple:
    stem = Path(name).stem  # "<id>_epoch_<n>"
    sid, _, epoch = stem.rpartition("_epoch_")
    key = (0, int(sid), "") if sid.isdigit() else (1, 0, sid)
    return (*key, int(epoch) if epoch.isdigit() else 0)


def _episode(sample: Any, task: str, model: str | None, path: str,
             place: str) -> tuple[dict, dict]:
    if not isinstance(sample, dict):
        raise EpisodeProblem("expected a sample object", place)
    attachments = sample.get("attachments") or {}
    sample = _resolve({k: v for k, v in sample.items() if k != "attachments"},
                      attachments if isinstance(attachments, dict) else {})
    sid, epoch = sample.get("id"), sample.get("epoch", 1)
    if not isinstance(sid, (str, int)) or isinstance(sid, bool):
        raise EpisodeProblem("sample id must be a string or integer", f"{place}.id")
    if not isinstance(epoch, int) or epoch < 1:
        raise EpisodeProblem("epoch must be a positive integer", f"{place}.epoch")
    messages = inspect_messages(sample.get("messages"), f"{place}.messages")
    raw_input = sample.get("input")
    input_text = raw_input if isinstance(raw_input, str) else next(
        (_plain_text(m.get("content")) for m in (raw_input or [])
         if isinstance(m, dict) and m.get("role") == "user"), None)
    label, scorer = score_label(sample.get("scores"))
    extra: dict[str, Any] = {"source": {"format": FORMAT, "path": path, "place": place},
                             "reference": {"source": "inspect scores", "scorer": scorer,
                                           "scores": sample.get("scores")}}
    if label is not None:
        extra["reference_label"] = label
    case_id = f"{task}:{sid}"
    trace = trace_from_messages(messages, case_id=case_id, trial=epoch - 1,
                                input_text=input_text, final="last_text",
                                usage=_usage(sample.get("model_usage")), model=model,
                                place_of=lambda k: f"{place}.messages (converted)[{k}]",
                                extra=extra)
    err = sample.get("error")
    if err:
        trace["error"] = str(err.get("message", err) if isinstance(err, dict) else err)
    case: dict[str, Any] = {"id": case_id, "input": trace["input"],
                            "metadata": {"source": "inspect", "task": task,
                                         "target": sample.get("target")}}
    return trace, case


def import_file(path: str, result: ImportResult, *, model: str | None = None) -> None:
    """Import one Inspect log (JSON or ``.eval``) into ``result``; errors go to ``result.errors``
    with file and place. A sample and epoch seen again is skipped when from the same
    ``eval_id``, an error otherwise.
    """
    data = read_source(path, result)
    if data is None:
        return
    try:
        eval_block, samples = _samples(path, data)
    except EpisodeProblem as p:
        result.errors.append(EpisodeError(path, p.place, p.message))
        return
    task = str(eval_block.get("task") or Path(path).stem).rsplit("/", 1)[-1]
    log_model = model or eval_block.get("model")
    if not isinstance(log_model, str):
        log_model = None
    run = eval_block.get("eval_id") or eval_block.get("run_id")
    seen = {(t["case_id"], t["trial"]): t for t in result.traces}
    n_before = len(result.traces)
    skipped_here = 0
    for place, sample in samples:
        try:
            if isinstance(sample, EpisodeProblem):
                raise sample
            trace, case = _episode(sample, task, log_model, path, place)
            trace["source"]["eval_id"] = run
            earlier = seen.get((trace["case_id"], trace["trial"]))
            if earlier is not None and run and earlier["source"].get("eval_id") == run:
                result.skipped.append(Skipped(path, place, "the same sample of the same eval "
                                              f"({run}) was imported from "
                                              f"{earlier['source']['path']}"))
                skipped_here += 1
                continue
            if earlier is not None:
                raise EpisodeProblem(f"episode {trace['case_id']!r} epoch {trace['trial'] + 1} "
                                     f"already imported from {earlier['source']['path']} (a "
                                     "different eval of the same task: import it separately)",
                                     place)
            old = result.cases.get(case["id"])
            if old is not None and old["input"] != case["input"]:
                raise EpisodeProblem(f"case {case['id']!r}: input differs from an earlier "
                                     "epoch's", f"{place}.input")
        except EPISODE_FAILURES as e:
            result.errors.append(episode_error(path, place, e, "sample"))
            continue
        seen[(trace["case_id"], trace["trial"])] = trace
        result.add_case(case)
        result.traces.append(trace)
    if len(result.traces) == n_before and not skipped_here and \
            not any(e.source == path for e in result.errors):
        result.errors.append(EpisodeError(path, "samples", "the log holds no samples "
                                          "(header-only logs cannot be graded)"))
