"""`orca routes deploy|list|diff|rollback` over the deployed route versions (SPEC §17, §1.1).

The admin API (`/orca/v1/routes...`, `routes_endpoint`) and the CLI's direct path (Redis, no
sidecar running) both call the functions here, so both print the same documents, on either
backend. A routes text is validated exactly as `orca routes check` validates a file
(`with_routes_text`: every problem, each naming its node path) against the config of whoever
stores it: the sidecar's own through the admin API, the CLI's `--config` on the direct path.
A text that does not validate is never stored (400, `InvalidRoutes`); a rollback target that
no longer fits the config is refused (409) rather than activated and then skipped by every
sidecar.

Through the admin API the sidecar applies a deploy or rollback before it answers
(`Runtime.apply_routes`), so its next request walks the new routes, on the memory store as
on Redis; other sidecars sharing a Redis store follow within about a second (`Runtime._watch_routes`).

    GET  /orca/v1/routes                 {"active", "versions": [...]}          (routes list)
    GET  /orca/v1/routes/diff?a=A&b=B    {"a", "b", "diff"}                      (routes diff)
    POST /orca/v1/routes/check           {"text", "source"} -> {"ok", "file", "routes", "errors"}
    POST /orca/v1/routes/deploy          {"text", "source", "note"} -> the version
    POST /orca/v1/routes/rollback        {"version": int | null} -> the version now active
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from orca_cli.config.routes_file import with_routes_text
from orca_cli.errors import AdminError, ConfigError
from orca_cli.state.route_versions import RouteVersions, rollback_target
from orca_cli.wire.errors import error_body

if TYPE_CHECKING:
    from orca_cli.config.schema import Config
    from orca_cli.proxy.runtime import Runtime

__all__ = ["MAX_ROUTES_BODY", "InvalidRoutes", "check_routes", "deploy_routes",
           "diff_routes", "list_routes", "rollback_routes", "routes_endpoint", "versions_in"]


MAX_ROUTES_BODY = 1024 * 1024  # a routes file travels whole inside the JSON body
MAX_SOURCE = 200

BodyReader = Callable[[int], Awaitable[dict[str, Any]]]


class InvalidRoutes(AdminError):
    """A routes text that does not validate: 400, every problem in `problems`."""

    def __init__(self, source: str, errors: Sequence[ConfigError]) -> None:
        self.problems = _problems(errors)
        super().__init__(f"{len(errors)} problem(s) in {source}; nothing deployed: "
                         + "; ".join(p["message"] for p in self.problems), status=400)

    def body(self) -> bytes:
        """The admin API's error body, with `error.errors` listing every problem."""
        doc = orjson.loads(error_body("openai", self.status, str(self), code="invalid_routes"))
        doc["error"]["errors"] = self.problems
        return orjson.dumps(doc)


def _problems(errors: Sequence[ConfigError]) -> list[dict[str, Any]]:
    """As `orca routes check --json` lists them, plus the line it prints (`message`)."""
    return [{"key": e.key, "why": e.why, "path": e.path, "message": str(e)} for e in errors]


def versions_in(store: object) -> RouteVersions:
    """The route versions a store keeps: in the process (memory) or shared (Redis)."""
    get: Callable[[], RouteVersions] | None = getattr(store, "route_versions", None)
    if get is None:
        raise AdminError("this state store keeps no route versions", status=409)
    return get()


def check_routes(cfg: Config, text: str, source: str) -> dict[str, Any]:
    """`orca routes check --json`'s document for `text` against `cfg`; nothing is stored."""
    new, errors = with_routes_text(cfg, text, source)
    return {"ok": not errors, "file": source,
            "routes": [r.name for r in new.routes] if new is not None else [],
            "errors": _problems(errors)}


async def deploy_routes(versions: RouteVersions, cfg: Config, text: str, *, source: str,
                        note: str = "", now: float) -> dict[str, Any]:
    """Validate `text` against `cfg`, store it as a new version and make it active (text
    identical to the active version's makes none). `InvalidRoutes` when it does not fit."""
    new, errors = with_routes_text(cfg, text, source)
    if errors or new is None:
        raise InvalidRoutes(source, errors)
    return (await versions.deploy(text, now=now, note=note)).doc()


