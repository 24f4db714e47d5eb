"""evaltape: record an agent once against the live model; grade it forever, offline."""

__version__ = "0.1.0"
