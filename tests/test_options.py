"""The one option reader: fallbacks, defaults, and errors that name the key and the value."""

from __future__ import annotations

import pytest

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.options import (
    at_least,
    bucket,
    catalog_boolean,
    duration_ms,
    file_format,
    flag,
    ignore_delete,
    memory_bytes,
    merge_engine,
    read_option,
    write_compression,
    write_format,
    written_formats,
)


def test_the_first_set_key_wins_then_the_default():
    options = {"b": "2", "c": "3"}
    assert read_option(options, "a", int, 0, ("b", "c")) == 2
    assert read_option({}, "a", int, 9, ("b",)) == 9


def test_a_malformed_value_names_its_key_and_value():
    with pytest.raises(InvalidOptionError, match=r"table option 'n' has malformed value '0': must"):
        read_option({"n": "0"}, "n", at_least(1), 5)
    with pytest.raises(InvalidOptionError, match=r"'write-only' .* expected true or false"):
        flag({"write-only": "yes"}, "write-only")


def test_typed_accessors():
    assert merge_engine({}) == "deduplicate"
    assert merge_engine({"merge-engine": " First-Row "}) == "first-row"
    assert ignore_delete({"partial-update.ignore-delete": "TRUE"})
    assert not ignore_delete({"ignore-delete": "false", "deduplicate.ignore-delete": "true"})
    assert bucket({}) == -1 and bucket({"bucket": "4"}) == 4
    assert file_format({}) == "parquet" and file_format({"file.format": "ORC"}) == "orc"
    assert memory_bytes("1 kb") == 1024
    assert duration_ms("2 min") == 120_000
    with pytest.raises(InvalidOptionError, match="merge-engine"):
        merge_engine({"merge-engine": "last-row"})


@pytest.mark.parametrize(
    ("text", "value"), [("true", True), ("1", True), ("no", False), ("", False)]
)
def test_catalog_flags_read_as_pypaimon_reads_them(text, value):
    assert catalog_boolean(text) is value


def test_levels_and_changelogs_pick_their_own_format_and_compression():
    options = {
        "file.format": "ORC",
        "file.format.per.level": "0:Avro, 5:parquet",
        "file.compression.per.level": "5:gzip",
        "changelog-file.format": "parquet",
        "changelog-file.compression": "snappy",
    }
    assert [write_format(options, level) for level in (0, 3, 5)] == ["avro", "orc", "parquet"]
    assert write_format(options, 0, changelog=True) == "parquet"
    assert [write_compression(options, level, "zstd") for level in (0, 5)] == ["zstd", "gzip"]
    assert write_compression(options, 5, "zstd", changelog=True) == "snappy"
    assert written_formats(options) == {"orc", "avro", "parquet"}
    assert write_format({}, 0) == "parquet"


def test_a_malformed_level_map_names_its_key():
    with pytest.raises(InvalidOptionError, match=r"'file.format.per.level' .* 'avro' is not"):
        write_format({"file.format.per.level": "avro"}, 0)
