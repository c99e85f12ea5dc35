"""orca's request ids: `req_` + 24 hex characters from the OS's CSPRNG, read in batches."""

from __future__ import annotations

import os
import re

from orca_cli.proxy import runtime as R


def test_ids_are_unique_across_batches_and_well_formed() -> None:
    ids = [R.new_request_id() for _ in range(3 * R._ID_BATCH + 5)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"req_[0-9a-f]{24}", i) for i in ids)


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    R.new_request_id()  # the parent holds a batch with ids left in it
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, to the parent
        try:
            os.write(write, R.new_request_id().encode())
        finally:
            os._exit(0)
    os.close(write)
    child_id = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    parent_next = [R.new_request_id() for _ in range(R._ID_BATCH)]
    assert re.fullmatch(r"req_[0-9a-f]{24}", child_id)
    assert child_id not in parent_next
