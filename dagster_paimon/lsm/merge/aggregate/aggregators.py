"""Paimon's field aggregators (mergetree/compact/aggregate/Field*Agg.java) over many keys at once.

Every method takes equal-length Arrow arrays: element i is key i's accumulator or input, and the
result is what Java's `agg`, `aggReversed` or `retract` returns for that key. `seen` carries the
per-key `initialized` flag of the first_value family, which Java keeps outside the accumulator.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dagster_paimon.errors import MergeError
from dagster_paimon.lsm.merge.key_groups import nulls_like, valid_mask

AggState = tuple[pa.Array, np.ndarray]

_COMPACT_DECIMAL_PRECISION = 18
MAX_PRODUCT_DECIMAL_PRECISION = 37


def _both_valid(a: pa.Array, b: pa.Array) -> pa.Array:
    """Positions where neither side is null."""
    return pc.and_(a.is_valid(), b.is_valid())


def _null_skipping(combined: pa.Array, acc: pa.Array, inp: pa.Array) -> pa.Array:
    """Java's `acc == null || in == null ? (acc == null ? in : acc) : combined`.

    `combined` may itself be null where both sides are not (a decimal that overflowed).
    """
    return pc.if_else(_both_valid(acc, inp), combined, pc.coalesce(acc, inp))


class FieldAggregator:
    """One column's aggregate function; Java's FieldAggregator over arrays of keys."""

    name: str

    def __init__(self, field: pa.Field) -> None:
        self.field = field

    def agg(self, acc: pa.Array, inp: pa.Array, seen: np.ndarray) -> AggState:
        """Fold one input into each accumulator."""
        return self.combine(acc, inp), seen

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """Stateless aggregators implement this instead of `agg`."""
        raise NotImplementedError

    def agg_reversed(self, acc: pa.Array, inp: pa.Array, seen: np.ndarray) -> AggState:
        """Fold an input that is older than the accumulator (sequence groups): agg(in, acc)."""
        return self.agg(inp, acc, seen)

    def retract(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """Undo one input; only some functions can (FieldAggregator.retract throws)."""
        raise MergeError(
            f"aggregate function '{self.name}' of field '{self.field.name}' does not support "
            f"retraction; set 'fields.{self.field.name}.ignore-retract'='true' to ignore "
            "retraction messages"
        )

    def _checked(self, op: Callable[..., pa.Array], *args: pa.Array) -> pa.Array:
        """Run an Arrow checked kernel; overflow and division by zero fail like Math.*Exact."""
        try:
            return op(*args)
        except pa.ArrowInvalid as e:
            raise MergeError(
                f"aggregate function '{self.name}' of field '{self.field.name}' failed: {e}"
            ) from e


def _unscaled(column: pa.Array) -> np.ndarray:
    """Unscaled values of a decimal128 of precision <= 18 (the low word; Java keeps a long)."""
    words = np.frombuffer(column.buffers()[1], dtype=np.int64)
    return words[2 * column.offset : 2 * (column.offset + len(column)) : 2].copy()


def _from_unscaled(values: np.ndarray, valid: np.ndarray, type_: pa.DataType) -> pa.Array:
    """A decimal128 array from unscaled longs, sign-extended to 128 bits."""
    words = np.empty(2 * len(values), dtype=np.int64)
    words[0::2] = values
    words[1::2] = values >> 63
    validity = pa.array(valid, type=pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(type_, len(values), [validity, pa.py_buffer(words)])


def _wide_decimal(column: pa.Array, precision: int) -> pa.Array:
    """A decimal cast to decimal256 so exact results never overflow Arrow's type."""
    return column.cast(pa.decimal256(precision, column.type.scale))


def _fit_decimal(result: pa.Array, type_: pa.DataType) -> pa.Array:
    """Decimal.fromBigDecimal: null when more digits than the type's precision, else the value."""
    limit = pa.scalar(Decimal(10) ** (type_.precision - type_.scale), type=result.type)
    fits = pc.less(pc.abs(result), limit)
    return pc.if_else(fits, result, pa.scalar(None, result.type)).cast(type_, safe=False)


def _decimal_add(acc: pa.Array, inp: pa.Array, subtract: bool) -> pa.Array:
    """DecimalUtils.add/subtract: long arithmetic for compact precisions, else BigDecimal.

    A compact result is not checked against the precision (fromUnscaledLong), only against long
    overflow, which falls through to BigDecimal and so to null; wider results are null when they
    exceed the precision.
    """
    type_ = acc.type
    valid = valid_mask(acc) & valid_mask(inp)
    if type_.precision <= _COMPACT_DECIMAL_PRECISION:
        x, y = _unscaled(acc), _unscaled(inp)
        if subtract:
            result = x - y
            overflow = ((x ^ y) & (x ^ result)) < 0
        else:
            result = x + y
            overflow = ((x ^ result) & (y ^ result)) < 0
        return _from_unscaled(result, valid & ~overflow, type_)
    wide = type_.precision + 1
    op = pc.subtract if subtract else pc.add
    return _fit_decimal(op(_wide_decimal(acc, wide), _wide_decimal(inp, wide)), type_)


