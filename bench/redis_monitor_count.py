"""Redis commands and arguments a request sends, from two `redis-cli MONITOR` logs.

    redis-cli -p PORT MONITOR > mon-50.log &   # then, while it records:
    python bench/profile_inproc.py --store redis --redis-url redis://127.0.0.1:PORT/15 \\
        --rounds 1 --requests 50 --scenario json --quiet
    kill %1                                       # and the same with --requests 150
    python bench/redis_monitor_count.py 50:mon-50.log 150:mon-150.log

Each log holds one run (start-up, a 200-request warm-up, then N requests); the difference
between the two runs divided by the difference in N is what one request sends: client
commands, their arguments (the command name included) and bytes, and the commands the Lua
scripts run inside Redis.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field

_LINE = re.compile(r"^[\d.]+ \[\d+ ([^\]]+)\] (.*)$")
_ARG = re.compile(r'"(?:[^"\\]|\\.)*"')


@dataclass
class Counts:
    commands: Counter[str] = field(default_factory=Counter)
    args: int = 0
    bytes: int = 0
    lua: Counter[str] = field(default_factory=Counter)


def count(path: str) -> Counts:
    out = Counts()
    with open(path, errors="replace") as f:
        for line in f:
            m = _LINE.match(line.rstrip("\n"))
            args = _ARG.findall(m.group(2)) if m else []
            if not m or not args:
                continue
            name = args[0].strip('"').upper()
            if m.group(1) == "lua":
                out.lua[name] += 1
            else:
                out.commands[name] += 1
                out.args += len(args)
                out.bytes += sum(len(a) - 2 for a in args)  # escaped, so about the size sent
    return out


def main() -> int:
    (n1, p1), (n2, p2) = (a.split(":", 1) for a in sys.argv[1:3])
    a, b = count(p1), count(p2)
    per = int(n2) - int(n1)
    cmds = {k: (b.commands[k] - a.commands[k]) / per for k in b.commands}
    lua = {k: (b.lua[k] - a.lua[k]) / per for k in b.lua}
    print(f"per request: {sum(cmds.values()):.2f} commands, {(b.args - a.args) / per:.1f} "
          f"arguments, {(b.bytes - a.bytes) / per:.0f} bytes; "
          f"{sum(lua.values()):.1f} commands inside scripts")
    print("  client:", ", ".join(f"{k} {v:g}" for k, v in sorted(cmds.items()) if v))
    print("  scripts:", ", ".join(f"{k} {v:g}" for k, v in sorted(lua.items()) if v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
