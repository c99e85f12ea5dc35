"""One request as one object on one path: intake → `prepare` → `decide` → forward → `settle`.

The pure steps live here; `proxy.handler` does the I/O between them and `replay` drives the
same steps without sockets.
"""

from orca_cli.turn.model import Arrival, AttemptRecord, Outcome, RequestHead, Turn
from orca_cli.turn.prepare import decide, prepare
from orca_cli.turn.settle import Settled, refused, settle

__all__ = ["Arrival", "AttemptRecord", "Outcome", "RequestHead", "Settled", "Turn", "decide", "prepare",
           "refused", "settle"]
