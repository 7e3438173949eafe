"""The table options that choose and configure a merge engine, read as CoreOptions.java does.

Validation follows the Java factories and SchemaValidation, so a table Java accepts builds here
and a bad option fails up front with InvalidOptionError naming the key, not mid-compaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from dagster_paimon.errors import CorruptMetadataError, InvalidOptionError
from dagster_paimon.lsm.merge.aggregate.aggregators import (
    MAX_PRODUCT_DECIMAL_PRECISION,
    BoolAnd,
    BoolOr,
    FieldAggregator,
    FirstNonNullValue,
    FirstValue,
    IgnoreRetract,
    LastNonNullValue,
    LastValue,
    Max,
    Min,
    PrimaryKey,
    Product,
    Sum,
)
from dagster_paimon.lsm.merge.aggregate.collection_aggregators import Collect, ListAgg, MergeMap
from dagster_paimon.lsm.merge.functions import (
    AggregateMergeFunction,
    DeduplicateMergeFunction,
    FirstRowMergeFunction,
    MergeFunction,
)
from dagster_paimon.lsm.merge.partial_update import PartialUpdateMergeFunction, SequenceGroup
from dagster_paimon.options import (
    AGGREGATION_REMOVE_RECORD_ON_DELETE,
    DEDUPLICATE,
    DEFAULT_AGGREGATE_FUNCTION,
    FIELDS_PREFIX,
    FIRST_ROW,
    IGNORE_DELETE,
    PARTIAL_UPDATE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
    SEQUENCE_FIELD,
    SEQUENCE_FIELD_SORT_ORDER,
    SEQUENCE_GROUP_SUFFIX,
    choice,
    flag,
    ignore_delete,
    merge_engine,
    names,
    read_option,
)

SORT_ORDERS = ("ascending", "descending")


def sequence_order(
    options: Mapping[str, str], value_schema: pa.Schema
) -> tuple[tuple[str, ...], bool]:
    """`sequence.field` (validated as SchemaValidation.validateSequenceField) and whether it
    sorts ascending (`sequence.field.sort-order`)."""
    fields = names(options.get(SEQUENCE_FIELD, ""))
    for name in fields:
        if name not in value_schema.names:
            raise InvalidOptionError(
                f"table option '{SEQUENCE_FIELD}': field '{name}' is not in the table schema"
            )
        if fields.count(name) > 1:
            raise InvalidOptionError(
                f"table option '{SEQUENCE_FIELD}': field '{name}' is listed more than once"
            )
        if FIELDS_PREFIX + name + ".aggregate-function" in options:
            raise InvalidOptionError(
                f"table option 'fields.{name}.aggregate-function': a sequence field cannot "
                "define an aggregate function"
            )
    if fields and merge_engine(options) == FIRST_ROW:
        raise InvalidOptionError(
            f"table option '{SEQUENCE_FIELD}' is not supported by the first-row merge engine"
        )
    order = read_option(options, SEQUENCE_FIELD_SORT_ORDER, choice(SORT_ORDERS), "ascending")
    return tuple(fields), order == "ascending"


def _check_field_options(options: Mapping[str, str], value_schema: pa.Schema) -> None:
    """SchemaValidation.validateFieldsPrefix: every `fields.<names>.*` names real fields."""
    for key in options:
        if not key.startswith(FIELDS_PREFIX):
            continue
        for name in key.split(".")[1].split(","):
            if name != DEFAULT_AGGREGATE_FUNCTION and name not in value_schema.names:
                raise InvalidOptionError(
                    f"table option '{key}': field '{name}' is not in the table schema"
                )


_SIMPLE: dict[str, type[FieldAggregator]] = {
    cls.name: cls
    for cls in (
        Sum,
        Product,
        Max,
        Min,
        LastValue,
        LastNonNullValue,
        FirstValue,
        FirstNonNullValue,
        PrimaryKey,
        BoolAnd,
        BoolOr,
    )
}
_ALIASES = {"first_not_null_value": FirstNonNullValue.name}
_JAVA_ONLY = (
    "merge_map_with_keytime",
    "nested_update",
    "nested_partial_update",
    "hll_sketch",
    "theta_sketch",
    "rbm32",
    "rbm64",
)
AGGREGATE_FUNCTIONS = (*_SIMPLE, *_ALIASES, ListAgg.name, Collect.name, MergeMap.name)


def _is_numeric(type_: pa.DataType) -> bool:
    """Paimon's NUMERIC family as pypaimon maps it to Arrow."""
    return (
        pa.types.is_signed_integer(type_)
        or pa.types.is_floating(type_)
        or pa.types.is_decimal128(type_)
    )


