"""Which `[[inbound_keys]]` entry a request presented (SPEC §17). Tokens are compared by
their sha256 only; the config never keeps them in clear."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orca_cli.config.schema import Config

__all__ = ["inbound_key_name"]


def inbound_key_name(cfg: Config, presented_tokens: Iterable[str]) -> str | None:
    """The name of the first configured key matching one of the presented tokens (the
    bearer token, `x-api-key`, ... in the caller's order), or None. Constant-time compare."""
    if not cfg.inbound_keys:
        return None
    for token in presented_tokens:
        if not token:
            continue
        digest = hashlib.sha256(token.encode()).hexdigest()
        for key in cfg.inbound_keys:
            if key.token_sha256 and hmac.compare_digest(digest, key.token_sha256):
                return key.name
    return None
