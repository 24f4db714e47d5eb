"""evaltape recorder: runs live agents over datasets and stores traces and cassettes.

The only package that imports ``anthropic`` and ``vcrpy`` (DESIGN.md §1).
"""
