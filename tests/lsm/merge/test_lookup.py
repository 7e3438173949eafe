"""LevelLookup against Java's LookupLevels / LookupUtils, with files held in memory."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
from pypaimon.manifest.schema.data_file_meta import DataFileMeta
from pypaimon.schema.data_types import AtomicType, DataField
from pypaimon.table.row.generic_row import GenericRow

from dagster_paimon.io.kv import LEVEL, POSITION
from dagster_paimon.lsm.merge.lookup import FILE, KEY_ID, LevelLookup
from tests.lsm import merge_model as m
from tests.lsm.files import data_file

VALUES = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("v", pa.int32())])
KV = m.kv_schema_of(VALUES, ["k"])
KEYS = ["_KEY_k"]


def kv(key: int, seq: int, v: int | None, kind: int = 0) -> dict:
    """A KV record of the (k, v) table."""
    return {"_KEY_k": key, m.SEQ: seq, m.KIND: kind, "k": key, "v": v}


class MemoryFile:
    """A data file in memory: its records in key order (position = index) minus deleted rows."""

    def __init__(self, records: list[dict], schema: pa.Schema, keys: Sequence[str], deleted=()):
        self.table = pa.Table.from_pylist(records, schema=schema)
        self.key_columns = list(keys)
        self.live = np.array([i for i in range(len(records)) if i not in set(deleted)], np.int64)

    def keys(self) -> pa.Table:
        """Key columns and _POSITION of the live rows, in key order."""
        table = self.table.select(self.key_columns)
        table = table.append_column(POSITION, pa.array(np.arange(self.table.num_rows), pa.int64()))
        return table.take(pa.array(self.live))

    def rows(self, positions: np.ndarray) -> pa.Table:
        """The records at `positions`, in that order."""
        return self.table.take(pa.array(positions))


class Opener:
    """Opens MemoryFiles by file name, a fresh object each time; counts opens and live objects."""

    def __init__(
        self,
        files: dict[str, list[dict]],
        deleted: dict[str, Sequence[int]] | None = None,
        schema: pa.Schema = KV,
        keys: Sequence[str] = tuple(KEYS),
    ):
        self.files, self.deleted = files, deleted or {}
        self.schema, self.keys = schema, keys
        self.opened: list[str] = []
        self.alive: weakref.WeakSet[MemoryFile] = weakref.WeakSet()

    def __call__(self, meta: DataFileMeta) -> MemoryFile:
        self.opened.append(meta.file_name)
        opened = MemoryFile(
            self.files[meta.file_name], self.schema, self.keys, self.deleted.get(meta.file_name, ())
        )
        self.alive.add(opened)
        return opened


def meta(name: str, level: int, records: list[dict]) -> DataFileMeta:
    """A file's metadata with the min and max key of its (single-int-key) records."""
    keys = [r["_KEY_k"] for r in records]
    return data_file(name, level, min_key=min(keys), max_key=max(keys))


def probe(keys: Sequence[int], ids: Sequence[int] | None = None) -> pa.Table:
    """The keys to find, ascending, with their key ids (0.. unless given)."""
    ids = range(len(keys)) if ids is None else ids
    return pa.table({"_KEY_k": pa.array(keys, pa.int32()), KEY_ID: pa.array(list(ids), pa.int64())})


def located(found: pa.Table | None, *extra: str) -> dict[int, tuple]:
    """Per key id: (level, file, position, *extra columns)."""
    if found is None:
        return {}
    rows = found.to_pylist()
    assert len({r[KEY_ID] for r in rows}) == len(rows), "a key was found twice"
    return {r[KEY_ID]: (r[LEVEL], r[FILE], r[POSITION], *(r[c] for c in extra)) for r in rows}


def lookup_of(
    levels: dict[int, dict[str, list[dict]]],
    *,
    with_values: bool = False,
    deleted: dict[str, Sequence[int]] | None = None,
) -> tuple[LevelLookup, Opener]:
    """A LevelLookup over in-memory files, level -> file name -> records (files in key order)."""
    files = {name: records for level in levels.values() for name, records in level.items()}
    opener = Opener(files, deleted)
    spec = [
        (level, [meta(name, level, records) for name, records in named.items()])
        for level, named in sorted(levels.items())
    ]
    return LevelLookup(spec, KEYS, opener, with_values=with_values), opener


# Java's LookupLevelsTest.testMultiLevels: level 1 [1, 3, 5], level 2 [2, 5].
MULTI_LEVELS = {
    1: {"l1": [kv(1, 1, 11), kv(3, 2, 33), kv(5, 3, 5)]},
    2: {"l2": [kv(2, 4, 22), kv(5, 5, 55)]},
}


def test_the_lowest_level_holding_a_key_wins_and_absent_keys_are_not_returned() -> None:
    lookup, _ = lookup_of(MULTI_LEVELS, with_values=True)
    found = lookup.find(probe([1, 2, 4, 5]))
    assert located(found, m.SEQ, "v") == {
        0: (1, "l1", 0, 1, 11),  # only in level 1
        1: (2, "l2", 0, 4, 22),  # only in level 2
        3: (1, "l1", 2, 3, 5),  # in both: level 1's record
    }


