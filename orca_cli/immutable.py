"""`@immutable`: the decorator of orca's immutable value types (a request's head, turn, plan,
decision, store ops and snapshots, the config).

A `@dataclass(frozen=True)` instance is built with one `object.__setattr__` call per field;
on CPython 3.11 that made up a sixth of a request's instructions (bench/README.md, "Value
types"). `@immutable` builds the same slotted dataclass — fields, `__eq__`, `__hash__` over the
fields, `dataclasses.replace` — with plain slot stores, and leaves immutability to the type
checker: mypy --strict (run by CI) reads `@immutable` as `frozen=True` (PEP 681
`frozen_default`) and rejects any assignment to a field. Code changes a value with
`dataclasses.replace`, never by assignment; on the request path's hottest copies (the tier
state, the commit batch) with `replaced`, the same copy built by position.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

__all__ = ["immutable", "replaced"]

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def immutable(cls: type[T]) -> type[T]: ...

else:

    def immutable(cls: type[Any]) -> type[Any]:
        return dataclass(slots=True, unsafe_hash=True)(cls)


# Per class: a getter of every field's value, in `__init__` order, and each field's position
# (None: `replace` serves the class).
_LAYOUTS: dict[type, tuple[Any, dict[str, int]] | None] = {}


def _layout(cls: type) -> tuple[Any, dict[str, int]] | None:
    names = [f.name for f in fields(cls)]
    if len(names) < 2 or not all(f.init for f in fields(cls)):
        return None  # one field (attrgetter returns it bare) or a non-init one: `replace`
    return attrgetter(*names), {name: i for i, name in enumerate(names)}


def replaced(value: T, /, **changes: Any) -> T:
    """`dataclasses.replace(value, **changes)` built by position: `replace` matches every field
    by keyword, about four times the cost on a value of twenty fields. An unknown field name
    raises `TypeError`, as with `replace`; the names are not checked by mypy, so only a few
    hot copies use it."""
    cls = type(value)
    try:
        layout = _LAYOUTS[cls]
    except KeyError:
        layout = _LAYOUTS[cls] = _layout(cls)
    if layout is None:
        return replace(value, **changes)  # type: ignore[type-var]
    get, index = layout
    values = list(get(value))
    for name, new in changes.items():
        try:
            values[index[name]] = new
        except KeyError:
            raise TypeError(f"{cls.__name__} has no field {name!r}") from None
    return cls(*values)
