"""Deletion vectors in Paimon's byte format, checked against the spec and pypaimon's reader."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from pypaimon.deletionvectors.deletion_vector import DeletionVector as PaimonDeletionVector
from pypaimon.table.source.deletion_file import DeletionFile
from pyroaring import BitMap, BitMap64

from dagster_paimon.errors import CorruptMetadataError, InvalidOptionError
from dagster_paimon.io.vectors import (
    MAGIC_32,
    MAGIC_64,
    MAX_32_POSITION,
    add_positions,
    deserialize,
    new_vector,
    positions_of,
    serialize,
)
from dagster_paimon.table import create_table
from tests.conftest import orders_spec

# Sparse values, a dense run (run container) and many values in one chunk (bitmap container).
POSITIONS_32 = np.array(
    [
        *[0, 1, 2, 7, 65_535, 65_536, 1_000_000, MAX_32_POSITION],
        *range(200_000, 200_100),
        *range(300_000, 310_000, 2),
    ],
    dtype=np.int64,
)
POSITIONS_64 = np.array(
    [0, 3, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 5, 2**40 + 17, 2**62 + 1], dtype=np.int64
)


def frame(data: bytes) -> bytes:
    """[length BE][data][CRC32 BE of data]: the envelope both formats share."""
    return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))


def vector_of(positions, bitmap64: bool = False):
    """A new vector holding the given positions."""
    vector = new_vector(bitmap64)
    add_positions(vector, np.asarray(positions, dtype=np.int64))
    return vector


# --- construction and positions --------------------------------------------------------------


def test_new_vector_kind_follows_bitmap64_flag():
    """bitmap64 picks BitMap64, otherwise the 32-bit BitMap; both start empty."""
    assert type(new_vector(False)) is BitMap
    assert type(new_vector(True)) is BitMap64
    assert len(new_vector(False)) == 0
    assert len(new_vector(True)) == 0


@pytest.mark.parametrize("bitmap64", [False, True])
def test_add_positions_counts_only_newly_deleted(bitmap64):
    """The return value counts distinct rows not deleted before; repeats add nothing."""
    vector = new_vector(bitmap64)
    assert add_positions(vector, np.array([5, 3, 5, 9], dtype=np.int64)) == 3
    assert add_positions(vector, np.array([3, 9], dtype=np.int64)) == 0
    assert add_positions(vector, np.array([9, 10, 11], dtype=np.int64)) == 2
    assert add_positions(vector, np.array([], dtype=np.int64)) == 0
    assert positions_of(vector).tolist() == [3, 5, 9, 10, 11]


@pytest.mark.parametrize("bitmap64", [False, True])
def test_add_positions_accepts_other_integer_dtypes(bitmap64):
    """int32 and uint64 arrays are taken as row positions too."""
    vector = new_vector(bitmap64)
    assert add_positions(vector, np.array([4, 2], dtype=np.int32)) == 2
    assert add_positions(vector, np.array([2, 8], dtype=np.uint64)) == 1
    assert positions_of(vector).tolist() == [2, 4, 8]


def test_positions_of_is_sorted_int64():
    """positions_of returns ascending int64, whatever order rows were deleted in."""
    vector = vector_of([9, 1, 2**31 - 1, 4], bitmap64=False)
    out = positions_of(vector)
    assert out.dtype == np.int64
    assert out.tolist() == [1, 4, 9, 2**31 - 1]
    wide = vector_of([2**40, 1], bitmap64=True)
    assert positions_of(wide).dtype == np.int64
    assert positions_of(wide).tolist() == [1, 2**40]
    assert positions_of(new_vector(False)).tolist() == []


def test_32_bit_accepts_max_position():
    """2^31-1 is the largest position Java's RoaringBitmap32 takes."""
    vector = new_vector(False)
    assert add_positions(vector, np.array([MAX_32_POSITION], dtype=np.int64)) == 1
    assert positions_of(vector).tolist() == [MAX_32_POSITION]