class Sum(FieldAggregator):
    """FieldSumAgg: nulls are skipped; integer overflow is an error, as Math.addExact."""

    name = "sum"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc + in, or whichever side is non-null."""
        return _null_skipping(self._add(acc, inp, subtract=False), acc, inp)

    def retract(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc - in; a null accumulator becomes -in."""
        negated = self._negate(nulls_like(inp, valid_mask(acc)))
        difference = self._add(acc, inp, subtract=True)
        return pc.if_else(_both_valid(acc, inp), difference, pc.coalesce(acc, negated))

    def _add(self, acc: pa.Array, inp: pa.Array, subtract: bool) -> pa.Array:
        """Checked addition or subtraction per type."""
        if pa.types.is_decimal(acc.type):
            return _decimal_add(acc, inp, subtract)
        if pa.types.is_floating(acc.type):
            return (pc.subtract if subtract else pc.add)(acc, inp)
        return self._checked(pc.subtract_checked if subtract else pc.add_checked, acc, inp)

    def _negate(self, inp: pa.Array) -> pa.Array:
        """Checked negation (negating the minimum integer overflows)."""
        if pa.types.is_integer(inp.type):
            return self._checked(pc.negate_checked, inp)
        return pc.negate(inp)


class Product(FieldAggregator):
    """FieldProductAgg: nulls are skipped; integer overflow is an error; retract divides."""

    name = "product"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc * in, or whichever side is non-null."""
        type_ = acc.type
        if pa.types.is_decimal(type_):
            wide = 2 * type_.precision + 1
            product = pc.multiply(_wide_decimal(acc, wide), _wide_decimal(inp, wide))
            rounded = pc.round(product, ndigits=type_.scale, round_mode="half_towards_infinity")
            multiplied = _fit_decimal(rounded, type_)
        elif pa.types.is_floating(type_):
            multiplied = pc.multiply(acc, inp)
        else:
            multiplied = self._checked(pc.multiply_checked, acc, inp)
        return _null_skipping(multiplied, acc, inp)

    def retract(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc / in (integer division truncates); a null on either side keeps acc."""
        type_ = acc.type
        both = np.asarray(_both_valid(acc, inp))
        if pa.types.is_decimal(type_):
            if both.any():
                raise MergeError(
                    f"retracting a product of DECIMAL field '{self.field.name}' is not supported"
                )
            return acc
        if pa.types.is_floating(type_):
            return pc.coalesce(pc.divide(acc, inp), acc)
        divisor = nulls_like(inp, ~both)
        return pc.coalesce(self._checked(pc.divide_checked, acc, divisor), acc)


class Max(FieldAggregator):
    """FieldMaxAgg: the larger non-null value."""

    name = "max"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """in if acc < in, else acc; nulls skipped."""
        larger = pc.fill_null(pc.less(acc, inp), False)
        return pc.if_else(pc.or_(acc.is_null(), larger), inp, acc)


class Min(FieldAggregator):
    """FieldMinAgg: the smaller non-null value."""

    name = "min"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc if acc < in, else in; nulls skipped."""
        keep = pc.or_(inp.is_null(), pc.fill_null(pc.less(acc, inp), False))
        return pc.if_else(pc.and_(acc.is_valid(), keep), acc, inp)


class LastValue(FieldAggregator):
    """FieldLastValueAgg: the input, null or not; a retraction clears the field."""

    name = "last_value"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """Always the input."""
        return inp

    def retract(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """Always null."""
        return pa.nulls(len(acc), acc.type)


class LastNonNullValue(FieldAggregator):
    """FieldLastNonNullValueAgg: the latest non-null input; retracting a value clears it."""

    name = "last_non_null_value"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """in if non-null, else acc."""
        return pc.coalesce(inp, acc)

    def retract(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """null if the retracted value is non-null, else acc."""
        return nulls_like(acc, valid_mask(inp))


class FirstValue(FieldAggregator):
    """FieldFirstValueAgg: the first input the key saw, even null (its `initialized` flag)."""

    name = "first_value"

    def agg(self, acc: pa.Array, inp: pa.Array, seen: np.ndarray) -> AggState:
        """in on the key's first agg call, acc afterwards."""
        return pc.if_else(pa.array(seen), acc, inp), np.ones_like(seen)


class FirstNonNullValue(FieldAggregator):
    """FieldFirstNonNullValueAgg: the first non-null input the key saw."""

    name = "first_non_null_value"

    def agg(self, acc: pa.Array, inp: pa.Array, seen: np.ndarray) -> AggState:
        """in on the key's first non-null input, acc otherwise."""
        valid = valid_mask(inp)
        first = ~seen & valid
        return pc.if_else(pa.array(first), inp, acc), seen | valid


class PrimaryKey(FieldAggregator):
    """FieldPrimaryKeyAgg: primary-key columns just take the input."""

    name = "primary-key"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """Always the input."""
        return inp

    def retract(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """Always the input."""
        return inp


class BoolAnd(FieldAggregator):
    """FieldBoolAndAgg: logical and, nulls skipped."""

    name = "bool_and"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc && in."""
        return _null_skipping(pc.and_(acc, inp), acc, inp)


class BoolOr(FieldAggregator):
    """FieldBoolOrAgg: logical or, nulls skipped."""

    name = "bool_or"

    def combine(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """acc || in."""
        return _null_skipping(pc.or_(acc, inp), acc, inp)


class IgnoreRetract(FieldAggregator):
    """FieldIgnoreRetractAgg: `fields.<f>.ignore-retract` keeps the accumulator on retraction."""

    def __init__(self, inner: FieldAggregator) -> None:
        super().__init__(inner.field)
        self.inner = inner
        self.name = inner.name

    def agg(self, acc: pa.Array, inp: pa.Array, seen: np.ndarray) -> AggState:
        """The wrapped function's agg."""
        return self.inner.agg(acc, inp, seen)

    def agg_reversed(self, acc: pa.Array, inp: pa.Array, seen: np.ndarray) -> AggState:
        """Java's wrapper does not forward aggReversed, so it is agg(in, acc) even for collect."""
        return self.agg(inp, acc, seen)

    def retract(self, acc: pa.Array, inp: pa.Array) -> pa.Array:
        """Unchanged."""
        return acc
