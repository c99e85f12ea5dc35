"""`${VAR}` interpolation of config strings from the environment mapping the loader is given
(SPEC §2): `${VAR}`, `${VAR:-default}`, and `$${` for a literal `${`."""

from __future__ import annotations

import re
from typing import Any

from orca_cli.config.walk import DROP, Ctx, bad, wrong

__all__ = ["expand"]

VAR = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{")


def expand(value: Any, path: str, ctx: Ctx) -> Any:
    """`${VAR}` and `${VAR:-default}` expanded from `environ`; `$${` is a literal `${`."""
    if not isinstance(value, str):
        return wrong(ctx, path, "a string", value)
    problems: list[str] = []

    def expand(m: re.Match[str]) -> str:
        text = m.group(0)
        if text == "$${":
            return "${"
        name, fallback = m.group(1), m.group(2)
        if name is None:
            problems.append("has a malformed ${...}; write ${NAME} or ${NAME:-default}")
            return text
        got = ctx.environ.get(name)
        if fallback is not None and not got:
            return fallback
        if got is None:
            problems.append(
                f"environment variable {name} is not set; export it, or write "
                f"${{{name}:-default}} to give a default"
            )
            return text
        return got

    out = VAR.sub(expand, value)
    if not problems:
        return out
    if ctx.lenient and all("not set" in p for p in problems):
        return DROP
    return bad(ctx, path, problems[0])


