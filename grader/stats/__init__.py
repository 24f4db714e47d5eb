"""Aggregation: seed 002 outcomes, trials (pass@k, pass^k, intervals), breakdowns, agreement."""