def test_nothing_found_is_none() -> None:
    lookup, opener = lookup_of(MULTI_LEVELS)
    assert lookup.find(probe([4])) is None
    # 4 is inside both files' key ranges, so both were searched.
    assert sorted(opener.opened) == ["l1", "l2"]


def test_a_key_in_a_gap_of_a_level_is_searched_in_the_next_level() -> None:
    lookup, _ = lookup_of(
        {1: {"a": [kv(1, 5, 10), kv(9, 6, 90)]}, 3: {"b": [kv(4, 1, 40), kv(5, 2, 50)]}}
    )
    assert located(lookup.find(probe([4, 5, 9]))) == {
        0: (3, "b", 0),
        1: (3, "b", 1),
        2: (1, "a", 1),
    }


# Java's LookupLevelsTest.testMultiFiles: one level of four files.
MULTI_FILES = {
    1: {
        "a": [kv(1, 0, 11), kv(2, 0, 22)],
        "b": [kv(4, 0, 44), kv(5, 0, 55)],
        "c": [kv(7, 0, 77), kv(8, 0, 88)],
        "d": [kv(10, 0, 1010), kv(11, 0, 1111)],
    }
}


def test_many_files_of_a_level() -> None:
    lookup, _ = lookup_of(MULTI_FILES, with_values=True)
    keys = list(range(13))
    found = located(lookup.find(probe(keys)), "v")
    expected = {1: ("a", 0), 2: ("a", 1), 4: ("b", 0), 5: ("b", 1)}
    expected |= {7: ("c", 0), 8: ("c", 1), 10: ("d", 0), 11: ("d", 1)}
    assert found == {
        k: (1, name, position, int(str(k) * 2)) for k, (name, position) in expected.items()
    }


def test_files_outside_the_key_range_are_never_opened() -> None:
    lookup, opener = lookup_of(MULTI_FILES)
    assert located(lookup.find(probe([4, 5, 6]))) == {0: (1, "b", 0), 1: (1, "b", 1)}
    assert opener.opened == ["b"]


def test_a_level_whose_files_miss_the_range_is_not_opened() -> None:
    lookup, opener = lookup_of({1: {"a": [kv(1, 1, 1)]}, 2: {"b": [kv(7, 1, 7), kv(9, 1, 9)]}})
    assert located(lookup.find(probe([1]))) == {0: (1, "a", 0)}
    assert lookup.find(probe([3, 4])) is None
    assert opener.opened == ["a"]


def test_keys_found_in_a_lower_level_are_not_searched_for_above() -> None:
    """Once every key is found, higher levels are not even opened."""
    lookup, opener = lookup_of({1: {"a": [kv(2, 9, 1), kv(3, 9, 1)]}, 2: {"b": [kv(2, 1, 2)]}})
    assert located(lookup.find(probe([2, 3]))) == {0: (1, "a", 0), 1: (1, "a", 1)}
    assert opener.opened == ["a"]


def test_rows_a_deletion_vector_marks_are_not_found() -> None:
    """Level 1's rows of keys 2 and 3 are deleted: key 2 comes from level 2, key 3 from none."""
    lookup, _ = lookup_of(
        {
            1: {"a": [kv(1, 5, 10), kv(2, 6, 20), kv(3, 7, 30)]},
            2: {"b": [kv(2, 1, 200), kv(4, 2, 400)]},
        },
        with_values=True,
        deleted={"a": [1, 2]},
    )
    assert located(lookup.find(probe([1, 2, 3])), m.SEQ, "v") == {
        0: (1, "a", 0, 5, 10),
        1: (2, "b", 0, 1, 200),
    }


def test_with_values_takes_each_record_at_its_position_and_carries_the_key_id() -> None:
    """Non-contiguous key ids (as a merge passes them) stay with their records."""
    records = [kv(k, 100 + k, 10 * k, kind=2 if k == 4 else 0) for k in range(1, 7)]
    lookup, _ = lookup_of({2: {"f": records}}, with_values=True)
    found = lookup.find(probe([2, 4, 5], ids=[7, 3, 12]))
    assert found is not None
    by_id = sorted(found.to_pylist(), key=lambda r: r[KEY_ID])
    assert by_id == [
        {**kv(4, 104, 40, kind=2), KEY_ID: 3, LEVEL: 2, FILE: "f", POSITION: 3},
        {**kv(2, 102, 20), KEY_ID: 7, LEVEL: 2, FILE: "f", POSITION: 1},
        {**kv(5, 105, 50), KEY_ID: 12, LEVEL: 2, FILE: "f", POSITION: 4},
    ]
    assert found.schema.field(LEVEL).type == pa.int32()


def test_without_values_only_locations_are_returned() -> None:
    lookup, _ = lookup_of(MULTI_LEVELS)
    found = lookup.find(probe([3]))
    assert found is not None
    assert set(found.column_names) == {*KEYS, KEY_ID, POSITION, LEVEL, FILE}
    assert located(found) == {0: (1, "l1", 1)}