async def list_routes(versions: RouteVersions) -> dict[str, Any]:
    return {"active": await versions.active_version(),
            "versions": [v.doc() for v in await versions.versions()]}


async def diff_routes(versions: RouteVersions, a: int, b: int) -> dict[str, Any]:
    """Both versions and a unified diff of their texts (A to B)."""
    va, vb = await versions.get(a), await versions.get(b)
    if va is None or vb is None:
        raise AdminError(f"no route version {a if va is None else b}; see `orca routes list`",
                         status=404)
    lines = difflib.unified_diff(va.text.splitlines(keepends=True),
                                 vb.text.splitlines(keepends=True),
                                 fromfile=f"version {a}", tofile=f"version {b}")
    return {"a": va.doc(), "b": vb.doc(), "diff": "".join(lines)}


async def rollback_routes(versions: RouteVersions, cfg: Config,
                          version: int | None) -> dict[str, Any]:
    """Activate `version` (default: the highest below the active one) once it fits `cfg`."""
    if version is None:
        try:
            version = await rollback_target(versions)
        except LookupError as exc:
            raise AdminError(f"{exc}; see `orca routes list`", status=409) from None
    target = await versions.get(version)
    if target is None:
        raise AdminError(f"no route version {version}; see `orca routes list`", status=404)
    _new, errors = with_routes_text(cfg, target.text, f"version {version}")
    if errors:
        raise AdminError(f"version {version} does not fit this config: {errors[0]}",
                         status=409)
    return (await versions.activate(version)).doc()


# --- the admin API --------------------------------------------------------------------------


def _want(method: str, expected: str) -> None:
    if method != expected:
        raise AdminError(f"{method} is not allowed here; use {expected}", status=405)


def _version_param(params: Mapping[str, str], name: str) -> int:
    raw = params.get(name, "")
    if not raw.isdigit() or int(raw) < 1:
        raise AdminError(f"query parameter {name} must be a version number (1 or more)",
                         status=400)
    return int(raw)


def _text(doc: Mapping[str, Any], name: str, default: str | None = None) -> str:
    value = doc.get(name, default)
    if not isinstance(value, str):
        raise AdminError(f"body field {name} must be a string", status=400)
    return value


def _source(doc: Mapping[str, Any]) -> str:
    """The file name the errors name (the CLI sends the path it read)."""
    raw = _text(doc, "source", "routes file")
    return "".join(c for c in raw if c.isprintable())[:MAX_SOURCE] or "routes file"


async def routes_endpoint(rt: Runtime, method: str, rest: list[str],
                          params: Mapping[str, str], read_body: BodyReader) -> Any:
    """Serve `/orca/v1/routes[/...]` (the guard already checked the admin token)."""
    active = rt.routes
    if active is None or active.versions is None:
        raise AdminError("this sidecar's state store keeps no route versions", status=409)
    versions = active.versions
    if not rest:
        _want(method, "GET")
        return await list_routes(versions)
    if rest == ["diff"]:
        _want(method, "GET")
        return await diff_routes(versions, _version_param(params, "a"),
                                 _version_param(params, "b"))
    if len(rest) != 1 or rest[0] not in ("check", "deploy", "rollback"):
        raise AdminError(f"no admin endpoint {method} /orca/v1/routes/{'/'.join(rest)}; see "
                         "/orca/v1/routes, /routes/diff, /routes/check, /routes/deploy, "
                         "/routes/rollback", status=404)
    _want(method, "POST")
    doc = await read_body(MAX_ROUTES_BODY)
    if rest[0] == "rollback":
        version = doc.get("version")
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)
                                    or version < 1):
            raise AdminError("body field version must be a version number (1 or more) or "
                             "null", status=400)
        out = await rollback_routes(versions, rt.cfg, version)
    elif rest[0] == "check":
        return check_routes(rt.cfg, _text(doc, "text"), _source(doc))
    else:
        out = await deploy_routes(versions, rt.cfg, _text(doc, "text"), source=_source(doc),
                                  note=_text(doc, "note", ""), now=rt.clock.now())
    await rt.apply_routes()
    return out
