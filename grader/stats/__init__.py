"""Aggregation: the scripted example suite outcomes, trials (pass@k, pass^k, intervals),
breakdowns, agreement."""
