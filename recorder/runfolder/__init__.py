"""The run folder both recording drivers (and the standalone proxy) write: ``manifest.json``,
``traces.jsonl`` (one fsynced line per finished episode) and ``http/`` (a cassette per
episode). Resumable; a finished episode is never overwritten. One module a concern:
:mod:`.options`, :mod:`.traces`, :mod:`.manifest`, :mod:`.folder` (open and lock),
:mod:`.refresh`, :mod:`.outcomes` (file each episode), :mod:`.plan` (the shared start).
"""
