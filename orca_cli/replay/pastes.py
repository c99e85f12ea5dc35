"""What a developer pastes and what a tool prints (SPEC §10): stack traces, source
excerpts, compile errors, file reads and test runs.

Every generator draws its volatile parts (goroutine ids, addresses, line numbers, pids) from
the caller's `random.Random`, so the same seed yields the same bytes. `trace` and `source`
grow unit by unit until they reach the requested size (the corpus asks for 3–8 KB). Compile
errors keep their message and file for the life of a session and change only what changes
between two runs of the same failure (lines, columns, addresses, ids), which is exactly what
`routing.strikes.normalise_error_line` removes.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from orca_cli.replay.scenarios import Lang, Repo, Scenario

__all__ = [
    "COMPILE_ERRORS",
    "PASTE_MAX",
    "PASTE_MIN",
    "compile_error",
    "file_read",
    "source",
    "test_run",
    "trace",
]

# A hard turn's paste is PASTE_MIN..PASTE_MAX characters (the seed's 3–8 KB).
PASTE_MIN, PASTE_MAX = 3000, 8000


def _grow(head: str, unit: Callable[[int], str], size: int, tail: str = "") -> str:
    """`head` + units + `tail`, until the text reaches `size` characters, never passing
    `PASTE_MAX` (the first unit is always kept)."""
    out = [head]
    n = len(head) + len(tail)
    i = 0
    while n < size:
        piece = unit(i)
        if i and n + len(piece) > PASTE_MAX:
            break
        out.append(piece)
        n += len(piece)
        i += 1
    out.append(tail)
    return "".join(out)


def _addr(rng: random.Random) -> str:
    return f"0xc{rng.getrandbits(36):09x}"


def _off(rng: random.Random) -> str:
    return f"+0x{rng.randrange(0x20, 0x900):x}"


# ------------------------------------------------------------------------------- traces

_GO_PANICS = (
    "panic: runtime error: invalid memory address or nil pointer dereference\n"
    "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc={pc}]\n\n",
    "fatal error: concurrent map writes\n\n",
    "fatal error: all goroutines are asleep - deadlock!\n\n",
)
_GO_STATES = (
    ("semacquire", "sync.runtime_SemacquireRWMutex({a}, 0x0, 0x0)\n"
     "\t/usr/local/go/src/runtime/sema.go:87 {o}\nsync.(*RWMutex).Lock({a})\n"
     "\t/usr/local/go/src/sync/rwmutex.go:146 {o}\n"),
    ("select", "runtime.gopark({a}, 0x0, 0x0, 0x0, 0x0)\n"
     "\t/usr/local/go/src/runtime/proc.go:398 {o}\n"
     "runtime.selectgo({a}, {a}, 0x2, 0x0, 0x0)\n\t/usr/local/go/src/runtime/select.go:327 {o}\n"),
    ("chan receive", "runtime.gopark({a}, 0x0, 0x0, 0x0, 0x0)\n"
     "\t/usr/local/go/src/runtime/proc.go:398 {o}\nruntime.chanrecv({a}, {a}, 0x1)\n"
     "\t/usr/local/go/src/runtime/chan.go:583 {o}\n"),
)


def _go_trace(rng: random.Random, sc: Scenario, size: int) -> str:
    head = _GO_PANICS[rng.randrange(len(_GO_PANICS))].format(pc=f"0x{rng.getrandbits(24):x}")
    base = 7 + rng.randrange(40)
    lines = (rng.randrange(60, 200), rng.randrange(30, 120))

    def unit(i: int) -> str:
        if i == 0:
            state, frames = "running", f"{sc.module}.(*entry).promote(...)\n\t/src/{sc.file}:88\n"
        else:
            state, frames = _GO_STATES[i % len(_GO_STATES)]
            frames = frames.replace("{a}", _addr(rng)).replace("{o}", _off(rng))
        return (
            f"goroutine {base + i * 3} [{state}]:\n{frames}"
            f"{sc.module}.(*{sc.type}).{sc.m1}({_addr(rng)}, {{{_addr(rng)}, 0x8}})\n"
            f"\t/src/{sc.file}:{lines[0] + i % 5} {_off(rng)}\n"
            f"{sc.module.rsplit('/', 2)[0]}/internal/api.(*Handler).Serve({_addr(rng)}, "
            f"{{0x7f1e2c, {_addr(rng)}}}, {_addr(rng)})\n"
            f"\t/src/internal/api/handler.go:{lines[1] + i % 3} {_off(rng)}\n"
            f"net/http.HandlerFunc.ServeHTTP({_addr(rng)}, {{0x7f1e2c, {_addr(rng)}}}, "
            f"{_addr(rng)})\n\t/usr/local/go/src/net/http/server.go:2136 +0x29\n"
            f"created by net/http.(*Server).Serve in goroutine 1\n"
            f"\t/usr/local/go/src/net/http/server.go:3086 +0x5cb\n\n"
        )

    return _grow(head, unit, size)


_PY_ERRORS = (
    "KeyError: 'lease:{n}'", "RuntimeError: dictionary changed size during iteration",
    "AssertionError: lease {n} held by two workers (pool=orders-default, generation=17)",
    "asyncio.exceptions.InvalidStateError: invalid state: the lease was already released by "
    "another task",
)

_PY_CHAINS = (
    "\nThe above exception was the direct cause of the following exception:\n\n",
    "\nDuring handling of the above exception, another exception occurred:\n\n",
)


def _py_trace(rng: random.Random, sc: Scenario, size: int) -> str:
    pkg = sc.file.rsplit("/", 1)[0]
    lines = [rng.randrange(40, 400) for _ in range(4)]

    def unit(i: int) -> str:
        error = _PY_ERRORS[(i + lines[0]) % len(_PY_ERRORS)].format(n=rng.randrange(1000, 9999))
        sep = "" if i == 0 else _PY_CHAINS[i % 2]
        return (
            f"{sep}Traceback (most recent call last):\n"
            f'  File "/usr/lib/python3.12/asyncio/base_events.py", line {653 + i}, '
            f"in run_until_complete\n    return future.result()\n"
            f'  File "/app/.venv/lib/python3.12/site-packages/anyio/_backends/_asyncio.py", '
            f"line {lines[1]}, in run\n    result = await func(*args)\n"
            f'  File "/app/.venv/lib/python3.12/site-packages/uvicorn/protocols/http/'
            f'httptools_impl.py", line {411 + i}, in run_asgi\n'
            f"    result = await app(  # type: ignore[func-returns-value]\n"
            f'  File "/app/{pkg}/runner.py", line {lines[2] + i}, in run_job\n'
            f"    async with self.pool.{sc.m1}() as worker:\n"
            f'  File "/app/{sc.file}", line {lines[3] + i}, in {sc.m1}\n'
            f"    worker = self._idle.pop(key)\n"
            f'  File "/app/{sc.file}", line {lines[3] + 40 + i}, in {sc.m2}\n'
            f"    del self._leases[worker.lease_id]\n{error}\n"
        )

    return _grow("", unit, size)


def _rust_trace(rng: random.Random, sc: Scenario, size: int) -> str:
    crate = sc.module.split("::")[0]
    rustc = f"{rng.getrandbits(160):040x}"
    line, col = rng.randrange(40, 300), rng.randrange(5, 40)
    frames = (
        ("rust_begin_unwind", f"/rustc/{rustc}/library/std/src/panicking.rs:652:5"),
        ("core::panicking::panic_fmt", f"/rustc/{rustc}/library/core/src/panicking.rs:72:14"),
        ("core::option::unwrap_failed", f"/rustc/{rustc}/library/core/src/option.rs:2015:5"),
        (f"{sc.module}::{sc.type}::{sc.m1}::{{{{closure}}}}", f"./{sc.file}:{line}:{col}"),
        (f"{sc.module}::{sc.type}::{sc.m2}", f"./{sc.file}:{line + 61}:9"),
        ("tokio::runtime::task::core::Core<T,S>::poll::{{closure}}",
         "/home/dev/.cargo/registry/src/index.crates.io-6f17d22bba15001f/tokio-1.38.0/src/"
         "runtime/task/core.rs:328:17"),
        ("tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
         "/home/dev/.cargo/registry/src/index.crates.io-6f17d22bba15001f/tokio-1.38.0/src/"
         "runtime/scheduler/multi_thread/worker.rs:576:13"),
    )

    def unit(i: int) -> str:
        body = "".join(f"{k:>4}: {name}\n             at {where}\n"
                       for k, (name, where) in enumerate(frames))
        return (f"thread 'tokio-runtime-worker' panicked at {sc.file}:{line}:{col}:\n"
                f"called `Option::unwrap()` on a `None` value (worker {rng.randrange(1, 17)}, "
                f"pool {crate})\nstack backtrace:\n{body}")

    return _grow("", unit, size,
                 "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose "
                 "backtrace.\n")


def _ts_trace(rng: random.Random, sc: Scenario, size: int) -> str:
    lines = [rng.randrange(20, 300) for _ in range(3)]

    def unit(i: int) -> str:
        rid = f"{rng.getrandbits(48):012x}"
        return (
            f"[2026-08-14T10:{i % 60:02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z] "
            f"ERROR unhandled rejection request_id={rid}\n"
            f"TypeError: Cannot read properties of undefined (reading 'offset')\n"
            f"    at {sc.type}.{sc.m2} (/app/{sc.file}:{lines[0] + i % 4}:17)\n"
            f"    at {sc.type}.{sc.m1} (/app/{sc.file}:{lines[1]}:12)\n"
            f"    at async Promise.all (index {i % 6})\n"
            f"    at async OrderService.place (/app/src/orders/service.ts:{lines[2]}:5)\n"
            f"    at async Object.handler (/app/src/api/routes.ts:57:20)\n"
            f"    at async /app/node_modules/fastify/lib/handleRequest.js:{120 + i % 3}:22\n\n"
        )

    return _grow("", unit, size)


_TRACES: dict[Lang, Callable[[random.Random, Scenario, int], str]] = {
    "go": _go_trace, "python": _py_trace, "rust": _rust_trace, "ts": _ts_trace,
}


def trace(rng: random.Random, sc: Scenario, size: int) -> str:
    """A crash report of about `size` characters in the scenario's language."""
    return _TRACES[sc.lang](rng, sc, size)


