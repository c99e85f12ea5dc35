"""Fixtures of the real-agent suite (the helpers live in tests/agents/kit.py)."""

from tests.agents.kit import orca

__all__ = ["orca"]
