"""evaltape grader: pure-Python, offline scoring of recorded agent traces.

This package never imports ``anthropic``, ``vcrpy`` or any HTTP client;
a test blocks those imports and grades a run to prove it.
"""

if __name__ != "evaltape.grader":  # the folder is on sys.path (e.g. the repo is the cwd)
    raise ImportError(f"{__name__!r}: this folder installs as 'evaltape.grader'; "
                      "import evaltape.grader instead")


__version__ = "0.1.0"
