"""`TierState.from_doc` reads the stored lists (signatures, dedupe ring, conversations) as
tuples of str, converting any other item with `str`, and treats a malformed one as absent."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.routing.tiers import DEDUPE_RING, Pending, Strike, TierState


def test_stored_string_lists_come_back_as_they_were() -> None:
    state = TierState(tier="strong", signatures=("a1", "b2"), conversations=("c3",),
                      dedupe=tuple(f"k{i}" for i in range(DEDUPE_RING)), history=True)
    assert TierState.from_doc(state.to_doc()) == state


@pytest.mark.parametrize("items", [[1, "x", 2.5], ["x", None], [b"raw"], "ab", {"k": 1}])
def test_other_items_are_converted_with_str(items: Any) -> None:
    got = TierState.from_doc({"sigs": items, "dedupe": items, "convs": items})
    assert got is not None
    expected = tuple(map(str, items))
    assert got.signatures == got.dedupe == got.conversations == expected


@pytest.mark.parametrize("items", [5, None, 2.5])
def test_a_list_that_is_no_list_makes_the_document_absent(items: Any) -> None:
    assert TierState.from_doc({"dedupe": items}) is None


def _general(doc: dict[str, Any]) -> TierState | None:
    """The decode of every list and the pending ask, without `from_doc`'s empty-list path."""
    try:
        return TierState(
            strikes=tuple(map(Strike.from_doc, doc.get("strikes", ()))),
            signatures=tuple(map(str, doc.get("sigs", ()))),
            dedupe=tuple(map(str, doc.get("dedupe", ()))),
            pending=Pending.from_doc(doc.get("pending")),
            conversations=tuple(map(str, doc.get("convs", ()))))
    except (TypeError, ValueError, IndexError):
        return None


@pytest.mark.parametrize("value", [[], (), None, 0, 0.0, "", {}, [[1, 2.0, "refusal"]],
                                   ["x"], "ab", 5, [None], [[]]])
@pytest.mark.parametrize("key", ["strikes", "sigs", "convs", "pending"])
def test_empty_lists_decode_as_the_general_path_does(key: str, value: Any) -> None:
    """An empty, absent or odd list (and pending ask) decodes as a pass over it would."""
    doc = {key: value}
    want = _general(doc)
    got = TierState.from_doc(doc)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert (got.strikes, got.signatures, got.dedupe, got.pending, got.conversations) == (
            want.strikes, want.signatures, want.dedupe, want.pending, want.conversations)
    assert TierState.from_doc({}) == TierState()
