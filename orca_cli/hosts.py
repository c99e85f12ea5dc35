"""Host-name predicates shared by the config rules and the request guard (SPEC §11)."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """True for `localhost`, `*.localhost`, 127.0.0.0/8 and ::1 (SPEC §11)."""
    h = host.strip().strip("[]").lower()
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False
