"""File statistics of stitched stripes: merged as ORC's C++ writer merges stripe statistics.

pyarrow's ORC writer (ORC C++ 2.0, Statistics.hh) computes a file's statistics by merging each
stripe's into a reset accumulator, in stripe order: counts add, has-null ors, minimum and
maximum keep the first of equals, sums stop being recorded on overflow, and the statistics of
a column are written as that writer writes them. A field it would not write is refused
rather than dropped.
"""

from __future__ import annotations

from decimal import Decimal

from dagster_paimon.errors import InternalError
from dagster_paimon.io.orc.proto import (
    BYTES,
    FIXED64,
    VARINT,
    Field,
    as_bytes,
    as_double,
    as_int,
    decode,
    double,
    encode,
    packed,
)
from dagster_paimon.io.varint import unzigzag, varint, zigzag

# Type.Kind of orc_proto.proto
BOOLEAN, BYTE, SHORT, INT, LONG, FLOAT, DOUBLE, STRING, BINARY, TIMESTAMP = range(10)
LIST, MAP, STRUCT, UNION, DECIMAL, DATE, VARCHAR, CHAR, TIMESTAMP_INSTANT = range(10, 19)
TYPE_KIND, TYPE_SCALE = 1, 6

NUMBER_OF_VALUES, HAS_NULL = 1, 10
INT64 = (-(1 << 63), (1 << 63) - 1)
INT128 = (-(1 << 127), (1 << 127) - 1)
UINT64 = 1 << 64
MIN_NANOS, MAX_NANOS = 0, 999_999  # TimestampColumnStatisticsImpl's defaults


def _fields(sub: bytes, allowed: set[int], what: str) -> dict[int, int | bytes]:
    """A statistics sub-message by field number; fields the C++ writer never writes refused."""
    fields = {number: value for number, _, value in decode(sub)}
    unknown = set(fields) - allowed
    if unknown:
        raise InternalError(f"ORC {what} statistics carry fields {sorted(unknown)} we cannot merge")
    return fields


class _Bounds:
    """Minimum and maximum as InternalStatisticsImpl::merge keeps them (first of equals)."""

    def __init__(self, key):
        self.key = key
        self.low: int | bytes | None = None
        self.high: int | bytes | None = None

    def add(self, low: int | bytes | None, high: int | bytes | None) -> None:
        """Fold in a part's minimum and maximum (both absent when it had no values)."""
        if low is None or high is None:
            return
        if self.low is None or self.high is None:
            self.low, self.high = low, high
            return
        if self.key(self.high) < self.key(high):
            self.high = high
        if self.key(low) < self.key(self.low):
            self.low = low


class _Sum:
    """A sum recorded while it stays within its type's range."""

    def __init__(self, bounds: tuple[int, int] | None):
        self.bounds = bounds
        self.total: int | float = 0
        self.valid = True

    def add(self, value: int | float | None) -> None:
        """Add a part's sum; a part without one (it overflowed) ends the file's."""
        if not self.valid:
            return
        if value is None:
            self.valid = False
            return
        total = self.total + value
        if self.bounds is not None and not self.bounds[0] <= total <= self.bounds[1]:
            self.valid = False
            return
        self.total = total


class _Numeric:
    """Integer, double and date statistics: minimum, maximum and a sum (not for dates)."""

    def __init__(self, number: int, wire: int, value, raw, sum_range: tuple[int, int] | None):
        self.number, self.wire, self.value, self.raw = number, wire, value, raw
        self.bounds, self.sum = _Bounds(value), _Sum(sum_range)

    def add(self, sub: bytes) -> None:
        """Fold in one part\'s statistics sub-message."""
        f = _fields(sub, {1, 2, 3}, "numeric")
        self.bounds.add(f.get(1), f.get(2))
        if self.raw is not None:
            self.sum.add(self.value(f[3]) if 3 in f else None)

    def fields(self) -> list[Field]:
        """The merged sub-message\'s fields."""
        out = _bound_fields(self.bounds, self.wire)
        if self.raw is not None and self.sum.valid:
            out.append((3, self.wire, self.raw(self.sum.total)))
        return out