@pytest.mark.parametrize("position", [2**31, 2**32, 2**40])
def test_32_bit_refuses_positions_beyond_2_31(position):
    """A 32-bit vector rejects positions > 2^31-1 and is left unchanged."""
    vector = vector_of([1, 2])
    with pytest.raises(InvalidOptionError, match="bitmap64"):
        add_positions(vector, np.array([3, position], dtype=np.int64))
    assert positions_of(vector).tolist() == [1, 2]


def test_64_bit_accepts_positions_beyond_2_32():
    """A 64-bit vector keeps positions past 2^32 exactly."""
    vector = new_vector(True)
    assert add_positions(vector, POSITIONS_64) == len(POSITIONS_64)
    assert positions_of(vector).tolist() == sorted(POSITIONS_64.tolist())


# --- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("positions", "bitmap64"),
    [(POSITIONS_32, False), (POSITIONS_32, True), (POSITIONS_64, True), ([], False), ([], True)],
    ids=["32bit", "64bit-small", "64bit-wide", "32bit-empty", "64bit-empty"],
)
def test_round_trip(positions, bitmap64):
    """deserialize(serialize(v)) gives the same positions and kind, with the recorded length."""
    vector = vector_of(positions, bitmap64)
    blob, recorded = serialize(vector)
    back = deserialize(blob, recorded)
    assert type(back) is type(vector)
    assert positions_of(back).tolist() == sorted(set(np.asarray(positions).tolist()))
    assert deserialize(blob).to_array().tolist() == back.to_array().tolist()


def test_round_trip_ignores_trailing_bytes():
    """A vector read at its offset in a larger index file ignores what follows it."""
    first, first_len = serialize(vector_of([1, 2, 3]))
    second, second_len = serialize(vector_of([2**35], bitmap64=True))
    index = b"\x01" + first + second
    assert positions_of(deserialize(index[1:], first_len)).tolist() == [1, 2, 3]
    offset = 1 + len(first)
    assert positions_of(deserialize(index[offset:], second_len)).tolist() == [2**35]


# --- exact byte layout ------------------------------------------------------------------------


def test_32_bit_byte_layout():
    """[len BE][magic BE][portable bitmap][CRC32 BE of magic+bitmap]; records len."""
    blob, recorded = serialize(vector_of(POSITIONS_32))
    expected_bitmap = BitMap(POSITIONS_32.tolist())
    expected_bitmap.run_optimize()
    bitmap_bytes = expected_bitmap.serialize()

    (length,) = struct.unpack_from(">i", blob, 0)
    (magic,) = struct.unpack_from(">i", blob, 4)
    assert magic == MAGIC_32 == 1581511376
    assert length == 4 + len(bitmap_bytes)
    assert blob[8 : 4 + length] == bitmap_bytes
    (crc,) = struct.unpack_from(">I", blob, 4 + length)
    assert crc == zlib.crc32(blob[4 : 4 + length])
    assert len(blob) == 4 + length + 4
    assert recorded == length


def test_32_bit_bitmap_is_run_optimized():
    """A dense range is stored as a run container (cookie 12347), as Java's runOptimize does."""
    blob, recorded = serialize(vector_of(range(1000)))
    (cookie,) = struct.unpack_from("<H", blob, 8)
    assert cookie == 12347
    # magic 4 + cookie/count 4 + run bitset 1 + key/card 4 + run count 2 + one run 4
    assert recorded == 19
    assert len(blob) == 4 + 19 + 4


def test_32_bit_empty_layout():
    """An empty 32-bit vector is magic + the 8-byte empty portable bitmap."""
    blob, recorded = serialize(new_vector(False))
    assert blob == frame(struct.pack(">i", MAGIC_32) + bytes.fromhex("3a30000000000000"))
    assert recorded == 12


