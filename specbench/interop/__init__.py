"""Spec-Bench in and out: its answer files (import, export), its published leaderboard tables, and its protocol as a preset."""
