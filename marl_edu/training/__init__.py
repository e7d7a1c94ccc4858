"""The training loops, resume, and policy files."""
