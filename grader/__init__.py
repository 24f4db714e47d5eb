"""evaltape grader: pure-Python, offline scoring of recorded agent traces.

This package never imports ``anthropic``, ``vcrpy`` or any HTTP client (DESIGN.md §1);
a test blocks those imports and grades a run to prove it.
"""

__version__ = "0.1.0"
