"""Package names imported on first use, so importing a package loads none of its engines."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` for `package` importing the module that defines each name of
    `exports` (name -> module) on first use, then keeping it on the package."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
