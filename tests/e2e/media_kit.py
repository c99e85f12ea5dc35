"""What the inline-media HTTP tests share (`test_inline_media_estimate`, `test_vision`): a
sidecar served from a config document, and a raw JSON post carrying an agent's credentials in
every format's header, so one helper posts any of the three inbound formats."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import tomli_w

from orca_cli.config.load import loads
from orca_cli.testing import Sidecar
from orca_cli.testing import sidecar as serve_sidecar

HEADERS = {"content-type": "application/json", "authorization": "Bearer agent-key",
           "x-api-key": "agent-key", "anthropic-version": "2023-06-01"}


@contextlib.asynccontextmanager
async def doc_sidecar(doc: dict[str, Any], source: str) -> AsyncIterator[Sidecar]:
    """`orca serve` in process on the config `doc` (a TOML document as a dict)."""
    async with serve_sidecar(loads(tomli_w.dumps(doc), source=source, environ={})) as sc:
        yield sc


async def post_json(sc: Sidecar, path: str, body: dict[str, Any],
                    **headers: str) -> httpx.Response:
    """`body` posted to `path` as its JSON bytes, with the agent's credentials and `headers`."""
    return await sc.http.post(path, content=orjson.dumps(body), headers={**HEADERS, **headers})