def _is_comparable(type_: pa.DataType) -> bool:
    """Types max/min can order (TypeCheckUtils.isComparable: not nested)."""
    return not pa.types.is_nested(type_) and not pa.types.is_null(type_)


def _type_error(function: str, field: pa.Field) -> str | None:
    """Why `function` cannot aggregate `field`, as the Java factories check it."""
    type_ = field.type
    if function in ("sum", "product") and not _is_numeric(type_):
        return f"{function} needs a numeric column"
    too_wide = pa.types.is_decimal(type_) and type_.precision > MAX_PRODUCT_DECIMAL_PRECISION
    if function == "product" and too_wide:
        return f"product supports DECIMAL up to precision {MAX_PRODUCT_DECIMAL_PRECISION}"
    if function in ("max", "min") and not _is_comparable(type_):
        return f"{function} needs a comparable column"
    if function in ("bool_and", "bool_or") and not pa.types.is_boolean(type_):
        return f"{function} needs a BOOLEAN column"
    if function == "listagg" and not (pa.types.is_string(type_) or pa.types.is_large_string(type_)):
        return "listagg needs a STRING column"
    if function == "collect" and not (pa.types.is_list(type_) or pa.types.is_large_list(type_)):
        return "collect needs an ARRAY column"
    if function == "merge_map" and not pa.types.is_map(type_):
        return "merge_map needs a MAP column"
    return None


def _aggregator(
    options: Mapping[str, str], field: pa.Field, function: str, option_key: str
) -> FieldAggregator:
    """FieldAggregatorFactory.create: the named function for `field`, with the field's options.

    `option_key` names the option that chose the function, for error messages.
    """
    name = _ALIASES.get(function, function)
    if name in _JAVA_ONLY:
        raise InvalidOptionError(
            f"table option '{option_key}': aggregate function '{function}' is not supported "
            "by dagster-paimon"
        )
    if name not in AGGREGATE_FUNCTIONS:
        raise InvalidOptionError(
            f"table option '{option_key}' names unknown aggregate function {function!r}; "
            f"expected one of {', '.join(AGGREGATE_FUNCTIONS)}"
        )
    problem = _type_error(name, field)
    if problem:
        raise InvalidOptionError(
            f"table option '{option_key}': {problem}, field '{field.name}' is {field.type}"
        )
    prefix = FIELDS_PREFIX + field.name + "."
    ignore_retract = flag(options, prefix + "ignore-retract")
    if ignore_retract and flag(options, AGGREGATION_REMOVE_RECORD_ON_DELETE):
        raise InvalidOptionError(
            f"table options '{AGGREGATION_REMOVE_RECORD_ON_DELETE}' and "
            f"'{prefix}ignore-retract' conflict and cannot both be enabled"
        )
    aggregator: FieldAggregator
    if name == ListAgg.name:
        delimiter = options.get(prefix + "list-agg-delimiter", ",")
        aggregator = ListAgg(field, delimiter, flag(options, prefix + "distinct"))
    elif name == Collect.name:
        aggregator = Collect(field, flag(options, prefix + "distinct"))
    elif name == MergeMap.name:
        aggregator = MergeMap(field)
    else:
        aggregator = _SIMPLE[name](field)
    return IgnoreRetract(aggregator) if ignore_retract else aggregator


def _configured_function(options: Mapping[str, str], name: str) -> tuple[str | None, str]:
    """The field's own aggregate function, else the default one, and the option it came from."""
    own = FIELDS_PREFIX + name + ".aggregate-function"
    if own in options:
        return str(options[own]).strip(), own
    default = FIELDS_PREFIX + DEFAULT_AGGREGATE_FUNCTION
    if default in options:
        return str(options[default]).strip(), default
    return None, own


def _aggregate_function(
    value_schema: pa.Schema,
    primary_keys: Sequence[str],
    options: Mapping[str, str],
    sequence_fields: Sequence[str],
) -> AggregateMergeFunction:
    """AggregateMergeFunction.Factory: sequence fields take last_value, keys primary-key."""
    aggregators = []
    for field in value_schema:
        function, option_key = _configured_function(options, field.name)
        if field.name in sequence_fields:
            function = "last_value"
        elif field.name in primary_keys:
            function = "primary-key"
        aggregators.append(
            _aggregator(options, field, function or "last_non_null_value", option_key)
        )
    return AggregateMergeFunction(
        value_schema, aggregators, flag(options, AGGREGATION_REMOVE_RECORD_ON_DELETE)
    )