def test_64_bit_byte_layout():
    """[len BE][magic LE][count LE64, per bucket key LE32 + bitmap][CRC32 BE]; records size."""
    blob, recorded = serialize(vector_of(POSITIONS_64, bitmap64=True))
    (length,) = struct.unpack_from(">i", blob, 0)
    (magic,) = struct.unpack_from("<i", blob, 4)
    assert magic == MAGIC_64 == 1681511377
    assert len(blob) == 4 + length + 4
    assert recorded == len(blob) == length + 8
    (crc,) = struct.unpack_from(">I", blob, 4 + length)
    assert crc == zlib.crc32(blob[4 : 4 + length])

    # Parse the portable 64-bit bitmap by hand: buckets keyed by the high 32 bits.
    body = blob[8 : 4 + length]
    (count,) = struct.unpack_from("<q", body, 0)
    pos = 8
    decoded: list[int] = []
    keys: list[int] = []
    for _ in range(count):
        (key,) = struct.unpack_from("<i", body, pos)
        pos += 4
        low = BitMap.deserialize(body[pos:])
        low.run_optimize()
        size = len(low.serialize())
        expected_low = BitMap([p & 0xFFFFFFFF for p in POSITIONS_64.tolist() if p >> 32 == key])
        expected_low.run_optimize()
        assert body[pos : pos + size] == expected_low.serialize()
        pos += size
        keys.append(key)
        decoded.extend((key << 32) | low_pos for low_pos in low)
    assert pos == len(body)
    assert keys == sorted({p >> 32 for p in POSITIONS_64.tolist()})
    assert decoded == sorted(POSITIONS_64.tolist())

    expected = BitMap64(POSITIONS_64.tolist())
    expected.run_optimize()
    assert body == expected.serialize()


def test_64_bit_empty_layout():
    """An empty 64-bit vector is magic LE + a zero bucket count."""
    blob, recorded = serialize(new_vector(True))
    assert blob == frame(struct.pack("<i", MAGIC_64) + struct.pack("<q", 0))
    assert recorded == len(blob) == 20


def test_reads_java_style_sparse_64_bit_buckets():
    """Java writes empty bitmaps for missing high keys (0..max); those blobs read back."""
    empty = BitMap().serialize()
    body = struct.pack("<q", 3)
    body += struct.pack("<i", 0) + empty
    body += struct.pack("<i", 1) + BitMap([7]).serialize()
    body += struct.pack("<i", 2) + BitMap([5]).serialize()
    blob = frame(struct.pack("<i", MAGIC_64) + body)
    vector = deserialize(blob, len(blob))
    assert type(vector) is BitMap64
    assert positions_of(vector).tolist() == [2**32 + 7, 2**33 + 5]


# --- recorded length -------------------------------------------------------------------------


def test_recorded_length_semantics_differ_by_format():
    """32-bit records magic+bitmap size; 64-bit records the whole blob (length + 8)."""
    narrow, narrow_len = serialize(vector_of([1, 2, 3]))
    wide, wide_len = serialize(vector_of([1, 2, 3], bitmap64=True))
    assert narrow_len == len(narrow) - 8
    assert wide_len == len(wide)


@pytest.mark.parametrize("bitmap64", [False, True])
def test_recorded_length_mismatch_is_corrupt(bitmap64):
    """A length that disagrees with the index's record raises CorruptMetadataError."""
    blob, recorded = serialize(vector_of([1, 2, 3], bitmap64))
    for wrong in (recorded - 1, recorded + 1, recorded + 8 if not bitmap64 else recorded - 8):
        with pytest.raises(CorruptMetadataError, match="does not match the index"):
            deserialize(blob, wrong)


def test_32_bit_blob_size_is_not_accepted_as_recorded_length():
    """For 32-bit the whole blob size is the wrong record (the 64-bit rule does not apply)."""
    blob, _ = serialize(vector_of([4]))
    with pytest.raises(CorruptMetadataError):
        deserialize(blob, len(blob))


# --- corrupt input ---------------------------------------------------------------------------


@pytest.mark.parametrize("bitmap64", [False, True])
def test_bad_crc_is_corrupt(bitmap64):
    """A flipped bit in the bitmap or in the CRC raises CorruptMetadataError."""
    blob, recorded = serialize(vector_of(POSITIONS_32[:50], bitmap64))
    flipped = bytearray(blob)
    flipped[12] ^= 0x01
    with pytest.raises(CorruptMetadataError, match="checksum"):
        deserialize(bytes(flipped), recorded)
    bad_crc = bytearray(blob)
    bad_crc[-1] ^= 0xFF
    with pytest.raises(CorruptMetadataError, match="checksum"):
        deserialize(bytes(bad_crc), recorded)


