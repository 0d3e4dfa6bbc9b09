"""Approval requests and the compliance reviewer's UI; a decision is a signal to a run."""
