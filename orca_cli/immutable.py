"""`@immutable`: the decorator of orca's immutable value types (a request's head, turn, plan,
decision, store ops and snapshots, the config).

A `@dataclass(frozen=True)` instance is built with one `object.__setattr__` call per field;
on CPython 3.11 that made up a sixth of a request's instructions (bench/README.md, "Value
types"). `@immutable` builds the same slotted dataclass — fields, `__eq__`, `__hash__` over the
fields, `dataclasses.replace` — with plain slot stores, and leaves immutability to the type
checker: mypy --strict (run by CI) reads `@immutable` as `frozen=True` (PEP 681
`frozen_default`) and rejects any assignment to a field. Code changes a value with
`dataclasses.replace`, never by assignment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

__all__ = ["immutable"]

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def immutable(cls: type[T]) -> type[T]: ...

else:

    def immutable(cls: type[Any]) -> type[Any]:
        return dataclass(slots=True, unsafe_hash=True)(cls)
