"""The review side of ``evaltape view``'s server: the page's marks read from and written to
each shown run's ``reviews.jsonl``.

:class:`ReviewApi` is the ``api`` of :func:`evaltape.grader.report.view_files.serve`:
``GET /api/reviews?r=R`` answers the marks that count (the latest of each item, with
``stale`` true when the recording changed since) and the review queues;
``POST /api/reviews?r=R`` with ``{"episode", "target", "mark", "note"}`` appends one mark
(:func:`evaltape.reviewlog.append_mark`), the reviewer, time and the episode's current
trace digest filled in here, and answers it once it is on the disk. The server checks
the token, Host and Origin before any of this runs.
"""
from __future__ import annotations

import secrets
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from evaltape.grader.errors import BadInputError
from evaltape.grader.reviews import (REVIEWS_FILE, EpisodeFacts, episode_facts, latest,
                                     read_reviews, stale_marks)
from evaltape.grader.reviews import episode_key as ep_key

#: Where the review settings go in the served page: just before the page's data.
_ANCHOR = b'<script type="application/json" id="evaltape-meta">'


def page_key(case_id: str, trial: int) -> str:
    """An episode's key as the page knows it: its case id as the page shows it (cut at
    :data:`~evaltape.grader.report.view_text.ID_LIMIT` characters, control characters as
    U+FFFD, key-shaped strings redacted), ``#t``, the trial."""
    from evaltape.grader.io.secrets import redact
    from evaltape.grader.report.view_text import ID_LIMIT, text
    return redact(text(case_id, ID_LIMIT)) + f"#t{trial}"


def default_reviewer() -> str:
    """The reviewer's name when ``--reviewer`` is not given: git's ``user.name``, else
    ``$USER``, else ``"reviewer"``."""
    import os
    import subprocess
    try:
        out = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True,
                             timeout=5)
        name = out.stdout.strip()
        if out.returncode == 0 and name:
            return name
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("USER") or os.environ.get("USERNAME") or "reviewer"


class ReviewApi:
    """The review requests of the pages of one ``evaltape view`` server.

    Args:
        sources: the shown runs (:class:`~evaltape.grader.report.view_source.ViewSource`); a run
            whose folder is not known (a report alone) cannot be reviewed.
        reviewer: the name written with every mark.
        token: the page's token (default: 32 random bytes, URL-safe).

    Raises:
        BadInputError: a run's ``reviews.jsonl`` or traces do not read (file, line, field).
    """

    def __init__(self, sources: Sequence[Any], reviewer: str, token: str | None = None
                 ) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.reviewer = reviewer
        self.files: dict[int, Path] = {}
        self.facts: dict[int, dict[str, EpisodeFacts]] = {}
        self.to_page: dict[int, dict[str, str]] = {}           # episode key -> as the page shows it
        self.from_page: dict[int, dict[str, str | None]] = {}  # and back (None: ambiguous)
        self._lock = threading.Lock()
        for r, src in enumerate(sources):
            if src.run is None:
                continue
            path = Path(src.run.root) / REVIEWS_FILE
            read_reviews(path)  # a bad file stops here, with its line named
            self.files[r] = path
            self.facts[r] = {f.key: f for f in episode_facts(src.report, src.run, src.traces)}
            self.to_page[r] = {ep_key(ep.case_id, ep.trial): page_key(ep.case_id, ep.trial)
                               for ep in src.report.episodes}
            seen: dict[str, str | None] = {}
            for real, shown in self.to_page[r].items():
                seen[shown] = None if shown in seen else real   # two ids shown alike: neither
            self.from_page[r] = seen

    def settings(self) -> dict[str, Any]:
        """What the page needs to review: token, reviewer and the reviewable runs."""
        return {"token": self.token, "reviewer": self.reviewer, "runs": sorted(self.files),
                "files": {str(r): str(p) for r, p in self.files.items()}}

    def page(self, html: bytes) -> bytes:
        """The page as served: its bytes with the review settings put in (a JSON data
        element, ``<`` ``>`` ``&`` escaped), so the token never touches the disk."""
        import orjson

        from evaltape.grader.report.view_files import inline_json
        block = (b'<script type="application/json" id="evaltape-review">'
                 + inline_json(orjson.dumps(self.settings())) + b"</script>\n")
        return html.replace(_ANCHOR, block + _ANCHOR, 1)

    def state(self, r: int) -> dict[str, Any]:
        """The marks that count for run ``r`` and its queues.

        Raises:
            BadInputError: the review file cannot be read.
        """
        facts = self.facts[r]
        marks = latest(read_reviews(self.files[r]))
        stale = {m.item for m in stale_marks(marks, {k: f.digest for k, f in facts.items()})}
        shown = self.to_page[r]
        return {"reviewer": self.reviewer, "file": str(self.files[r]),
                "marks": [dict(m.to_json(), episode=shown.get(m.episode, m.episode),
                               stale=item in stale) for item, m in marks.items()],
                "human": [shown[k] for k, f in facts.items() if f.human],
                "to_review": [shown[k] for k, f in facts.items() if f.to_review]}

    def handle(self, method: str, path: str, query: Mapping[str, str], body: Any
               ) -> tuple[int, Any]:
        """One request (already allowed by the server): ``(HTTP status, JSON answer)``."""
        from evaltape.reviewlog import SecretInMark, append_mark
        if path != "/api/reviews":
            return 404, {"error": "no such endpoint"}
        try:
            r = int(query.get("r", "0"))
        except ValueError:
            r = -1
        if r not in self.files:
            return 404, {"error": "this run cannot be reviewed here (its folder is not known)"}
        try:
            if method == "GET":
                return 200, self.state(r)
            if not isinstance(body, Mapping):
                return 400, {"error": "expected a JSON object"}
            shown = body.get("episode")
            episode = self.from_page[r].get(shown) if isinstance(shown, str) else None
            fact = None if episode is None else self.facts[r].get(episode)
            if fact is None:
                return 400, {"error": f"no episode {shown!r} in this run (or two case ids "
                                      "the page shows alike)"}
            mark = {"episode": episode, "trace_digest": fact.digest,
                    "reviewer": self.reviewer,
                    "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "target": body.get("target"), "mark": body.get("mark"),
                    "note": body.get("note", "")}
            with self._lock:
                written = append_mark(self.files[r], mark)
            return 200, {"mark": dict(written.to_json(), episode=shown, stale=False)}
        except BadInputError as e:
            return 400, {"error": str(e)}
        except SecretInMark as e:
            return 400, {"error": str(e)}
        except OSError as e:
            return 500, {"error": f"cannot write {self.files[r]}: {e.strerror}"}
