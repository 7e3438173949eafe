"""Which option and field names hold secrets, and how settings show them: masked."""

from __future__ import annotations

import re
from collections.abc import Iterable

# S3's accessKeySecret / secret-key and session tokens in every spelling pypaimon reads, and the
# secrets of other stores' catalog options (passwords, credentials)
SECRET_NAME = re.compile(r"secret|token|password|credential", re.IGNORECASE)
MASK = "****"


def is_secret(name: str) -> bool:
    """Whether an option or field of this name holds a secret."""
    return SECRET_NAME.search(name) is not None


def masked(name: str, value: object) -> object:
    """The value as settings show it: a secret that is set is the mask."""
    return MASK if value and is_secret(name) else value


def masked_options(options: Iterable[tuple[str, object]]) -> tuple[tuple[str, object], ...]:
    """Option pairs as settings show them, every secret's value masked."""
    return tuple((name, masked(name, value)) for name, value in options)
