"""One partition value carried from manifests through plans to writers and commits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# parsed where the CLI can reach it without pypaimon; importable from here as before
from dagster_paimon.arguments import parse_partition_spec as parse_partition_spec
from dagster_paimon.format.manifest import GenericRow, GenericRowDeserializer
from dagster_paimon.format.schema import DataField

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"


def path_value(value: object) -> str:
    """A partition value as Paimon spells it in paths: null or blank is the default name."""
    return DEFAULT_PARTITION_NAME if value is None or str(value).strip() == "" else str(value)


@dataclass(frozen=True)
class Partition:
    """A Paimon partition: its typed values, under the fields of the table's partition keys.

    Equality and hashing use the values only: partitions are compared within one table.
    """

    values: tuple
    fields: tuple[DataField, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def of_row(cls, row: GenericRow) -> Partition:
        """The partition of a manifest entry (pypaimon's GenericRow)."""
        return cls(tuple(row.values), tuple(row.fields))

    @classmethod
    def of_bytes(cls, data: bytes, fields: Sequence[DataField]) -> Partition:
        """The partition a manifest stores as a serialized BinaryRow."""
        return cls.of_row(GenericRowDeserializer.from_bytes(data, list(fields)))

    @property
    def names(self) -> tuple[str, ...]:
        """The partition keys."""
        return tuple(f.name for f in self.fields)

    @property
    def spec(self) -> dict[str, str]:
        """Key to value as Paimon spells it in paths (the form users type and JSON shows)."""
        return {f.name: path_value(v) for f, v in zip(self.fields, self.values, strict=True)}

    def row(self) -> GenericRow:
        """The row a manifest entry holds."""
        return GenericRow(list(self.values), list(self.fields))

    def label(self) -> str:
        """K=V[,K=V] as operators type it, '-' for an unpartitioned table."""
        return ",".join(f"{k}={v}" for k, v in self.spec.items()) or "-"

    def matches(self, spec: Mapping[str, str]) -> bool:
        """Whether every given key has the given (path-spelled) value."""
        own = self.spec
        return all(own.get(k) == v for k, v in spec.items())
