"""Aggregation: the scripted-harness reference outcomes, trials (pass@k, pass^k, intervals),
breakdowns, agreement."""