@pytest.mark.parametrize("bitmap64", [False, True])
def test_truncated_is_corrupt(bitmap64):
    """Any proper prefix of a vector raises CorruptMetadataError."""
    blob, recorded = serialize(vector_of([1, 70_000, 2**20], bitmap64))
    for cut in range(len(blob)):
        with pytest.raises(CorruptMetadataError, match=r"truncated|checksum"):
            deserialize(blob[:cut], recorded)


def test_length_field_beyond_blob_is_corrupt():
    """A length header larger than the bytes present raises CorruptMetadataError."""
    blob, _ = serialize(vector_of([1]))
    bigger = struct.pack(">i", 10_000) + blob[4:]
    with pytest.raises(CorruptMetadataError, match="truncated"):
        deserialize(bigger)


def test_unknown_magic_is_corrupt():
    """A well-framed blob whose magic is neither format's raises CorruptMetadataError."""
    blob = frame(struct.pack(">i", 12345) + BitMap([1]).serialize())
    with pytest.raises(CorruptMetadataError, match="magic"):
        deserialize(blob)


def test_64_bit_magic_in_big_endian_is_unknown():
    """The 64-bit magic must be little-endian: written big-endian it is not recognized."""
    blob = frame(struct.pack(">i", MAGIC_64) + struct.pack("<q", 0))
    with pytest.raises(CorruptMetadataError, match="magic"):
        deserialize(blob)


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">i", MAGIC_32),
        struct.pack(">i", MAGIC_32) + b"\x01\x02\x03",
        struct.pack("<i", MAGIC_64) + b"\x05",
    ],
    ids=["32bit-no-bitmap", "32bit-garbage", "64bit-garbage"],
)
def test_undecodable_bitmap_with_valid_crc_is_corrupt(data):
    """Garbage bitmap bytes under a matching CRC are corrupt metadata too."""
    with pytest.raises(CorruptMetadataError):
        deserialize(frame(data))


# --- interop with pypaimon's reader ----------------------------------------------------------


def test_pypaimon_reader_reads_our_32_bit_vectors(warehouse):
    """pypaimon's DeletionVector.read decodes serialize() output at its offset in a file."""
    table = create_table(warehouse, orders_spec())
    first = vector_of(POSITIONS_32)
    second = vector_of([0, 5, 6, 7, 8, 1_000_001])
    first_blob, first_len = serialize(first)
    second_blob, second_len = serialize(second)
    path = f"{table.table_path.rstrip('/')}/index/index-interop-0"
    with table.file_io.new_output_stream(path) as out:
        out.write(b"\x01" + first_blob + second_blob)

    for vector, offset, length in (
        (first, 1, first_len),
        (second, 1 + len(first_blob), second_len),
    ):
        read = PaimonDeletionVector.read(
            table.file_io, DeletionFile(path, offset, length, len(vector))
        )
        expected = set(positions_of(vector).tolist())
        assert read.get_cardinality() == len(expected)
        for position in expected:
            assert read.is_deleted(position)
        probes = {p + 1 for p in expected} | {p - 1 for p in expected if p > 0} | {3, 4, 9}
        for position in probes - expected:
            if position <= MAX_32_POSITION:
                assert not read.is_deleted(position)


def test_pypaimon_reader_rejects_wrong_recorded_length(warehouse):
    """pypaimon agrees that a 32-bit vector's recorded length is magic + bitmap bytes."""
    table = create_table(warehouse, orders_spec())
    blob, length = serialize(vector_of([1, 2]))
    path = f"{table.table_path.rstrip('/')}/index/index-interop-1"
    with table.file_io.new_output_stream(path) as out:
        out.write(b"\x01" + blob)
    with pytest.raises(RuntimeError, match="Size not match"):
        PaimonDeletionVector.read(table.file_io, DeletionFile(path, 1, len(blob)))
    assert PaimonDeletionVector.read(table.file_io, DeletionFile(path, 1, length)).is_deleted(2)
