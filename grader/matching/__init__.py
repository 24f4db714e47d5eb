"""Matching what an agent did against what a case expects: tool calls, actions, claims."""
