"""Every option key Paimon declares, classified: what we do with it, or why we need not.

`keys.tsv` is extracted from Paimon's Java source (`extract.py` says how); `classified.toml`
puts each key in one group: **handled** (we do exactly what Java does; the note says where),
**inert** (it changes only readers, a Flink or Spark job's runtime, DDL, or something we never
do; the note says why) or **refused** (an operation it changes refuses the table; the group
names the mode in `unsupported.py` that does so). A key Java reads by a prefix, without a
declared option, is listed as `undeclared`, a variable part written `*`.
"""

from __future__ import annotations

import csv
import fnmatch
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

HANDLED = "handled"
INERT = "inert"
REFUSED = "refused"
STATUSES = (HANDLED, INERT, REFUSED)
TABLE = "table"
CATALOG = "catalog"


@dataclass(frozen=True)
class Declared:
    """A key as Paimon's Java source declares it: an alias names the key it is an old name
    of; first and last, the release tags declaring it (a line of keys.tsv)."""

    key: str
    role: str
    cls: str
    field: str
    alias_of: str
    first: str = ""
    last: str = ""


@dataclass(frozen=True)
class Entry:
    """One key's classification: its status, the note saying where or why, the refusing mode."""

    key: str
    role: str
    status: str
    note: str
    refusal: str | None
    declared: bool


@dataclass(frozen=True)
class Census:
    """The classified keys, exact ones by key and `*` patterns in order."""

    exact: Mapping[tuple[str, str], Entry]
    patterns: tuple[Entry, ...]
    declared: tuple[Declared, ...]

    def entry(self, key: str, role: str = TABLE) -> Entry | None:
        """The classification of a key as a table (or catalog) option, or None if unknown."""
        found = self.exact.get((role, key))
        if found is not None:
            return found
        return next(
            (e for e in self.patterns if e.role == role and fnmatch.fnmatchcase(key, e.key)), None
        )

    def unknown(self, keys: Iterable[str], role: str = TABLE) -> list[str]:
        """The keys the census does not know (a newer Paimon's, or a user's own), sorted."""
        return sorted(k for k in keys if self.entry(k, role) is None)

    def entries(self) -> list[Entry]:
        """Every entry, exact and patterns, sorted by role and key."""
        return sorted([*self.exact.values(), *self.patterns], key=lambda e: (e.role, e.key))


def declared_keys() -> list[Declared]:
    """The lines of keys.tsv (comments skipped)."""
    text = files(__package__).joinpath("keys.tsv").read_text(encoding="utf-8")
    rows = csv.DictReader(
        (line for line in text.splitlines() if not line.startswith("#")), delimiter="\t"
    )
    return [
        Declared(r["key"], r["role"], r["class"], r["field"], r["alias_of"], r["first"], r["last"])
        for r in rows
    ]


def groups() -> list[dict]:
    """The groups of classified.toml, as written."""
    text = files(__package__).joinpath("classified.toml").read_text(encoding="utf-8")
    return list(tomllib.loads(text)["group"])


@cache
def census() -> Census:
    """The census, read once per process."""
    exact: dict[tuple[str, str], Entry] = {}
    patterns: list[Entry] = []
    for group in groups():
        role = group.get("role", TABLE)
        for listed, keys in ((True, group.get("keys", [])), (False, group.get("undeclared", []))):
            for key in keys:
                entry = Entry(
                    key, role, group["status"], group["note"], group.get("refusal"), listed
                )
                if "*" in key:
                    patterns.append(entry)
                else:
                    exact[(role, key)] = entry
    return Census(exact, tuple(patterns), tuple(declared_keys()))
