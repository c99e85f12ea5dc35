"""How the inspect/steer commands reach the state (SPEC §1.1): the running sidecar's admin API,
or — with the Redis backend and no sidecar answering — the store itself.

`Operator` offers one method per admin call. The first call decides the way in:

1. the admin API of the sidecar found from `--url`, `$ORCA_URL`, the running sidecars'
   records (`proxy/token.py`), then the config's `[server]` host and port, in that order
   (stderr says which), with `--token` or the token that sidecar wrote, over httpx;
2. when nothing listens there (or no token file exists) and `[state].backend = "redis"`, the
   store opened with `open_store` and the same `orca_cli.admin.service` functions;
3. with the memory backend, a clear error: that state lives inside the `orca serve` process.

The config is loaded without requiring the provider keys it names (`${ANTHROPIC_API_KEY}`
unset in the operator's shell is fine): these commands never call a provider.

Errors become one sentence on stderr and an exit code: 1 for a failure or refusal, 2 for a
usage problem (a bad parameter, an ambiguous session).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import quote

import typer

from orca_cli.cli.output import EXIT_FAIL, EXIT_USAGE, fail

if TYPE_CHECKING:
    from orca_cli.config.schema import Config
    from orca_cli.state.base import Store

__all__ = ["SINCE_HELP", "Operator", "config_option", "json_option", "local_since",
           "pick_session", "router_option", "session_argument", "token_option", "url_option"]

CLI_ACTOR = "cli"
HTTP_TIMEOUT_S = 10.0

Direct = Callable[["Store", "Config", float], Awaitable[Any]]


def url_option() -> Any:
    return typer.Option(None, "--url", help="The sidecar's base URL (default: $ORCA_URL, "
                        "else the running sidecar serving this directory's config, else the "
                        "config's \\[server] host and port; stderr says which).")


def redis_url_option() -> Any:
    return typer.Option(None, "--redis-url", metavar="URL", help="Read and write this Redis "
                        "store directly instead of asking the running sidecar.")


def token_option() -> Any:
    return typer.Option(None, "--token", envvar="ORCA_ADMIN_TOKEN",
                        help="The admin token (default: the one the sidecar wrote).")


def config_option() -> Any:
    return typer.Option(None, "--config", metavar="PATH", help="Config file (for the URL and, with no sidecar "
                        "running, the Redis store).")


def router_option() -> Any:
    return typer.Option(None, "--router", "-r", help="Router name (default: any).")


def session_argument() -> Any:
    return typer.Argument(None, metavar="[SESSION_ID]", help="A session id, or a unique start "
                          "of one (8 characters or more, as the request log prints it). "
                          "Default: the most recently active session.")


def json_option() -> Any:
    return typer.Option(False, "--json", help="Print one JSON document.")


class _OperatorEnviron(dict[str, str]):
    """The environment for loading the config of an operator command: a `${VAR}` that is
    unset (a provider key the operator's shell does not hold) reads as a placeholder, since
    these commands never call a provider. The variables that locate the config stay real."""

    _REAL = frozenset({"ORCA_CONFIG", "XDG_CONFIG_HOME", "HOME"})

    def __init__(self) -> None:
        import os

        super().__init__(os.environ)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self or key in self._REAL:
            return super().get(key, default)
        return f"unset-{key}"


SINCE_HELP = ("Only this recent: 90s, 15m, 2h, 7d (a bare number is seconds), or an ISO time; "
              "a time without an offset is local time, as orca prints it "
              "(2026-12-05T20:39:50), one with an offset or Z is in that zone.")


def local_since(text: str | None) -> str | None:
    """`--since` as the sidecar must read it: an ISO time without an offset is this shell's
    local time (every time orca prints is local), so it gains the local offset here, where
    the operator's zone is known; durations and times with an offset pass unchanged. The
    one parser stays `admin.service.parse_since`; this only names the zone."""
    if text is None or text.strip().replace(".", "", 1).isdigit():
        return text  # a bare number is seconds, never a compact ISO date
    from datetime import datetime

    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return text  # a duration, or nonsense parse_since reports
    return text if when.tzinfo is not None else when.astimezone().isoformat()


def _check_url(url: str, how: str) -> None:
    """A sidecar URL that cannot be one (`--url notaurl`) is a usage error, not a sidecar
    that "did not answer"."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        ok = False
    if not ok:
        fail(f"{how} must be the sidecar's http:// URL, such as http://127.0.0.1:8787, "
             f"got {url[:80]!r}", EXIT_USAGE)


def _exit_code(status: int) -> int:
    return EXIT_USAGE if status in (400, 405) else EXIT_FAIL


class Operator:
    """One command's way to the state; see the module docstring for the order tried."""

    def __init__(self, url: str | None = None, config: str | None = None, *,
                 token: str | None = None, redis_url: str | None = None) -> None:
        self._url_opt = url
        self._config_path = config
        self._cfg: Config | None = None
        # `--redis-url`: that Redis store, read and written directly, no sidecar asked.
        self._redis_url = redis_url
        self._mode: str | None = "direct" if redis_url else None  # "http" | "direct"
        self._token_opt = token
        self._token: str | None = None
        self.url = ""
        self._known_routers: set[str] = set()
        # Why the sidecar found for this config is not its own (it serves another config)
        self._foreign: str | None = None

    # --- the way in ------------------------------------------------------------------------

    @property
    def cfg(self) -> Config:
        if self._cfg is None:
            from orca_cli.config.load import load
            from orca_cli.errors import ConfigError

            try:
                cfg = load(self._config_path, environ=_OperatorEnviron())
            except ConfigError as exc:
                fail(str(exc))
            self._cfg = self._with_redis_url(cfg)
        return self._cfg

    def _with_redis_url(self, cfg: Config) -> Config:
        """The config with `--redis-url` as its store, as `orca serve --redis-url` takes it."""
        from orca_cli.cli.serve import with_state

        result: Config = with_state(cfg, None, self._redis_url)
        return result

    def _config_url(self) -> str:
        host, port = self.cfg.server.host, self.cfg.server.port
        if host in ("0.0.0.0", "::", "[::]", ""):
            host = "127.0.0.1"
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        return f"http://{shown}:{port}"

    def _fallback(self, why: str) -> None:
        if self.cfg.state.backend == "redis":
            sys.stderr.write(f"orca: {why}; reading the Redis store directly\n")
            self._mode = "direct"
            return
        fail(f"{why}, and the memory store lives inside the `orca serve` process: start "
             "`orca serve` (or use [state].backend = \"redis\" to inspect state without it)")

    def _decide(self) -> None:
        """Pick the way in once: HTTP when a token file exists, else the direct fallback."""
        if self._mode is not None:
            return
        from orca_cli.proxy.token import admin_token_path

        url, self._token, how = self._find_sidecar()
        self.url = url or self._config_url()
        _check_url(self.url, how)
        if self._foreign is not None:  # never another config's sidecar for this one
            self._fallback(self._foreign)
            return
        if how != "--url":
            sys.stderr.write(f"orca: sidecar {self.url} (from {how})\n")
        if self._token is None:
            self._fallback(f"no admin token at {admin_token_path()} (is `orca serve` running?)")
        else:
            self._mode = "http"

    def _find_sidecar(self) -> tuple[str | None, str | None, str]:
        """`find_sidecar`, except that with sidecars running (and no `--url` or `$ORCA_URL`)
        and a config found, only the one serving that config, else the one on its port, is
        this command's: another config's sidecar (the newest, say) knows nothing of this
        config's sessions, and a Redis config with no sidecar of its own is read directly.
        With no config file at all, the newest running sidecar is the one."""
        import os

        from orca_cli.proxy.token import find_sidecar, running_sidecars

        recs = [] if self._url_opt or os.environ.get("ORCA_URL") else running_sidecars()
        if not recs:
            return find_sidecar(self._url_opt, self._token_opt)
        from orca_cli.config.discover import discover
        from orca_cli.errors import ConfigError
        from orca_cli.proxy.token import admin_token_path, read_admin_token, record_config

        try:
            config = discover(self._config_path, _OperatorEnviron())
        except ConfigError:
            config = None
        if config is None:
            return find_sidecar(None, self._token_opt)
        real = os.path.realpath(config)
        serving = [r for r in recs if record_config(r) == real]
        if serving:
            best = serving[0]
            more = f", one of {len(recs)} running" if len(recs) > 1 else ""
            return (best.url, self._token_opt or best.token,
                    f"the sidecar started with pid {best.pid} serving {real}{more}")
        port = self._config_port()
        on_port = next((r for r in recs if r.port == port), None)
        if on_port is not None:
            other = record_config(on_port)
            if other is not None:  # that port's sidecar serves another config: not this one
                self._foreign = (f"the sidecar on {real}'s port {port} (pid {on_port.pid}) "
                                 f"serves {other}, not this config")
            return (on_port.url, self._token_opt or on_port.token,
                    f"the sidecar started with pid {on_port.pid} on {real}'s port")
        # Running sidecars all serve other configs: this config's own address, where no
        # sidecar may answer (the Redis store is then read directly).
        return None, self._token_opt or read_admin_token(admin_token_path()), f"the config {real}"

    def _config_port(self) -> int | None:
        from orca_cli.config.load import load
        from orca_cli.errors import ConfigError

        try:
            self._cfg = self._cfg or self._with_redis_url(
                load(self._config_path, environ=_OperatorEnviron()))
        except ConfigError:
            return None
        return self._cfg.server.port

    def _call(self, method: str, path: str, params: Mapping[str, Any] | None,
              body: Mapping[str, Any] | None, direct: Direct) -> Any:
        self._decide()
        if self._mode == "http":
            import httpx

            try:
                return self._http(method, path, params, body)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                self._fallback(f"no sidecar answers at {self.url}")
        return self._direct(direct)

    def _http(self, method: str, path: str, params: Mapping[str, Any] | None,
              body: Mapping[str, Any] | None) -> Any:
        import httpx

        query = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            r = httpx.request(method, self.url + path, params=query, json=body,
                              headers={"authorization": f"Bearer {self._token}"},
                              timeout=HTTP_TIMEOUT_S)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            raise
        except httpx.HTTPError as exc:
            fail(f"the sidecar at {self.url} did not answer ({type(exc).__name__}); check it "
                 "with `orca doctor`")
        if r.status_code == 401:
            from orca_cli.proxy.token import admin_token_path

            fail(f"the sidecar at {self.url} refused the admin token (from --token, its "
                 f"record or {admin_token_path()}); it belongs to another `orca serve` run: "
                 "pass --url and --token, or restart the sidecar")
        try:
            doc = r.json()
        except ValueError:
            fail(f"the sidecar at {self.url} answered {r.status_code} without JSON; is it orca?")
        if r.status_code >= 400:
            from orca_cli.statusline import error_message

            fail(error_message(doc) or f"the admin API answered {r.status_code}",
                 _exit_code(r.status_code))
        return doc

    def _direct(self, direct: Direct) -> Any:
        import asyncio

        from orca_cli.clock import SystemClock
        from orca_cli.errors import AdminError, StoreUnavailable
        from orca_cli.state.factory import open_store

        cfg = self.cfg
        clock = SystemClock()

        async def run() -> Any:
            store = open_store(cfg.state, clock=clock, trace_max=cfg.server.trace_max,
                               trace_ttl_s=cfg.server.trace_ttl_s)
            try:
                return await direct(store, cfg, clock.now())
            finally:
                await store.close()

        try:
            return asyncio.run(run())
        except AdminError as exc:
            fail(str(exc), _exit_code(exc.status))
        except StoreUnavailable as exc:
            fail(f"{exc}; check [state].redis_url or start the sidecar")

    # --- the calls -------------------------------------------------------------------------

    def list_sessions(self, router: str | None, session: str | None = None) -> Any:
        from orca_cli.admin import service as S

        return self._call("GET", "/orca/v1/sessions", {"router": router, "session": session},
                          None, lambda st, cfg, now: S.list_sessions(st, cfg, router,
                                                                      session=session))

    def recent(self, router: str | None, within_s: float | None = None) -> Any:
        from orca_cli.admin import service as S

        return self._call("GET", "/orca/v1/sessions/recent",
                          {"router": router, "within_s": within_s}, None,
                          lambda st, cfg, now: S.most_recent_sessions(st, cfg, within_s,
                                                                      now=now, router=router))

    def _check_router(self, router: str | None) -> None:
        """`--router NAME` naming no configured router is the same error for every command:
        the one `orca session` gets (`admin.service`'s check, by the sidecar's config when
        one answers), asked through the cheapest call that makes it — one read of the
        router's recent-sessions set. A concrete model's slots (`_direct.…`) are let by."""
        if router is None or router in self._known_routers:
            return
        from orca_cli.state.keys import is_direct_router

        if not is_direct_router(router):
            self.recent(router, within_s=0)
        self._known_routers.add(router)

    def _router_of(self, router: str | None, session: str) -> tuple[str, str]:
        """Over HTTP the path names the router: (router, session id), the router found from
        the session when not given. The sidecar takes a unique prefix of the id (the request
        log shortens them) and lists the candidates when several start with it."""
        if router is not None:
            return router, session
        rows = self.list_sessions(None, session)
        if not rows:
            fail(f"no such session {session!r}: orca has no tier state or pin for it; "
                 "`orca session list` shows the sessions orca knows")
        full = str(rows[0]["session_id"])
        routers = sorted({row["router"] for row in rows})
        if len(routers) > 1:
            fail(f"session {full!r} exists in routers {', '.join(routers)}; pass --router",
                 EXIT_USAGE)
        if full != session:
            sys.stderr.write(f"orca: session {full} (router {routers[0]})\n")
        return str(routers[0]), full

    def _session_path(self, router: str | None, session: str, tail: str = "") -> str:
        r, s = self._router_of(router, session)
        return f"/orca/v1/sessions/{quote(r, safe='')}/{quote(s, safe='')}{tail}"

    def show_session(self, router: str | None, session: str) -> Any:
        from orca_cli.admin import service as S

        return self._routed("GET", router, session, "", None,
                            lambda st, cfg, now: S.show_session(st, cfg, router, session))

    def escalate(self, router: str | None, session: str, *, once: bool, reason: str) -> Any:
        from orca_cli.admin import service as S

        return self._routed("POST", router, session, "/escalate",
                            {"once": once, "reason": reason, "actor": CLI_ACTOR},
                            lambda st, cfg, now: S.escalate(st, cfg, router, session, once=once,
                                                            reason=reason, actor=CLI_ACTOR,
                                                            now=now))

    def reset(self, router: str | None, session: str, *, reason: str) -> Any:
        from orca_cli.admin import service as S

        return self._routed("POST", router, session, "/reset",
                            {"reason": reason, "actor": CLI_ACTOR},
                            lambda st, cfg, now: S.reset(st, cfg, router, session,
                                                         reason=reason, actor=CLI_ACTOR,
                                                         now=now))

    def _routed(self, method: str, router: str | None, session: str, tail: str,
                body: Mapping[str, Any] | None, direct: Direct) -> Any:
        self._decide()
        if self._mode == "http":
            # Over HTTP the path names the router; finding it may itself fall back to direct.
            path = self._session_path(router, session, tail)
            if self._mode == "http":
                return self._call(method, path, None, body, direct)
        return self._direct(direct)

    def explain(self, request_id: str) -> Any:
        from orca_cli.admin import service as S

        if not request_id.strip():
            fail("REQUEST_ID is empty: give orca's request id, the client's X-Request-Id or "
                 "`last` (`orca requests` lists them)", EXIT_USAGE)

        return self._call("GET", f"/orca/v1/explain/{quote(request_id, safe='')}", None, None,
                          lambda st, cfg, now: S.explain(st, request_id, cfg))

    def requests(self, *, session: str | None = None, router: str | None = None,
                 since: str | None = None, after: float | None = None,
                 limit: int = 20) -> Any:
        from orca_cli.admin import service as S
        from orca_cli.admin.requests import recent_requests

        self._check_router(router)
        since = local_since(since)
        return self._call("GET", "/orca/v1/requests",
                          {"session": session, "router": router, "since": since,
                           "after": after, "limit": limit}, None,
                          lambda st, cfg, now: recent_requests(
                              st, session=session, router=router,
                              since=S.parse_since(since, now), after=after, limit=limit))

    def pins(self, session: str | None, router: str | None) -> Any:
        from orca_cli.admin import service as S

        return self._call("GET", "/orca/v1/pins", {"session": session, "router": router}, None,
                          lambda st, cfg, now: S.pins_dump(st, cfg, session=session,
                                                           router=router))

    def audit(self, router: str | None, since: str | None) -> Any:
        from orca_cli.admin import service as S

        self._check_router(router)
        since = local_since(since)
        return self._call("GET", "/orca/v1/audit", {"router": router, "since": since}, None,
                          lambda st, cfg, now: S.audit(st, router, S.parse_since(since, now)))

    def stats(self) -> Any:
        from orca_cli.admin import service as S

        return self._call("GET", "/orca/v1/stats", None, None,
                          lambda st, cfg, now: S.stats(cfg, st, now))


def pick_session(op: Operator, session: str | None, router: str | None) -> tuple[str | None, str]:
    """(router, session) a command acts on: the given id, or the most recently active
    session (SPEC §1.1); several active in the last 5 minutes -> listed on stderr, exit 2."""
    if session:
        return router, session
    from orca_cli.admin import service as S

    rows = op.recent(router)
    try:
        row = S.choose_recent(rows, S.RECENT_WINDOW_S)
    except S.AmbiguousSession as exc:
        lines = [f"orca: {exc}:"]
        lines += [f"  {c['session_id']}  (router {c['router']}, active {c['age_s']:.0f} s ago)"
                  for c in exc.candidates]
        sys.stderr.write("\n".join(lines) + "\n")
        raise typer.Exit(EXIT_USAGE) from None
    except S.OperatorError as exc:
        _fail_op(exc)
    sys.stderr.write(f"orca: session {row['session_id']} (router {row['router']}, active "
                     f"{float(row['age_s']):.0f} s ago)\n")
    return str(row["router"]), str(row["session_id"])


def _fail_op(exc: Any) -> NoReturn:
    fail(str(exc), _exit_code(int(getattr(exc, "status", 400))))
