"""What Avro can hold: the types, names and codecs Paimon's Avro writer writes as we do."""

from __future__ import annotations

import re

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.format.schema import (
    ArrayType,
    AtomicType,
    DataType,
    MapType,
    RowType,
    TableSchema,
    VectorType,
)
from dagster_paimon.io.avro.codecs import FILE_COMPRESSION, avro_codec
from dagster_paimon.options import FILE_FORMAT

AVRO_CODEC = "avro.codec"
AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLAIN_ATOMIC = re.compile(
    r"BOOLEAN|TINYINT|SMALLINT|INT|INTEGER|BIGINT|FLOAT|DOUBLE|DATE|STRING|BYTES"
    r"|(VAR)?CHAR\(\d+\)|(VAR)?BINARY\(\d+\)|DECIMAL(\(\d+(,\s*\d+)?\))?"
)
STRING_KEY = re.compile(r"STRING|(VAR)?CHAR\(\d+\)")
TIME = re.compile(r"TIME(\((\d+)\))?")
TIMESTAMP = re.compile(r"TIMESTAMP(_LTZ)?(\((\d+)\))?( WITH(OUT)? (LOCAL )?TIME ZONE)?")
MAX_TIME_PRECISION, MAX_TIMESTAMP_PRECISION = 3, 6


def check_avro(schema: TableSchema) -> None:
    """Refuse what Paimon's Avro writer would refuse or write differently from us."""
    if AVRO_CODEC in schema.options:
        raise InvalidOptionError(
            f"table option '{AVRO_CODEC}' is {schema.options[AVRO_CODEC]!r}: dagster-paimon "
            f"compresses Avro data files as '{FILE_COMPRESSION}' says; unset '{AVRO_CODEC}'"
        )
    avro_codec(schema.options.get(FILE_COMPRESSION, "zstd"))
    for f in schema.fields:
        problem = _avro_problem(f.name, f.type)
        if problem:
            raise InvalidOptionError(
                f"table option '{FILE_FORMAT}' is 'avro' and column {f.name!r} ({f.type}) {problem}"
            )


def _avro_problem(name: str, data_type: DataType) -> str | None:
    """Why a field cannot be written as Paimon's Avro writer writes it, or None."""
    if not AVRO_NAME.fullmatch(name):
        return f"has the name {name!r}, which is not an Avro name (Paimon's Avro writer fails)"
    return _type_problem(data_type)


def _type_problem(data_type: DataType) -> str | None:
    """Why a type has no exact Avro encoding we write, or None."""
    if isinstance(data_type, ArrayType | VectorType):
        return _type_problem(data_type.element)
    if isinstance(data_type, MapType):
        key = data_type.key
        string_key = isinstance(key, AtomicType) and STRING_KEY.fullmatch(key.type.upper())
        if not string_key and key.nullable:
            return (
                f"has the nullable map key {key}: Paimon writes it as a ['null', T] union, "
                "which an Arrow map key cannot carry"
            )
        return _type_problem(key) or _type_problem(data_type.value)
    if isinstance(data_type, RowType):
        problems = (_avro_problem(f.name, f.type) for f in data_type.fields)
        return next((p for p in problems if p), None)
    if isinstance(data_type, AtomicType):
        return _atomic_problem(data_type.type.upper())
    return f"holds {data_type}, which dagster-paimon does not write to Avro as Paimon does"


def _atomic_problem(text: str) -> str | None:
    """Why an atomic type has no exact Avro encoding, or None."""
    if PLAIN_ATOMIC.fullmatch(text):
        return None
    time = TIME.fullmatch(text)
    if time:
        if int(time.group(2) or 0) <= MAX_TIME_PRECISION:
            return None
        return "is TIME with precision above 3: Paimon's Avro writer refuses it"
    stamp = TIMESTAMP.fullmatch(text)
    if stamp:
        if int(stamp.group(3) or 6) <= MAX_TIMESTAMP_PRECISION:
            return None
        return "is a TIMESTAMP with precision above 6: Paimon's Avro writer refuses it"
    if text == "VARIANT":
        return "is VARIANT: Paimon's Avro writer refuses VARIANT"
    return f"holds {text}, which dagster-paimon does not write to Avro as Paimon does"
