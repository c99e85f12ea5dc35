"""`orca serve [--host H] [--port P] [--config PATH] [--allow-remote]` (SPEC §1.1, §11)."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import Any

import typer

from orca_cli.cli.output import fail

_STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


class _Plain:
    """Unwrapped lines on stderr: the `export` lines must be copyable exactly."""

    def print(self, line: str) -> None:
        typer.echo(line, err=True)


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve_cmd(
        host: str | None = typer.Option(None, "--host", help="Bind address (default from "
                                        "\\[server].host, 127.0.0.1)."),
        port: int | None = typer.Option(None, "--port", callback=checked_port,
                                        help="Port (default \\[server].port, 8787; 0 picks a "
                                             "free one)."),
        config: str | None = typer.Option(None, "--config", help="Config file."),
        allow_remote: bool = typer.Option(False, "--allow-remote", help="Allow a non-loopback "
                                          "--host (needs \\[server].inbound_token)."),
        log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
        log_format: str = typer.Option("text", "--log-format", metavar="text|json",
                                       help="The request log on stdout: one aligned line per "
                                            "request (coloured on a terminal) or JSON lines."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No request log."),
        otlp_endpoint: str | None = typer.Option(
            None, "--otlp-endpoint", metavar="URL", envvar="ORCA_OTLP_ENDPOINT",
            help="Export one OpenTelemetry span per request over OTLP/HTTP to this collector "
                 "(default \\[telemetry].otlp_endpoint; needs the otel extra)."),
        state: str | None = typer.Option(None, "--state", metavar="memory|redis",
                                         help="The state store (default \\[state].backend)."),
        redis_url: str | None = typer.Option(None, "--redis-url", metavar="URL",
                                             help="Redis URL (default \\[state].redis_url); "
                                                  "implies --state redis."),
        workers: int = typer.Option(1, "--workers", min=1, max=64, metavar="N",
                                    help="Serve with N processes on one port (needs the Redis "
                                         "store: sessions are shared through it)."),
    ) -> None:
        """Start the sidecar proxy next to your coding agent.

        Each finished request prints one line on stdout (time, request id, session, router,
        tier and reason, model@channel#key, status, latency, cached share, cost); the start-up
        lines and warnings go to stderr.

        \b
        Example:
            orca serve
            orca serve --port 8788 --config ./orca.toml
            orca serve --log-format json | jq .
            orca serve --workers 2 --redis-url redis://127.0.0.1:6379/0
        """
        from orca_cli.config.load import is_loopback_host, load
        from orca_cli.errors import ConfigError

        try:
            cfg = load(config)
        except ConfigError as exc:
            fail(str(exc))
        cfg = with_state(cfg, state, redis_url)
        if workers > 1 and cfg.state.backend != "redis":
            fail(f"--workers {workers} needs the Redis store: each worker is its own process, "
                 "and only Redis lets them share sessions, pins and caps. Pass --state redis "
                 "(or --redis-url URL), or set [state] backend = \"redis\"", 2)
        if cfg.source is None and not cfg.channels:
            from orca_cli.config.discover import looked_at

            fail(f"no config file found (looked at {looked_at(os.environ)}); run `orca init` "
                 "(it writes a config whose sim channels answer offline) or pass --config")
        _say_config_issues(cfg)
        bind = host or cfg.server.host
        bind_port = cfg.server.port if port is None else port
        if not is_loopback_host(bind):
            if not allow_remote:
                fail(f"--host {bind} is not a loopback address; every process that can reach it "
                     "could use your API keys. Pass --allow-remote and set [server].inbound_token")
            if not cfg.server.inbound_token:
                fail("a non-loopback --host needs [server].inbound_token (clients then send it "
                     "as Authorization: Bearer … or x-api-key)")
        if log_format not in ("text", "json"):
            fail(f"--log-format must be text or json, got {log_format!r}", 2)
        endpoint = otlp_endpoint or getattr(getattr(cfg, "telemetry", None), "otlp_endpoint",
                                            None)
        _run(cfg, bind, bind_port, log_level, None if quiet else log_format, endpoint or None,
             workers)


def checked_port(value: int | None) -> int | None:
    """`--port` as parsed: a TCP port, or 0 for a free one; anything else is a usage error
    here rather than an OverflowError from bind() later."""
    if value is not None and not 0 <= value <= 65535:
        fail(f"--port must be a TCP port from 1 to 65535 (or 0 for a free one), got {value}", 2)
    return value


def with_state(cfg: Any, state: str | None, redis_url: str | None) -> Any:
    """The config with `--state` / `--redis-url` applied to its `[state]` table (SPEC §1.1):
    a URL alone means Redis; `--state memory` with a URL is a usage error."""
    import dataclasses
    from urllib.parse import urlsplit

    if state is None and redis_url is None:
        return cfg
    if state not in (None, "memory", "redis"):
        fail(f"--state must be memory or redis, got {state!r}", 2)
    if redis_url is not None:
        if state == "memory":
            fail("--redis-url needs --state redis (or no --state)", 2)
        if urlsplit(redis_url).scheme not in ("redis", "rediss", "unix"):
            fail("--redis-url must be a redis://, rediss:// or unix:// URL", 2)
    changes: dict[str, Any] = {"backend": state or "redis"}
    if redis_url is not None:
        changes["redis_url"] = redis_url
    return dataclasses.replace(cfg, state=dataclasses.replace(cfg.state, **changes))


def _run(cfg: object, host: str, port: int, log_level: str,
         log_format: str | None = "text", otlp_endpoint: str | None = None,
         workers: int = 1) -> None:
    import logging

    from orca_cli.cli.agent_setup import banner_lines, setup_for
    from orca_cli.config.schema import Config
    from orca_cli.proxy.server import bind_socket
    from orca_cli.proxy.token import admin_token_path, sidecar_record, write_admin_token
    from orca_cli.proxy.workers import supervise

    assert isinstance(cfg, Config)
    logging.basicConfig(level=logging.WARNING, format="orca: %(message)s")
    try:
        sock = bind_socket(host, port, reuse_port=workers > 1)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another --port "
             "or stop what holds it")
    real_port = sock.getsockname()[1]
    token = write_admin_token()
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{real_port}"

    def banner() -> None:
        con = _Plain()
        procs = f", {workers} workers" if workers > 1 else ""
        con.print(f"orca {cfg.source or '(built-in defaults)'} listening on {base} "
                  f"(state: {cfg.state.backend}{procs})")
        for line in banner_lines(setup_for(cfg, base)):
            con.print(line)
        con.print(f"admin token: {admin_token_path()} (for orca explain, session, escalate)")

    def worker(_index: int) -> None:
        # The stop signals stay blocked (`hold_stops`) until the server's own handler is in
        # place (`_GracefulServer.capture_signals` unblocks them): a stop sent while the
        # worker starts waits for it and is then a graceful stop. Taken earlier, it would
        # raise SystemExit wherever start-up stood, and a finalizer running at that moment
        # swallows it ("Exception ignored in ..."): the worker then served on, stopped by
        # nobody, and the parent waited for it forever.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)  # once the server has let go
        # Each worker its own listener on the port (the kernel spreads connections); the
        # parent's socket only holds the port and is never listened on.
        _serve(cfg, bind_socket(host, real_port, reuse_port=True), token, host, real_port,
               log_level, log_format, otlp_endpoint)

    # Until uvicorn's handler takes over (and once it has let go), SIGTERM ends the process
    # through its `finally` blocks, the sidecar record's removal among them, with status 0;
    # the default action would kill it on the spot. `--workers` replaces it with its own.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    # The record names the config by its absolute path: `orca statusline` and the operator
    # commands, run from any directory, pick the sidecar serving their project's config.
    with sidecar_record(host, real_port, token, os.path.abspath(cfg.source) if cfg.source
                        else None):
        if workers == 1:
            # Listening before the banner says so: a client that connects as soon as it reads
            # "listening on" waits in the backlog while the app starts, never refused.
            sock.listen(2048)
            banner()
            _serve(cfg, sock, token, host, real_port, log_level, log_format, otlp_endpoint)
            return
        # A stop that arrives while the workers are forked would miss those forked after it:
        # it waits, blocked, until all are, and is taken when the banner's wait listens.
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            code = supervise(workers, worker, hold_stops=True,
                             on_started=lambda: _when_answering(host, real_port, banner))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    if code:
        raise typer.Exit(code)


def _say_config_issues(cfg: Any) -> None:
    """What `orca config check` finds, on stderr before the banner: a config it refuses (an
    escalation that cannot escalate) still serves, as its routers allow, but never silently."""
    from orca_cli.config.load import check

    for issue in check(cfg):
        what = "warning" if issue.severity == "warning" else "config error (served anyway)"
        sys.stderr.write(f"orca: {what}: {issue}\n")


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def _when_answering(host: str, port: int, then: Any, timeout_s: float = 30.0) -> None:
    """Run `then` once a worker accepts connections on the port (the banner's promise); if
    none does in time, say so instead (the workers' own errors are on stderr above). A stop
    asked for meanwhile (SIGINT, SIGTERM) ends the wait at once, after the supervisor's own
    handler has passed it on to the workers."""
    import socket
    import time

    stopping = False
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        handler = handlers[signal.Signals(signum)]
        if callable(handler):
            handler(signum, frame)

    for sig in handlers:
        signal.signal(sig, stop)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)  # one that came meanwhile
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not stopping:
            try:
                socket.create_connection((host.strip("[]"), port), timeout=1).close()
            except OSError:
                time.sleep(0.05)
                continue
            then()
            return
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if not stopping:
        typer.echo(f"orca: no worker accepts connections on port {port} after {timeout_s:g} s",
                   err=True)


def _serve(cfg: object, sock: object, token: str, host: str, port: int, log_level: str,
           log_format: str | None, otlp_endpoint: str | None) -> None:
    """One serving process: its app, runtime and event loop on `sock`, until stopped."""
    import socket

    from orca_cli.compose import create_app
    from orca_cli.config.schema import Config
    from orca_cli.proxy.server import build_server, collect_as_a_server

    assert isinstance(cfg, Config) and isinstance(sock, socket.socket)
    app = create_app(cfg, admin_token=token, port=port)
    sink = _trace_sinks(log_format, otlp_endpoint)
    if sink is not None:
        app.rt.trace_sinks.append(sink.emit)
        app.rt.on_close.append(sink.close)  # the log's queued lines, the last spans
    server = build_server(app, cfg.server, host=host, port=port, log_level=log_level)
    collect_as_a_server()
    # On the loop `build_server` asked uvicorn for: uvloop, which `uvicorn[standard]` installs
    # (the stdlib loop where it cannot be imported). Counted: 3-6 % fewer instructions a
    # request than the stdlib loop, and two syscalls fewer (bench/README.md, "The event loop").
    server.run(sockets=[sock])


def _trace_sinks(log_format: str | None, otlp_endpoint: str | None) -> Any:
    """The request log and the OpenTelemetry export, each when asked for (SPEC §15)."""
    from orca_cli.errors import ConfigError
    from orca_cli.trace.log import RequestLog, Tee, TraceSink

    sinks: list[TraceSink] = []
    if log_format is not None:
        sinks.append(RequestLog(fmt="json" if log_format == "json" else "text"))
    if otlp_endpoint:
        from orca_cli.trace.otel import otlp_sink

        try:
            sinks.append(otlp_sink(otlp_endpoint))
        except ConfigError as exc:
            fail(str(exc))
    if not sinks:
        return None
    return sinks[0] if len(sinks) == 1 else Tee(*sinks)
