"""Values derived from a long-lived object (a table, its schema), computed once per object:
readers of many small files would otherwise derive them again for every file."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

Obj = TypeVar("Obj")
V = TypeVar("V")


class PerObject(Generic[Obj, V]):
    """`build(obj, key)`, remembered while `obj` lives (by identity: schemas and tables are
    mutable dataclasses, unhashable, and never changed in place once read)."""

    def __init__(self, build: Callable[[Obj, Any], V]):
        self._build = build
        self._values: dict[tuple[int, Hashable], tuple[weakref.ref[Any], V]] = {}

    def get(self, obj: Obj, key: Hashable = None) -> V:
        """The value for (obj, key), built on first use."""
        slot = (id(obj), key)
        hit = self._values.get(slot)
        if hit is not None and hit[0]() is obj:
            return hit[1]
        value = self._build(obj, key)
        values = self._values
        self._values[slot] = (weakref.ref(obj, lambda _: values.pop(slot, None)), value)
        return value
