"""Report renderers, one module per output format; ``report.json`` lives in ``evaltape.grader.engine``."""
