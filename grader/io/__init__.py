"""Reading the grader's inputs: JSON files, traces, datasets, runs and configuration."""
