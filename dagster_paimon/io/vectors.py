"""Deletion vectors in Paimon's byte format: 32-bit and 64-bit roaring bitmaps with CRC.

Java's BitmapDeletionVector writes [length BE][magic BE][portable 32-bit bitmap][CRC32 BE] and
records `length` (magic + bitmap) in the index; Bitmap64DeletionVector writes [length BE]
[magic LE][portable 64-bit bitmap][CRC32 BE] and records the whole blob's size. Readers tell
them apart by the magic number.
"""

from __future__ import annotations

import array
import struct
import zlib

import numpy as np
from pyroaring import BitMap, BitMap64

from dagster_paimon.errors import CorruptMetadataError, InvalidOptionError

MAGIC_32 = 1581511376
MAGIC_64 = 1681511377
MAX_32_POSITION = 2**31 - 1

DeletionVector = BitMap | BitMap64


def new_vector(bitmap64: bool) -> DeletionVector:
    """An empty vector of the table's kind (deletion-vectors.bitmap64)."""
    return BitMap64() if bitmap64 else BitMap()


def add_positions(vector: DeletionVector, positions: np.ndarray) -> int:
    """Mark row positions deleted; returns how many were not deleted before."""
    if len(positions) == 0:
        return 0
    if isinstance(vector, BitMap) and int(positions.max()) > MAX_32_POSITION:
        raise InvalidOptionError("row position beyond 2^31-1 needs deletion-vectors.bitmap64")
    wide = isinstance(vector, BitMap64)
    values = array.array("Q" if wide else "I")
    values.frombytes(positions.astype(np.uint64 if wide else np.uint32).tobytes())
    before = len(vector)
    vector.update(values)
    return len(vector) - before


def positions_of(vector: DeletionVector) -> np.ndarray:
    """The deleted row positions, ascending, as int64."""
    return np.asarray(vector.to_array(), dtype=np.int64)


def serialize(vector: DeletionVector) -> tuple[bytes, int]:
    """The bytes Java's serializeTo writes, and the length its DeletionVectorMeta records."""
    vector.run_optimize()
    if isinstance(vector, BitMap64):
        data = struct.pack("<i", MAGIC_64) + vector.serialize()
        blob = struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data))
        return blob, len(blob)
    data = struct.pack(">i", MAGIC_32) + vector.serialize()
    return struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data)), len(data)


def deserialize(blob: bytes, recorded_length: int | None = None) -> DeletionVector:
    """A vector from the bytes at its offset in an index file, in either format."""
    if len(blob) < 8:
        raise CorruptMetadataError("deletion vector is truncated")
    (length,) = struct.unpack_from(">i", blob, 0)
    data = blob[4 : 4 + length]
    if len(data) != length or len(blob) < 8 + length:
        raise CorruptMetadataError("deletion vector is truncated")
    (crc,) = struct.unpack_from(">I", blob, 4 + length)
    if zlib.crc32(data) != crc:
        raise CorruptMetadataError("deletion vector checksum does not match")
    kind: type[BitMap] | type[BitMap64]
    if struct.unpack_from(">i", data, 0)[0] == MAGIC_32:
        kind, size = BitMap, length
    elif struct.unpack_from("<i", data, 0)[0] == MAGIC_64:
        kind, size = BitMap64, length + 8
    else:
        raise CorruptMetadataError("deletion vector has an unknown magic number")
    if recorded_length is not None and recorded_length != size:
        raise CorruptMetadataError(
            f"deletion vector size {size} does not match the index's {recorded_length}"
        )
    try:
        return kind.deserialize(data[4:])
    except (ValueError, IndexError) as e:
        raise CorruptMetadataError(f"deletion vector bitmap does not decode: {e}") from e
