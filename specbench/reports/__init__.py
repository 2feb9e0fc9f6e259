"""Rendering results for people: per-subtask report tables, summary.json/csv, comparisons across runs, sweeps, the leaderboard."""
