"""evaltape recorder: runs live agents over datasets and stores traces and cassettes.

The only package that imports ``anthropic`` and ``vcrpy``.
"""

if __name__ != "evaltape.recorder":  # the folder is on sys.path (e.g. the repo is the cwd)
    raise ImportError(f"{__name__!r}: this folder installs as 'evaltape.recorder'; "
                      "import evaltape.recorder instead")