# ------------------------------------------------------------------------------- source
# The excerpts carry none of `routing.strikes.ERROR_MARKERS`: a file the agent reads twice is
# not a repeated failure, and an easy session must not strike on its reads.

_SOURCE_UNITS: dict[Lang, tuple[str, str, str]] = {
    "go": ("```go\npackage {pkg}\n\nimport (\n\t\"sync\"\n\t\"time\"\n)\n\n",
           "// {fn} returns the entry for key, promoting it in the LRU list. A stale\n"
           "// entry is refreshed under the write lock; readers keep the old copy until then.\n"
           "func (c *{type}) {fn}(key string) (*entry, bool) {{\n\t{lock}.RLock()\n"
           "\te, ok := c.index[key]\n\t{lock}.RUnlock()\n\tif !ok || e == nil {{\n"
           "\t\treturn nil, false\n\t}}\n\tif time.Since(e.loaded) > {n}*time.Second {{\n"
           "\t\t{lock}.Lock()\n\t\tdefer {lock}.Unlock()\n\t\tc.lru.MoveToFront(e.elem)\n"
           "\t\treturn e, true\n\t}}\n\treturn e, true\n}}\n\n", "```\n"),
    "python": ("```python\nimport asyncio\nfrom dataclasses import dataclass\n\n\n"
               "class {type}:\n",
               "    async def {fn}(self, key: str, timeout: float = {n}.0) -> Worker:\n"
               "        \"\"\"Lease the idle worker for key; wait for a release when it is "
               "already leased.\n\n        Leases outlive the lock on purpose: a release "
               "wakes the waiters.\n        \"\"\"\n"
               "        async with {lock}:\n            worker = self._idle.get(key)\n"
               "        if worker is None:\n            return await self._spawn(key)\n"
               "        # A worker can be idle and leased at once between the pop above and\n"
               "        # the bookkeeping below; the second caller is sent round again.\n"
               "        if worker.lease_id in self._leases:\n"
               "            await asyncio.sleep(0)\n            return await self.{fn}(key)\n"
               "        self._leases[worker.lease_id] = worker\n        return worker\n\n",
               "```\n"),
    "rust": ("```rust\nuse std::sync::Arc;\nuse tokio::sync::Mutex;\n\n"
             "impl {type} {{\n",
             "    /// Checks a connection out of the idle list, reconnecting when it is stale.\n"
             "    /// The idle guard is dropped before reconnecting so that checkin can proceed.\n"
             "    pub async fn {fn}(&self, key: &str) -> io::Result<Conn> {{\n"
             "        let mut idle = {lock}.lock().await;\n"
             "        let conn = idle.pop().unwrap();\n"
             "        // Stale connections are replaced outside the guard: reconnecting can take\n"
             "        // a full round trip, and holding the idle list that long stalls every\n"
             "        // caller.\n"
             "        if conn.age() > {n} {{\n"
             "            drop(idle);\n            return self.reconnect(key).await;\n"
             "        }}\n        self.busy.fetch_add(1, Ordering::SeqCst);\n"
             "        Ok(conn)\n    }}\n\n", "}}\n```\n"),
    "ts": ("```ts\nimport {{ setTimeout as sleep }} from 'node:timers/promises';\n\n"
           "export class {type} {{\n  private pending: Event[] = [];\n",
           "  async {fn}(batch: Event[], retries = {n}): Promise<void> {{\n"
           "    if ({lock}) {{\n      await sleep(0);\n      return this.{fn}(batch, retries);\n"
           "    }}\n    {lock} = true;\n    const offset = this.pending.length;\n"
           "    this.pending.push(...batch);\n"
           "    await this.sink.write(this.pending.slice(offset));\n"
           "    {lock} = false;\n  }}\n\n", "}}\n```\n"),
}