def _sequence_groups(
    value_schema: pa.Schema, primary_keys: Sequence[str], options: Mapping[str, str]
) -> list[SequenceGroup]:
    """The `fields.<a,b>.sequence-group` options, validated as the partial-update factory does."""
    removing = set(names(options.get(PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP, "")))
    groups: list[SequenceGroup] = []
    claimed: dict[str, str] = {}
    for key in sorted(options):
        if not (key.startswith("fields") and key.endswith("sequence-group")):
            continue
        if not (key.startswith(FIELDS_PREFIX) and key.endswith(SEQUENCE_GROUP_SUFFIX)):
            raise InvalidOptionError(f"table option '{key}' is not a valid sequence-group option")
        sequence = names(key[len(FIELDS_PREFIX) : -len(SEQUENCE_GROUP_SUFFIX)])
        protected = [n for n in names(str(options[key])) if n not in sequence]
        for name in (*sequence, *protected):
            if name not in value_schema.names:
                raise InvalidOptionError(
                    f"table option '{key}': field '{name}' is not in the table schema"
                )
            if name in primary_keys:
                raise InvalidOptionError(
                    f"table option '{key}': primary key field '{name}' cannot be in a "
                    "sequence group"
                )
            if name in claimed:
                raise InvalidOptionError(
                    f"table option '{key}': field '{name}' is already in sequence group "
                    f"'{claimed[name]}'"
                )
            claimed[name] = key
        groups.append(
            SequenceGroup(tuple(sequence), tuple(protected), bool(removing & set(sequence)))
        )
    unknown = removing - {n for g in groups for n in g.sequence_fields}
    if unknown:
        raise InvalidOptionError(
            f"table option '{PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP}': fields "
            f"{sorted(unknown)} are not sequence fields of any sequence group"
        )
    return groups


def _partial_update_function(
    value_schema: pa.Schema, primary_keys: Sequence[str], options: Mapping[str, str]
) -> PartialUpdateMergeFunction:
    """PartialUpdateMergeFunction.Factory, with its option conflicts."""
    ignoring = ignore_delete(options)
    remove_record = flag(options, PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)
    groups = _sequence_groups(value_schema, primary_keys, options)
    conflicts = [
        (ignoring and remove_record, IGNORE_DELETE, PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE),
        (
            ignoring and PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP in options,
            IGNORE_DELETE,
            PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
        ),
        (remove_record and bool(groups), "sequence-group", PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE),
    ]
    for conflict, first, second in conflicts:
        if conflict:
            raise InvalidOptionError(
                f"table options '{first}' and '{second}' conflict and cannot both be enabled"
            )
    sequence_fields = {n for g in groups for n in g.sequence_fields}
    protected = {n for g in groups for n in g.protected_fields}
    aggregators: dict[str, FieldAggregator] = {}
    for field in value_schema:
        if field.name in sequence_fields:
            continue
        function, option_key = _configured_function(options, field.name)
        if field.name in primary_keys:
            function = "primary-key"
        elif function is None:
            continue
        elif function != "last_non_null_value" and field.name not in protected:
            raise InvalidOptionError(
                f"table option '{option_key}': aggregate function '{function}' needs field "
                f"'{field.name}' to be protected by a sequence group"
            )
        aggregators[field.name] = _aggregator(options, field, function, option_key)
    return PartialUpdateMergeFunction(
        value_schema,
        ignore_delete=ignoring,
        remove_record_on_delete=remove_record,
        sequence_groups=groups,
        aggregators=aggregators,
    )


def merge_function_from_options(
    value_schema: pa.Schema,
    primary_keys: Sequence[str],
    partition_keys: Sequence[str],
    options: Mapping[str, str],
) -> MergeFunction:
    """PrimaryKeyTableUtils.createMergeFunctionFactory: the merge function a table's options name.

    `value_schema` holds the table columns with their nullability; `primary_keys` includes
    partition keys (as TableSchema.primaryKeys does); `partition_keys` is accepted for symmetry
    with the key layout and checked to be part of the table.
    """
    missing = [k for k in (*primary_keys, *partition_keys) if k not in value_schema.names]
    if missing:
        raise CorruptMetadataError(f"key fields {missing} are not in the value schema")
    engine = merge_engine(options)
    _check_field_options(options, value_schema)
    sequence_fields, _ = sequence_order(options, value_schema)
    if engine == DEDUPLICATE:
        return DeduplicateMergeFunction(ignore_delete(options))
    if engine == FIRST_ROW:
        return FirstRowMergeFunction(ignore_delete(options))
    if engine == PARTIAL_UPDATE:
        return _partial_update_function(value_schema, primary_keys, options)
    return _aggregate_function(value_schema, primary_keys, options, sequence_fields)
