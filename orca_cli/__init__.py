"""orca: a session-aware LLM routing sidecar (see README.md and SPEC-level docs)."""

from __future__ import annotations

__all__ = ["ALGORITHM_VERSION", "__version__"]

__version__ = "0.1.0"
# Bumped whenever a routing rule changes what a trace would record for the same input.
ALGORITHM_VERSION = "orca-route/1"