def source(rng: random.Random, sc: Scenario, size: int) -> str:
    """A pasted excerpt of the scenario's source, about `size` characters."""
    head, unit, tail = _SOURCE_UNITS[sc.lang]
    names = (sc.m1, sc.m2, f"{sc.m1}Locked", f"try{sc.m2.capitalize()}", f"{sc.m1}Slow")
    pkg = sc.module.rsplit("/", 1)[-1].rsplit(".", 1)[-1]
    fill = {"pkg": pkg, "type": sc.type, "lock": sc.lock}
    return _grow(
        head.format(**fill),
        lambda i: unit.format(fn=names[i % len(names)] + ("" if i < len(names) else str(i)),
                              n=rng.randrange(2, 90), **fill),
        size,
        tail.format(),
    )


# ------------------------------------------------------------------------- tool output


def file_read(rng: random.Random, sc: Scenario, lines: int) -> str:
    """A read_file result: `lines` numbered lines of the scenario's source."""
    text = source(rng, sc, lines * 40).splitlines()[1:lines + 1]
    start = rng.randrange(1, 200)
    return "\n".join(f"{start + k:6}\t{line}" for k, line in enumerate(text))


def test_run(rng: random.Random, repo: Repo) -> str:
    """A passing test run, as the agent's shell tool prints it."""
    secs = f"{rng.randrange(100, 4000) / 1000:.3f}"
    pid = rng.randrange(2000, 90000)
    return f"$ {repo.test}\n{repo.test_ok.format(secs=secs)}\n[exit 0 · pid {pid}]"


