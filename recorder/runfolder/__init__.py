"""The run folder both recording drivers write: options, manifest, traces and the lock.

A run folder is ``manifest.json`` (what was recorded, with what), ``traces.jsonl`` (one
complete, fsynced line per finished episode) and ``http/`` (one cassette per episode).
Resumable: a rerun skips the finished episodes and records the rest; a finished episode is
never overwritten. The in-process driver (:mod:`evaltape.recorder.record`) and the command
driver (:mod:`evaltape.recorder.command`), and the standalone proxy
(:mod:`evaltape.recorder.proxy_run`), share what is here, one module a concern:

- :mod:`.options`: what ``record`` is asked to do, checked before anything runs;
- :mod:`.traces`: ``traces.jsonl``, read (and repaired) and appended to;
- :mod:`.manifest`: ``manifest.json`` and the run's fingerprint;
- :mod:`.folder`: the folder opened and locked, a resumed run's setup checked;
- :mod:`.refresh`: the files ``record --refresh`` writes besides new episodes;
- :mod:`.outcomes`: each finished episode filed;
- :mod:`.plan`: the start both drivers share (manifest written, episodes listed).
"""