class _Length:
    """String and binary statistics: total length (and a string's byte-wise bounds)."""

    def __init__(self, number: int, length_field: int, bounded: bool):
        self.number, self.length_field = number, length_field
        self.bounds = _Bounds(lambda v: v) if bounded else None
        self.sum = _Sum(None)

    def add(self, sub: bytes) -> None:
        """Fold in one part\'s statistics sub-message."""
        allowed = {1, 2, 3} if self.bounds is not None else {1}
        f = _fields(sub, allowed, "string" if self.bounds is not None else "binary")
        if self.bounds is not None:
            self.bounds.add(f.get(1), f.get(2))
        length = f.get(self.length_field)
        self.sum.add(unzigzag(as_int(length)) if length is not None else None)

    def fields(self) -> list[Field]:
        """The merged sub-message\'s fields."""
        out = _bound_fields(self.bounds, BYTES) if self.bounds is not None else []
        if self.sum.valid:
            total = int(self.sum.total) % UINT64  # a uint64 written as sint64
            out.append((self.length_field, VARINT, zigzag(total - UINT64 * (total >> 63))))
        return out


class _Decimal:
    """DecimalStatistics: text minimum, maximum and sum; the sum kept at the column's scale."""

    number = 6

    def __init__(self, orc_type: dict):
        self.scale = int(orc_type.get(TYPE_SCALE, 0))
        self.bounds, self.sum = _Bounds(lambda v: Decimal(v.decode())), _Sum(INT128)

    def add(self, sub: bytes) -> None:
        """Fold in one part\'s statistics sub-message."""
        f = _fields(sub, {1, 2, 3}, "decimal")
        self.bounds.add(f.get(1), f.get(2))
        text = f.get(3)
        self.sum.add(_unscaled(as_bytes(text).decode(), self.scale) if text is not None else None)

    def fields(self) -> list[Field]:
        """The merged sub-message\'s fields."""
        out = _bound_fields(self.bounds, BYTES)
        if self.sum.valid:
            out.append((3, BYTES, decimal_text(int(self.sum.total), self.scale).encode()))
        return out


class _Timestamp:
    """TimestampStatistics: UTC milliseconds with the sub-millisecond nanos of each bound."""

    number = 9

    def __init__(self):
        self.low: tuple[int, int] | None = None
        self.high: tuple[int, int] | None = None

    def add(self, sub: bytes) -> None:
        """Fold in one part\'s statistics sub-message."""
        f = _fields(sub, {3, 4, 5, 6}, "timestamp")
        if 3 not in f or 4 not in f:
            return
        low = (unzigzag(as_int(f[3])), as_int(f[5]) - 1 if 5 in f else MIN_NANOS)
        high = (unzigzag(as_int(f[4])), as_int(f[6]) - 1 if 6 in f else MAX_NANOS)
        if self.low is None or self.high is None:
            self.low, self.high = low, high
            return
        if high[0] >= self.high[0]:
            nanos = high[1] if high[0] > self.high[0] or high[1] > self.high[1] else self.high[1]
            self.high = (high[0], nanos)
        if low[0] <= self.low[0]:
            nanos = low[1] if low[0] < self.low[0] or low[1] < self.low[1] else self.low[1]
            self.low = (low[0], nanos)

    def fields(self) -> list[Field]:
        """The merged sub-message\'s fields."""
        if self.low is None or self.high is None:
            return []
        out: list[Field] = [(3, VARINT, zigzag(self.low[0])), (4, VARINT, zigzag(self.high[0]))]
        if self.low[1] != MIN_NANOS:
            out.append((5, VARINT, self.low[1] + 1))
        if self.high[1] != MAX_NANOS:
            out.append((6, VARINT, self.high[1] + 1))
        return out


class _Boolean:
    """BucketStatistics: the count of true values."""

    number = 5

    def __init__(self):
        self.sum = _Sum(None)

    def add(self, sub: bytes) -> None:
        """Fold in one part\'s statistics sub-message."""
        counts = [
            c
            for number, wire, value in decode(sub)
            if number == 1
            for c in (packed(as_bytes(value)) if wire == BYTES else [as_int(value)])
        ]
        self.sum.add(counts[0] if counts else None)

    def fields(self) -> list[Field]:
        """The merged sub-message\'s fields."""
        if not self.sum.valid:
            return []
        return [(1, BYTES, varint(int(self.sum.total) % UINT64))]


class _Collection:
    """CollectionStatistics: minimum, maximum and total children, all uint64."""

    number = 12

    def __init__(self):
        self.bounds, self.sum = _Bounds(lambda v: v), _Sum((0, UINT64 - 1))

    def add(self, sub: bytes) -> None:
        """Fold in one part\'s statistics sub-message."""
        f = _fields(sub, {1, 2, 3}, "collection")
        self.bounds.add(f.get(1), f.get(2))
        total = f.get(3)
        self.sum.add(as_int(total) if total is not None else None)

    def fields(self) -> list[Field]:
        """The merged sub-message\'s fields."""
        out = _bound_fields(self.bounds, VARINT)
        if self.sum.valid:
            out.append((3, VARINT, int(self.sum.total)))
        return out


