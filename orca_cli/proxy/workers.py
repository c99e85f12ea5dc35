"""`orca serve --workers N` (SPEC §18): N processes serving one port, sharing state in Redis.

The parent binds the port once (so `--port 0` picks one and every worker learns it), writes
the admin token and the sidecar record, forks the workers, and prints the banner once one
answers. Each worker binds its own listening socket to the same address with `SO_REUSEPORT`
(`proxy.server.bind_socket(reuse_port=True)`), so the kernel spreads
new connections across the workers evenly (one shared accept queue would let a busy worker's
neighbour starve or pile up), builds its own runtime (store client, health, metrics, event
loop) after the fork, and serves until told to stop.

Sessions, pins, tiers, caps, traces and CLI asks live in the Redis store, so any worker serves
any request of a session the same way. What stays per process is what a single sidecar keeps
in memory too: upstream health and breakers, the retry budget, `/metrics` counters and measured
latencies — a read of those shows the worker that answered (`/healthz` carries its `pid`).

Stopping: SIGINT or SIGTERM to the parent is passed to every worker as SIGTERM (a graceful
stop: in-flight requests finish, then each worker closes its store client); the parent waits
for them and exits. A worker that dies on its own is started again after a short pause, so one
crash does not halve the sidecar; a worker that keeps dying within seconds of its start stops
the whole sidecar (the fault is not transient).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType

__all__ = ["RESTART_PAUSE_S", "supervise"]

RESTART_PAUSE_S = 1.0
FAST_DEATH_S = 5.0  # a worker that dies sooner than this after its start ...
FAST_DEATHS_MAX = 3  # ... this many times in a row stops the sidecar


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _start(index: int, worker: Callable[[int], None], pids: dict[int, int],
           hold_stops: bool = False) -> int:
    """Fork worker `index`, registered in `pids` before a stop signal can be handled: with the
    stop signals blocked across the fork, a SIGTERM cannot reach the parent between the fork
    and the registration (the new worker would never be told to stop, and the parent would
    wait for it forever), nor the child before it drops the parent's handler. The parent's
    mask is then restored, not cleared: `orca serve` keeps the stop signals blocked until all
    the first workers are forked (a stop in between would miss those forked after it).
    `hold_stops`: the worker starts with the stop signals still blocked and unblocks them
    itself once its own handler is in place, so a stop sent while it starts waits for that
    handler instead of landing in whatever start-up code runs at that moment."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        raise
    if pid != 0:
        pids[pid] = index
        signal.pthread_sigmask(signal.SIG_SETMASK, before)  # a pending stop now reaches it
        return pid
    code = 1
    try:  # the worker: default signal handling (uvicorn installs its own), then serve
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if not hold_stops:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        worker(index)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # noqa: BLE001 - reported, then the process ends
        print(f"orca: worker {index} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return 0  # unreachable


def supervise(workers: int, worker: Callable[[int], None],
              on_started: Callable[[], None] | None = None, *, hold_stops: bool = False) -> int:
    """Run `worker(i)` in `workers` forked processes until SIGINT/SIGTERM; the exit code.
    `on_started` runs in the parent once every worker was forked. `hold_stops`: each worker
    starts with SIGINT and SIGTERM blocked and unblocks them itself (see `_start`)."""
    stopping = False
    pids: dict[int, int] = {}  # pid -> worker index
    started: dict[int, float] = {}
    fast_deaths = 0

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    for i in range(workers):
        _start(i, worker, pids, hold_stops)
        started[i] = time.monotonic()
    if on_started is not None:
        on_started()
    code = 0
    while pids:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        index = pids.pop(pid, None)
        if index is None or stopping:
            continue
        exit_code = os.waitstatus_to_exitcode(status)
        lived = time.monotonic() - started[index]
        fast_deaths = fast_deaths + 1 if lived < FAST_DEATH_S else 0
        print(f"orca: worker {index} (pid {pid}) exited with {exit_code} after {lived:.1f} s",
              file=sys.stderr)
        if fast_deaths >= FAST_DEATHS_MAX:
            print("orca: workers keep failing at start; stopping", file=sys.stderr)
            code = 1
            stop(signal.SIGTERM, None)
            continue
        time.sleep(RESTART_PAUSE_S)
        if stopping:
            continue
        _start(index, worker, pids, hold_stops)
        started[index] = time.monotonic()
    return code
