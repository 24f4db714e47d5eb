"""Aggregation: episode outcomes, trials (pass@k, pass^k, intervals), breakdowns, agreement."""