def test_ascending_finds_open_each_file_once_and_let_passed_files_go() -> None:
    lookup, opener = lookup_of(MULTI_FILES, with_values=True)
    values = {r["k"]: r["v"] for records in MULTI_FILES[1].values() for r in records}
    for low, name, position in [
        (1, "a", 0),
        (2, "a", 1),
        (4, "b", 0),
        (5, "b", 1),
        (8, "c", 1),
        (10, "d", 0),
    ]:
        assert located(lookup.find(probe([low])), "v") == {0: (1, name, position, values[low])}
        assert len(opener.alive) == 1, "files behind the keys must be let go"
    assert opener.opened == ["a", "b", "c", "d"]
    assert lookup.files_opened == 4


def test_a_slice_spanning_files_keeps_them_only_while_reached() -> None:
    lookup, opener = lookup_of(MULTI_FILES)
    assert located(lookup.find(probe([2, 4]))) == {0: (1, "a", 1), 1: (1, "b", 0)}
    assert opener.opened == ["a", "b"]
    assert located(lookup.find(probe([5, 8]))) == {0: (1, "b", 1), 1: (1, "c", 1)}
    assert opener.opened == ["a", "b", "c"]
    assert len(opener.alive) <= 2


def test_a_later_find_at_lower_keys_reopens_what_was_let_go() -> None:
    lookup, opener = lookup_of(MULTI_FILES, with_values=True)
    assert located(lookup.find(probe([1])), "v") == {0: (1, "a", 0, 11)}
    assert located(lookup.find(probe([7, 11])), "v") == {0: (1, "c", 0, 77), 1: (1, "d", 1, 1111)}
    assert len(opener.alive) == 2  # a was let go; c and d are held
    assert located(lookup.find(probe([2, 5])), "v") == {0: (1, "a", 1, 22), 1: (1, "b", 1, 55)}
    assert opener.opened == ["a", "c", "d", "a", "b"]


K1 = DataField(1073741823, "_KEY_k1", AtomicType("INT"))
K2 = DataField(1073741824, "_KEY_k2", AtomicType("STRING"))
VALUES2 = pa.schema(
    [
        pa.field("k1", pa.int32(), nullable=False),
        pa.field("k2", pa.string(), nullable=False),
        pa.field("v", pa.int32()),
    ]
)
KV2 = m.kv_schema_of(VALUES2, ["k1", "k2"])
KEYS2 = ["_KEY_k1", "_KEY_k2"]


def kv2(k1: int, k2: str, seq: int, v: int) -> dict:
    """A KV record of the (k1, k2, v) table."""
    return {"_KEY_k1": k1, "_KEY_k2": k2, m.SEQ: seq, m.KIND: 0, "k1": k1, "k2": k2, "v": v}


def meta2(name: str, level: int, records: list[dict]) -> DataFileMeta:
    """A file's metadata with its composite min and max key."""
    first, last = records[0], records[-1]
    return replace(
        data_file(name, level),
        min_key=GenericRow([first["_KEY_k1"], first["_KEY_k2"]], [K1, K2]),
        max_key=GenericRow([last["_KEY_k1"], last["_KEY_k2"]], [K1, K2]),
        row_count=len(records),
    )


def test_composite_keys_compare_column_by_column() -> None:
    files = {
        "a": [kv2(1, "a", 1, 1), kv2(1, "c", 2, 2)],
        "b": [kv2(1, "d", 3, 3), kv2(2, "a", 4, 4)],
        "c": [kv2(3, "a", 5, 5)],
        "up": [kv2(1, "b", 6, 6), kv2(1, "c", 7, 70), kv2(2, "a", 8, 80)],
    }
    opener = Opener(files, schema=KV2, keys=KEYS2)
    levels = [
        (1, [meta2(n, 1, files[n]) for n in ("a", "b", "c")]),
        (2, [meta2("up", 2, files["up"])]),
    ]
    lookup = LevelLookup(levels, KEYS2, opener, with_values=True)
    keys = pa.table(
        {
            "_KEY_k1": pa.array([1, 1, 1, 2], pa.int32()),
            "_KEY_k2": ["a", "b", "c", "a"],
            KEY_ID: pa.array([0, 1, 2, 3], pa.int64()),
        }
    )
    found = lookup.find(keys)
    assert located(found, "v") == {
        0: (1, "a", 0, 1),
        1: (2, "up", 0, 6),  # (1, "b") is between a's keys, only in level 2
        2: (1, "a", 1, 2),
        3: (1, "b", 1, 4),
    }
    # File c ((3, "a")) is beyond the slice's last key (2, "a").
    assert "c" not in opener.opened
    # (1, "z") is after file a's max (1, "c") and before (2, "a"): only b and up can hold it.
    opener.opened.clear()
    last = pa.table(
        {
            "_KEY_k1": pa.array([1], pa.int32()),
            "_KEY_k2": ["z"],
            KEY_ID: pa.array([0], pa.int64()),
        }
    )
    assert lookup.find(last) is None
    assert sorted(opener.opened) == []  # b and up are still open from the previous find
    assert lookup.files_opened == 3
