"""marl_edu: small, tested helpers for the marl-edu notebook course."""

__version__ = "0.1.0"