# Per-language failing builds, (command, output): {l*}/{c*} are lines and columns, {a1} an
# address. The message and the file never change within a session.
COMPILE_ERRORS: dict[Lang, tuple[tuple[str, str], ...]] = {
    "go": (
        ("go build ./...",
         "# github.com/acme/orders/internal/api\n"
         "internal/api/handler.go:{l1}:{c1}: undefined: cache.NewWithTTL\n"
         "internal/api/handler.go:{l2}:{c2}: cannot use order (variable of type *Order) as "
         "OrderView value in argument to writeJSON\n"),
        ("go build ./...",
         "# github.com/acme/orders/cmd/server\n"
         "cmd/server/main.go:{l1}:{c1}: too many arguments in call to store.Open\n"
         "\thave (string, *Config, time.Duration)\n\twant (string, *Config)\n"
         "cmd/server/main.go:{l2}:{c2}: undefined: metrics.Register\n"),
    ),
    "python": (
        ("python -m mypy orders",
         "orders/api/views.py:{l1}: error: Argument 1 to \"render_order\" has incompatible "
         "type \"dict[str, Any]\"; expected \"Order\"  [arg-type]\n"
         "orders/api/views.py:{l2}: error: Item \"None\" of \"Order | None\" has no attribute "
         "\"total\"  [union-attr]\nFound 2 errors in 1 file (checked 41 source files)\n"),
    ),
    "rust": (
        ("cargo build",
         "   Compiling orders v0.4.2 (/home/dev/orders)\n"
         "error[E0382]: borrow of moved value: `conn`\n  --> src/store.rs:{l1}:{c1}\n   |\n"
         "   = note: move occurs because `conn` has type `Conn`, which does not implement the "
         "`Copy` trait\n\n"
         "error: could not compile `orders` (lib) due to 1 previous error\n"),
    ),
    "ts": (
        ("npx tsc --noEmit",
         "src/api/handler.ts({l1},{c1}): error TS2345: Argument of type 'string' is not "
         "assignable to parameter of type 'OrderId'.\n"
         "src/api/handler.ts({l2},{c2}): error TS2339: Property 'total' does not exist on "
         "type 'Order'.\n\nFound 2 errors in the same file, starting at: "
         "src/api/handler.ts:{l1}\n"),
        ("npm run build:native",
         "/usr/bin/ld: build/cache.o: in function `orders::Cache::get(std::string const&)':\n"
         "cache.cpp:(.text+{a1}): undefined reference to `orders::Lru::promote(orders::Entry*)'\n"
         "collect2: error: ld returned 1 exit status\n"
         "make: *** [Makefile:{l2}: build/native] Error 1\n"),
    ),
}


def compile_error(rng: random.Random, command: str, template: str) -> str:
    """One run of a session's failing build: the same message and file, new positions,
    addresses and ids."""
    l1 = rng.randrange(20, 400)
    body = template.format(l1=l1, c1=rng.randrange(2, 60), l2=l1 + rng.randrange(3, 40),
                           c2=rng.randrange(2, 60), a1=f"0x{rng.randrange(0x40, 0xfff):x}")
    return (f"$ {command}\n{body}[exit 1 · job {rng.getrandbits(32):08x} · pid "
            f"{rng.randrange(2000, 90000)} · {rng.randrange(400, 9000) / 1000:.2f}s]")
