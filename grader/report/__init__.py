"""Report renderers, one module per output format; ``report.json`` is written by ``evaltape.grader.report_file``."""
