"""Environments, one module per backend, and ``make``: one env or K lock-step copies by id."""
