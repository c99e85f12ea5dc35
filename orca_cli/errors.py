"""The orca error tree.

    OrcaError
     ├── ConfigError(path, key, why)      a config file or value is wrong; says how to fix it
     ├── StoreUnavailable                 the state store did not answer within its timeout
     │    └── StoreStateLost              the store restarted and lost its state (run_id / epoch)
     ├── CommitConflict                   a session changed under a commit at every attempt
     ├── UpstreamError(status, retryable) an upstream attempt failed
     ├── UnknownModel(requested, available)
     ├── NoCandidate(exclusions)          nothing could be attempted for a request
     ├── BadRequest(status, message)      the client's request is malformed (400/413/415/...)
     └── AdminError(status, message)      the admin API refused or failed

Every message is one sentence: what failed, the bad value, and the valid set or the fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from orca_cli.immutable import immutable

__all__ = [
    "AdminError",
    "BadRequest",
    "CommitConflict",
    "ConfigError",
    "NoCandidate",
    "OrcaError",
    "Refusal",
    "StoreStateLost",
    "StoreUnavailable",
    "UnknownModel",
    "UpstreamError",
]


class OrcaError(Exception):
    """Base of every error orca raises on purpose."""

    exit_code = 1


class ConfigError(OrcaError):
    """A config problem, located by file and dotted key path."""

    def __init__(self, path: str | None, key: str, why: str) -> None:
        self.path = path
        self.key = key
        self.why = why
        where = f"{path}: " if path else ""
        super().__init__(f"{where}{key}: {why}" if key else f"{where}{why}")


class StoreUnavailable(OrcaError):
    """The store could not be reached, or did not answer within `state.timeout_ms`.

    Callers degrade on this one type: serve base tier, skip the commit, mark the trace.
    """


class StoreStateLost(StoreUnavailable):
    """The store answered but its state was lost (restart without persistence)."""


class CommitConflict(OrcaError):
    """A commit's session slot changed under it at every compare-and-set attempt: several
    sidecars writing one busy session. Contention, not an outage: the store answers, nothing
    of that slot was applied, and the same batch may be sent again (its markers apply each
    slot once)."""


class UpstreamError(OrcaError):
    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        self.status = status
        self.retryable = retryable
        super().__init__(message)


class UnknownModel(OrcaError):
    def __init__(self, requested: str, available: Sequence[str], *,
                 hint: str | None = None, lead: str | None = None) -> None:
        """`lead`: what is wrong, when the name is not simply unknown (an unknown suffix
        after a known name, a channel that does not serve the model); `hint`: what to do."""
        self.requested = requested
        self.available = list(available)
        shown = ", ".join(self.available[:50])
        near = f"; {hint}" if hint else ""
        what = lead or f"unknown model or router {requested!r}"
        super().__init__(f"{what}{near}; available: {shown}")


class NoCandidate(OrcaError):
    def __init__(self, message: str, exclusions: Mapping[str, str] | None = None) -> None:
        self.exclusions = dict(exclusions or {})
        super().__init__(message)


class BadRequest(OrcaError):
    def __init__(self, message: str, *, status: int = 400, kind: str = "invalid_request_error") -> None:
        self.status = status
        self.kind = kind
        super().__init__(message)


class AdminError(OrcaError):
    def __init__(self, message: str, *, status: int = 400) -> None:
        self.status = status
        super().__init__(message)


@immutable
class Refusal:
    """Why a request is refused before routing: `kind` is the inbound API's error type,
    `code` the OpenAI-style code; `message` is fixed text (never a header value)."""

    status: int
    message: str
    kind: str | None = None
    code: str | None = None
