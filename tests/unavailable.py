"""What a test does when something it needs is not here (Redis, redis-server, an agent).

It skips with the reason, except under CI=true, where nothing that should run may skip
(`.ci/run` provides Redis, redis-server and redis-cli, and installs the agents): there it
fails with the same reason.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["unavailable"]


def unavailable(reason: str) -> NoReturn:
    """Skip the test for `reason`, or fail it under CI=true."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: it is required)")
    pytest.skip(reason)
