"""`@immutable` value types: a slotted dataclass with equality, hashing and `replace`, built
with plain slot stores, and read-only to the type checker (mypy --strict, as CI runs it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mypy import api as mypy_api

from orca_cli.immutable import immutable


@immutable
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)


def test_values_compare_hash_and_replace_by_their_fields() -> None:
    a, b = Point(1, 2), Point(1, 2)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    c = dataclasses.replace(a, y=3)
    assert c == Point(1, 3) and a == Point(1, 2)  # replace builds a new value
    assert Point(1).tags == ()
    assert not hasattr(a, "__dict__")  # slotted: no stray attributes


def test_assigning_a_field_is_a_type_error(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from orca_cli.immutable import immutable\n"
        "from orca_cli.proxy.guard import Refusal\n\n\n"
        "@immutable\nclass P:\n    x: int\n\n\n"
        "p = P(1)\np.x = 2\n"
        "r = Refusal(403, 'm', 'permission_error', 'host_not_allowed')\nr.status = 200\n"
    )
    out, _err, status = mypy_api.run([str(snippet), "--strict", "--follow-imports=silent",
                                      "--cache-dir", str(tmp_path / ".mypy_cache")])
    assert status == 1, out
    assert 'Property "x" defined in "P" is read-only' in out
    assert 'Property "status" defined in "Refusal" is read-only' in out



def test_replaced_is_dataclasses_replace_built_by_position() -> None:
    from dataclasses import replace

    import pytest

    from orca_cli.immutable import immutable, replaced

    @immutable
    class Three:
        a: int
        b: str = "b"
        c: tuple[int, ...] = ()

    @immutable
    class One:
        a: int

    v = Three(1, "x", (2,))
    assert replaced(v, b="y", c=()) == replace(v, b="y", c=()) == Three(1, "y", ())
    assert replaced(v) == v and replaced(One(1), a=2) == One(2)
    with pytest.raises(TypeError, match="no field 'd'"):
        replaced(v, d=1)
    with pytest.raises(TypeError):
        replaced(One(1), d=1)
