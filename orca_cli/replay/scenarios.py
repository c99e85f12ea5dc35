"""The code bases the synthetic sessions talk about (SPEC §10).

A `Repo` is what trivial edits name (files, functions, variables) in one language; a
`Scenario` is one hard problem in such a repo — the component, the two methods that race,
the lock, and where its stack frames point. Every pasted trace, source excerpt, compile error
and prose sentence is filled from these, so a session reads as one coherent piece of work.
"""

from __future__ import annotations

from typing import Literal

from orca_cli.immutable import immutable

__all__ = ["REPOS", "SCENARIOS", "Lang", "Repo", "Scenario"]

Lang = Literal["go", "python", "rust", "ts"]


@immutable
class Repo:
    """What a trivial edit or a tool read can name in one language's repository."""

    lang: Lang
    files: tuple[str, ...]
    funcs: tuple[str, ...]
    names: tuple[tuple[str, str], ...]  # (old, new) identifier pairs for renames
    build: str  # the build command of a failure loop
    test: str  # the test command the agent runs after an edit
    test_ok: str  # its passing output ({secs} is filled)


@immutable
class Scenario:
    """One hard problem: the prose, traces and source excerpts of a hard turn all name it."""

    key: str
    lang: Lang
    component: str  # "the order cache"
    type: str  # the type that owns the state
    m1: str  # the reader that races
    m2: str  # the writer / sweeper it races with
    lock: str  # the lock, as the code spells it
    module: str  # Go package path, Python module, Rust crate path or TS module
    file: str  # the file the frames and excerpts point at
    workers: int  # concurrency the user mentions


REPOS: dict[Lang, Repo] = {
    "go": Repo(
        "go",
        ("internal/config/load.go", "internal/api/handler.go", "cmd/server/main.go",
         "internal/store/postgres.go", "internal/api/routes.go"),
        ("NewServer", "loadConfig", "writeJSON", "parseFlags", "openStore"),
        (("cfg", "config"), ("srv", "server"), ("ctxTimeout", "requestTimeout"),
         ("h", "handler"), ("db", "store")),
        "go build ./...",
        "go test ./internal/...",
        "ok  \tgithub.com/acme/orders/internal/api\t{secs}s\n"
        "ok  \tgithub.com/acme/orders/internal/config\t0.031s",
    ),
    "python": Repo(
        "python",
        ("orders/settings.py", "orders/api/views.py", "orders/cli.py", "orders/db.py",
         "orders/api/routes.py"),
        ("create_app", "load_settings", "render_order", "parse_args", "open_db"),
        (("cfg", "settings"), ("resp", "response"), ("tmo", "timeout"), ("h", "handler"),
         ("conn", "connection")),
        "python -m mypy orders",
        "python -m pytest -q tests/api",
        "..........................                                  [100%]\n"
        "26 passed in {secs}s",
    ),
    "rust": Repo(
        "rust",
        ("src/config.rs", "src/api/handler.rs", "src/main.rs", "src/store.rs", "src/api/mod.rs"),
        ("new_server", "load_config", "write_json", "parse_args", "open_store"),
        (("cfg", "config"), ("srv", "server"), ("tmo", "timeout"), ("h", "handler"),
         ("db", "store")),
        "cargo build",
        "cargo test --lib",
        "running 31 tests\n...............................\n"
        "test result: ok. 31 passed; 0 ignored; finished in {secs}s",
    ),
    "ts": Repo(
        "ts",
        ("src/config.ts", "src/api/handler.ts", "src/server.ts", "src/store.ts",
         "src/api/routes.ts"),
        ("createServer", "loadConfig", "writeJson", "parseArgs", "openStore"),
        (("cfg", "config"), ("srv", "server"), ("tmo", "timeoutMs"), ("h", "handler"),
         ("db", "store")),
        "npx tsc --noEmit",
        "npx vitest run src/api",
        " ✓ src/api/handler.test.ts (14 tests) {secs}s\n\n Test Files  1 passed (1)\n"
        "      Tests  14 passed (14)",
    ),
}

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("order-cache", "go", "the order cache", "Cache", "Get", "evictExpired", "c.mu",
             "github.com/acme/orders/internal/cache", "internal/cache/cache.go", 64),
    Scenario("ledger", "go", "the ledger", "Ledger", "Snapshot", "Apply", "l.mu",
             "github.com/acme/billing/internal/ledger", "internal/ledger/ledger.go", 32),
    Scenario("worker-pool", "python", "the worker pool", "WorkerPool", "acquire", "release",
             "self._lock", "jobs.pool", "jobs/pool.py", 48),
    Scenario("session-store", "python", "the session store", "SessionStore", "get", "refresh",
             "self._lock", "orders.sessions.store", "orders/sessions/store.py", 16),
    Scenario("conn-pool", "rust", "the connection pool", "Pool", "checkout", "checkin",
             "self.idle", "orders::pool", "src/pool.rs", 128),
    Scenario("event-bus", "ts", "the event bus", "EventBus", "publish", "flush",
             "this.flushing", "src/events/bus", "src/events/bus.ts", 24),
)
