"""The Turn: everything one request carries from intake to commit (SPEC §3).

`prepare` fills the request's facts (target, session, scores, what to read), `decide` adds
the store snapshot and the routing plan, forwarding fills the `Outcome`, and `settle` turns
the whole into a commit batch and a trace. Plain data: the pure steps read and return it, the
HTTP handler and the replay walk the same steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orca_cli.config.schema import RouterConfig
from orca_cli.errors import Refusal
from orca_cli.immutable import immutable
from orca_cli.routing.auto.classify import Classification
from orca_cli.routing.caps import NO_IN_FLIGHT, SessionInFlight
from orca_cli.routing.decimals import fixed_round
from orca_cli.routing.features import Delta, Difficulty
from orca_cli.routing.modes import ProviderPrefs
from orca_cli.routing.route import Attempt, RoutePlan
from orca_cli.routing.target import Target
from orca_cli.routing.tiers import Ask
from orca_cli.state.base import ReadRequest, Snapshot
from orca_cli.turn.routes import Routed
from orca_cli.types import Api, ClientLink, Headers
from orca_cli.wire.session_id import SessionId
from orca_cli.wire.usage import ResponseTap

__all__ = ["CLIENT_CLOSED", "Arrival", "AttemptRecord", "Outcome", "RequestHead", "Turn"]

# A turn's snapshot before (or without) a store read: what `Snapshot()` holds.
NO_SNAPSHOT = Snapshot()

# `round(x, 3)` in float operations (`routing.decimals`): an attempt's latency in every trace.
_round3 = fixed_round(3)

# nginx's "client closed request": the status a request shows when its client hung up before
# any answer began (no HTTP status was sent).
CLIENT_CLOSED = 499


@immutable
class RequestHead:
    """What one pass over the request line and headers found."""

    method: str
    path: str
    api: Api  # the inbound format: the error shape of every answer to this request
    headers: Headers  # lower-case names, latin-1 values, in order
    refusal: Refusal | None  # the guard's verdict (SPEC §11); None: admitted
    client_request_id: str | None = None
    tier_ask: str | None = None  # X-OrcaRouter-Tier as sent
    client: ClientLink | None = None  # the server's (`scope["extensions"]`), if any

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None

    def header_map(self) -> dict[str, str]:
        return dict(self.headers)


@immutable
class Arrival:
    """One request as it arrived: its id, its body (raw bytes and parsed), and when.
    `raw` is empty and `body` empty when the body could not be read."""

    request_id: str
    raw: bytes
    body: dict[str, Any]
    now: float  # wall clock
    started: float  # monotonic, for latency

    @property
    def requested_model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None


@dataclass
class AttemptRecord:
    """One upstream try as the trace shows it."""

    model: str
    channel: str
    key_index: int
    status: int | None = None
    latency_ms: float = 0.0
    error: str | None = None
    first_byte_ms: float | None = None  # headers (a stream: its first chunk) arrived, ms

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "channel": self.channel, "key_index": self.key_index,
                "status": self.status, "latency_ms": _round3(self.latency_ms),
                "error": self.error}


@dataclass
class Outcome:
    """What forwarding did: the attempts, the one whose answer reached the client, its tap."""

    attempts: list[AttemptRecord] = field(default_factory=list)
    served: Attempt | None = None  # the attempt whose answer reached the client
    tap: ResponseTap | None = None
    status: int = 0  # what the client got
    cancelled: bool = False
    failed: set[tuple[str, int]] = field(default_factory=set)  # (channel, key) that failed
    own_error: str | None = None  # orca answered itself (nothing attempted)
    own_kind: str | None = None  # the error type orca's own answer carried
    # The served attempt's translation (SPEC §13.2 rule 9); None when sent in its own format.
    translation: dict[str, Any] | None = None
    # (channel, model) -> the feature its format cannot express (`untranslatable:<feature>`)
    untranslatable: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def billed_success(self) -> bool:
        return (self.served is not None and not self.cancelled and self.tap is not None
                and 200 <= self.status < 300 and self.tap.billed_success)

    @property
    def shown_status(self) -> int:
        """The status the trace, the request log and the metrics show: what the client got,
        or `CLIENT_CLOSED` when it hung up before an answer began."""
        return CLIENT_CLOSED if self.cancelled and self.status == 0 else self.status


@dataclass(slots=True)
class Turn:
    """One request. Built by `prepare`, completed by `decide`, closed by `settle`."""

    request_id: str
    api: Api
    path: str
    raw: bytes
    body: dict[str, Any]
    headers: Headers
    target: Target
    now: float  # wall clock at intake
    started: float  # monotonic clock at intake
    client_request_id: str | None = None
    ask: Ask | None = None
    router: RouterConfig | None = None
    # A concrete model's request (no router): the reserved router name of its pin slots
    # (`keys.direct_router`). None for a router's request.
    direct: str | None = None
    sid: SessionId | None = None
    delta: Delta | None = None
    # The full-transcript score when the caller already computed it (the replay scores each
    # request once for every sweep point); None: `plan_route` scores it if the strategy needs it.
    full: Difficulty | None = None
    dedupe_key: str = ""
    affinity_key: str | None = None
    side: str | None = None  # the `[[housekeeping]]` rule (or alias) that made it a side request
    side_alias: bool = False  # made one by an alias to a sessionless router (`prepare`)
    # A side request's own session (router, session id): its trace names it and its figures
    # count the request; nothing else of the session is read for or written by it. The router
    # is "" when the request does not tell which router's session it is (figures not counted).
    side_of: tuple[str, SessionId] | None = None  # (its router, its session)
    previous_response: str | None = None  # Responses `previous_response_id` (a hard pin)
    # A child request orca made itself (SPEC §16): why, and the request it serves.
    purpose: str | None = None
    parent_request_id: str | None = None
    classification: Classification | None = None  # the auto router's model classifier
    read: ReadRequest | None = None  # what to read from the store; None: nothing
    # Until the store read replaces it (every request that reads): one shared empty snapshot,
    # immutable and never written into, not a new one per request.
    snapshot: Snapshot = NO_SNAPSHOT
    degraded: bool = False
    plan: RoutePlan | None = None
    outcome: Outcome = field(default_factory=Outcome)
    routed: Routed | None = None  # SPEC §17: the route step, when routes/keys/budgets are set
    prefs: ProviderPrefs | None = None  # SPEC §20: the body's `provider` / `routing.mode`
    # This sidecar's transitions of the session not yet committed (SPEC §6.4 under bursts).
    in_flight: SessionInFlight = NO_IN_FLIGHT
    # Served on a pin another request of the session has since dropped and picked anew
    # (`proxy.in_flight`): its commit must not write that old pin back.
    pin_superseded: bool = False

    @property
    def session(self) -> str | None:
        return self.sid.id if self.sid is not None else None

    @property
    def router_name(self) -> str | None:
        return self.router.name if self.router is not None else None

    @property
    def pin_router(self) -> str | None:
        """The router whose slots hold this request's pins: its router's name, or the
        reserved one of a concrete model (`direct`)."""
        return self.router.name if self.router is not None else self.direct

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True