def _bound_fields(bounds: _Bounds, wire: int) -> list[Field]:
    """Minimum (1) and maximum (2), if any part had values."""
    if bounds.low is None or bounds.high is None:
        return []
    return [(1, wire, bounds.low), (2, wire, bounds.high)]


def _unscaled(text: str, scale: int) -> int:
    """A decimal's text as an integer at `scale` (as C++ aligns the sum to the column's)."""
    whole, _, fraction = text.partition(".")
    return int(whole + fraction) * 10 ** (scale - len(fraction))


def decimal_text(unscaled: int, scale: int) -> str:
    """Int128::toDecimalString(scale, trimTrailingZeros=true): no trimming at scale 0."""
    if scale == 0:
        return str(unscaled)
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    text = ("-" if unscaled < 0 else "") + digits[:-scale] + "." + digits[-scale:]
    text = text.rstrip("0")
    return text[:-1] if text.endswith(".") else text


def _merger(orc_type: dict):
    """The statistics accumulator of a column's ORC type (None: counts and nulls only)."""
    kind = orc_type.get(TYPE_KIND, 0)
    if kind in (BYTE, SHORT, INT, LONG):  # IntegerStatistics: zigzag varints, an int64 sum
        return _Numeric(2, VARINT, unzigzag, lambda v: zigzag(int(v)), INT64)
    if kind in (FLOAT, DOUBLE):  # DoubleStatistics: doubles, summed in stripe order
        return _Numeric(3, FIXED64, as_double, lambda v: double(float(v)), None)
    if kind in (STRING, VARCHAR, CHAR):
        return _Length(4, 3, bounded=True)
    if kind == BINARY:
        return _Length(8, 1, bounded=False)
    if kind in (TIMESTAMP, TIMESTAMP_INSTANT):
        return _Timestamp()
    if kind in (LIST, MAP):
        return _Collection()
    if kind == DECIMAL:
        return _Decimal(orc_type)
    if kind == DATE:  # DateStatistics: zigzag days, no sum
        return _Numeric(7, VARINT, unzigzag, None, None)
    if kind == BOOLEAN:
        return _Boolean()
    return None


class _Column:
    """One column's file statistics being merged."""

    def __init__(self, orc_type: dict):
        self.values = 0
        self.has_null = False
        self.typed = _merger(orc_type)

    def add(self, stats: bytes) -> None:
        """Fold in one part's ColumnStatistics of this column."""
        fields = decode(stats)
        allowed = {NUMBER_OF_VALUES, HAS_NULL} | ({self.typed.number} if self.typed else set())
        unknown = {n for n, _, _ in fields} - allowed
        if unknown:
            raise InternalError(
                f"ORC column statistics carry fields {sorted(unknown)} we cannot merge"
            )
        by_number = {n: v for n, _, v in fields}
        self.values += as_int(by_number.get(NUMBER_OF_VALUES, 0))
        self.has_null = self.has_null or bool(by_number.get(HAS_NULL, 0))
        if self.typed is not None:
            self.typed.add(as_bytes(by_number.get(self.typed.number, b"")))

    def encoded(self) -> bytes:
        """The merged ColumnStatistics, fields in number order as protobuf writes them."""
        fields: list[Field] = [
            (NUMBER_OF_VALUES, VARINT, self.values % UINT64),
            (HAS_NULL, VARINT, int(self.has_null)),
        ]
        if self.typed is not None:
            fields.append((self.typed.number, BYTES, encode(self.typed.fields())))
        return encode(sorted(fields, key=lambda f: f[0]))


class FileStatistics:
    """A file's column statistics, merged part by part in stripe order."""

    def __init__(self, types: list[bytes]):
        self.columns = [_Column(_type_fields(t)) for t in types]

    def add(self, columns: list[bytes]) -> None:
        """Fold in one part's statistics, one ColumnStatistics per column."""
        if len(columns) != len(self.columns):
            raise InternalError(f"{len(columns)} column statistics for {len(self.columns)} columns")
        for column, stats in zip(self.columns, columns, strict=True):
            column.add(stats)

    def encoded(self) -> list[bytes]:
        """Every column's merged ColumnStatistics."""
        return [c.encoded() for c in self.columns]


def _type_fields(orc_type: bytes) -> dict:
    """An ORC Type's kind and scale."""
    return {n: v for n, _, v in decode(orc_type) if n in (TYPE_KIND, TYPE_SCALE)}
