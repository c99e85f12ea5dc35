"""Budget windows, counter names and verdicts (SPEC §17). Pure: `now` is given.

A counter is named `<scope>:<id>:<window>:<period>` — e.g. `key:ci:day:2026-12-04`,
`session:s1:month:2026-12`, `route:rollout:week:2026-W49` (ISO week), `session:s1:all:-`
(a session's whole life, for `[budgets] session_usd`). Its value is (requests, usd), counted
at commit from billed cost. Periods are UTC calendar days, ISO weeks and calendar months.

A session's whole-life counter is the session's, whatever inbound key its requests carry
(the limit applied is the requesting key's). Beside it, a keyed request also counts into
`sessionkey:<session>:all:<key>`, its key's part of the session, which nothing enforces: it
is how `orca budget` tells which key a session's spend came from, and so which key's
`session_usd` limit is in force for it (`session_holders`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

from orca_cli.immutable import immutable
from orca_cli.routing.routes.facts import RequestFacts

__all__ = [
    "BUDGET_OK",
    "BUDGET_WINDOWS",
    "BudgetCheck",
    "Counters",
    "Spend",
    "Verdict",
    "budget_refusal",
    "budget_verdict",
    "check_budgets",
    "config_budget_counters",
    "counter_key",
    "format_usd",
    "period",
    "session_holders",
    "session_key_counter",
    "spend_keys",
]

Window = Literal["day", "week", "month", "all"]
BUDGET_WINDOWS: tuple[Window, ...] = ("day", "week", "month")
Verdict = Literal["ok", "deny_strong", "refuse"]
STRONG_DENIAL_SHARE = 0.8


@immutable
class Spend:
    requests: int = 0
    usd: float = 0.0


Counters = Mapping[str, Spend]
NO_SPEND = Spend()
USD_SIGNIFICANT = 4  # digits shown of an amount below $1
_USD_MAX_DECIMALS = 10


def format_usd(usd: float) -> str:
    """A $ amount as budgets show it, in the 429 message and `orca budget` alike: cents from
    $1 up (`$12.00`); below $1, 4 significant digits with trailing zeros dropped, at least
    cents (`$0.004`, `$0.004022`, `$0.1235`, `$0.50`), so a small budget never reads `$0.00`."""
    if not math.isfinite(usd):
        return f"${usd}"
    size = abs(usd)
    if size >= 1 or size == 0:
        return f"${usd:.2f}"
    decimals = min(_USD_MAX_DECIMALS, USD_SIGNIFICANT - 1 - math.floor(math.log10(size)))
    text = f"{usd:.{decimals}f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def period(window: Window, now: float) -> str:
    """The UTC calendar period `now` falls in (a day's computation is cached)."""
    if window == "all":
        return "-"
    return _period(window, int(now // 86400))


@functools.lru_cache(maxsize=64)
def _period(window: Window, day: int) -> str:
    d = datetime.fromtimestamp(day * 86400, UTC)
    if window == "day":
        return d.strftime("%Y-%m-%d")
    if window == "month":
        return d.strftime("%Y-%m")
    year, week, _ = d.isocalendar()
    return f"{year}-W{week:02d}"


def scope_id(scope: str, facts: RequestFacts, route: str) -> str:
    """Whose counter: the inbound key's name (`-` with none), the session, or the route."""
    if scope == "key":
        return facts.key_name or "-"
    if scope == "session":
        return facts.session_id or f"request:{facts.request_id}"
    return route


def counter_key(scope: str, ident: str, window: Window, now: float) -> str:
    return f"{scope}:{ident}:{window}:{period(window, now)}"


SESSION_KEY_HEAD = "sessionkey:"


def session_key_counter(session_id: str, key: str) -> str:
    """Inbound key `key`'s part of a session's whole-life spend (see the module docstring)."""
    return f"{SESSION_KEY_HEAD}{session_id}:all:{key}"


def session_holders(counters: Mapping[str, Spend]) -> dict[str, dict[str, Spend]]:
    """Session id -> {inbound key name -> its part of the session}, from the counters'
    `sessionkey:` entries (key names hold no `:`; session ids may)."""
    out: dict[str, dict[str, Spend]] = {}
    for name, spend in counters.items():
        if name.startswith(SESSION_KEY_HEAD):
            sid, window, key = name[len(SESSION_KEY_HEAD):].rsplit(":", 2)
            if window == "all":
                out.setdefault(sid, {})[key] = spend
    return out


def spend_keys(facts: RequestFacts, route: str) -> tuple[str, ...]:
    """Every counter one committed request adds its billed cost (and 1 request) to: its
    key's and (when a route matched) the route's day/week/month, its session's windows and
    whole life (and its key's part of that life). The store increments them in the commit
    batch, once per request id."""
    out: list[str] = []
    scopes = [("key", facts.key_name or "-")]
    if route:
        scopes.append(("route", route))
    if facts.session_id:
        scopes.append(("session", facts.session_id))
        out.append(counter_key("session", facts.session_id, "all", facts.now))
        if facts.key_name:
            out.append(session_key_counter(facts.session_id, facts.key_name))
    for scope, ident in scopes:
        out.extend(counter_key(scope, ident, w, facts.now) for w in BUDGET_WINDOWS)
    return tuple(out)


def budget_verdict(spent: float, budget: float) -> Verdict:
    """`refuse` at 100 % of a $ budget, `deny_strong` from 80 %, else `ok`; 0 = no budget."""
    if budget <= 0:
        return "ok"
    if spent >= budget:
        return "refuse"
    if spent >= STRONG_DENIAL_SHARE * budget:
        return "deny_strong"
    return "ok"


def budget_refusal(name: str, spent: float, budget: float, who: str, window: str | None, *,
                   key: str | None = None) -> str:
    """The 429 message: which budget, what was spent, and the exact command that raises the
    limit the request was refused by. `name` is `session_usd`, `day_usd` or `month_usd`;
    `who` is `inbound key "ci"`, `session "s1"` or `this gateway`; `window` e.g.
    `2026-12-04 (UTC)`, None for a budget without one (`session_usd`: the session's whole
    life, which no window end refunds); `key`: the request's inbound key (`--key`), by
    default the one `who` names."""
    if key is None and who.startswith('inbound key "'):
        key = who[len('inbound key "'):-1]
    command = f"`orca budget raise {name} <usd>{f' --key {key}' if key else ''}`"
    spend = f"{format_usd(spent)} of {format_usd(budget)}"
    if window is None:
        return (f"budget {name} for {who} is spent: {spend} over the session's whole life; "
                f"its requests are refused until the budget is raised with {command}")
    return (f"budget {name} for {who} is spent: {spend} in {window}; requests are refused "
            f"until the window ends or the budget is raised with {command}")


@immutable
class BudgetCheck:
    """The worst of the `[budgets]` verdicts for one request. `name` / `counter` say which
    budget decided (empty when `ok`); `message` is the 429 text when `refuse`."""

    verdict: Verdict = "ok"
    name: str = ""
    counter: str = ""
    spent: float = 0.0
    limit: float = 0.0
    message: str = ""


BUDGET_OK = BudgetCheck()
_RANK = {"ok": 0, "deny_strong": 1, "refuse": 2}


def config_budget_counters(facts: RequestFacts) -> dict[str, str]:
    """`[budgets]` name -> the counter it reads: `session_usd` the session's whole life,
    `day_usd` / `month_usd` the inbound key's (`-` without keys: the whole store's)."""
    key = facts.key_name or "-"
    out = {"day_usd": counter_key("key", key, "day", facts.now),
           "month_usd": counter_key("key", key, "month", facts.now)}
    if facts.session_id:
        out["session_usd"] = counter_key("session", facts.session_id, "all", facts.now)
    return out


def check_budgets(
    limits: Mapping[str, float], facts: RequestFacts, counters: Counters,
) -> BudgetCheck:
    """The `[budgets]` verdict (SPEC §17): `limits` maps `session_usd` / `day_usd` /
    `month_usd` to $ (0 = none; the caller applies `orca budget raise` overrides first)."""
    worst = BUDGET_OK
    for name, counter in config_budget_counters(facts).items():
        limit = limits.get(name, 0.0)
        spent = counters.get(counter, NO_SPEND).usd
        verdict = budget_verdict(spent, limit)
        if _RANK[verdict] > _RANK[worst.verdict]:
            worst = BudgetCheck(verdict, name, counter, spent, limit)
    if worst.verdict != "refuse":
        return worst
    key = facts.key_name
    window: str | None
    if worst.name == "session_usd":
        who = f'session "{facts.session_id}"' + (f' (inbound key "{key}")' if key else "")
        window = None
    else:
        who = f'inbound key "{key}"' if key else "this gateway"
        window = worst.counter.rsplit(":", 1)[1] + " (UTC)"
    message = budget_refusal(worst.name, worst.spent, worst.limit, who, window, key=key)
    return BudgetCheck(worst.verdict, worst.name, worst.counter, worst.spent, worst.limit,
                       message)
