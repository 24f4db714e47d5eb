"""Report renderers, one module per output format; ``report.json`` lives in ``grader.engine``."""
