"""Avro codecs: the one a `file.compression` names, its level, and each one's block bytes."""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import cramjam
from backports import zstd

from dagster_paimon.errors import InvalidOptionError
from dagster_paimon.options import FILE_FORMAT

FILE_COMPRESSION = "file.compression"
ZSTANDARD_DEFAULT_LEVEL = 3  # Avro's CodecFactory.DEFAULT_ZSTANDARD_LEVEL, for 'zstandard'

CODEC_NAMES = ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")


def avro_codec(compression: str) -> str:
    """The Avro codec Paimon's Java writer uses for a `file.compression` value."""
    name = str(compression).lower()
    if name == "zstd":
        return "zstandard"
    if name == "none":
        return "null"
    if name in CODEC_NAMES:
        return name
    raise InvalidOptionError(
        f"table option '{FILE_COMPRESSION}' is {compression!r} and '{FILE_FORMAT}' is 'avro': "
        f"Avro data files are compressed with zstd, none or one of {list(CODEC_NAMES)}"
    )


def _snappy_compress(data: bytes, level: int | None) -> bytes:
    """Avro's snappy block: raw snappy, then the CRC32 of the data, big-endian."""
    return bytes(cramjam.snappy.compress_raw(data)) + zlib.crc32(data).to_bytes(4, "big")


def _deflate_compress(data: bytes, level: int | None) -> bytes:
    """Avro's deflate block: raw deflate (no zlib header) at Java's default level."""
    packer = zlib.compressobj(-1 if level is None else level, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


Compress = Callable[[bytes, int | None], bytes]
COMPRESS: dict[str, Compress] = {
    "null": lambda data, level: data,
    "deflate": _deflate_compress,
    "snappy": _snappy_compress,
    "bzip2": lambda data, level: bz2.compress(data),
    "xz": lambda data, level: lzma.compress(data, preset=6),
    "zstandard": lambda data, level: zstd.compress(data, level=level),
}
DECOMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "null": lambda data: data,
    "deflate": lambda data: zlib.decompress(data, -15),
    "snappy": lambda data: bytes(cramjam.snappy.decompress_raw(data[:-4])),
    "bzip2": bz2.decompress,
    "xz": lzma.decompress,
    "zstandard": zstd.decompress,
}


def avro_level(compression: str, options: Mapping[str, Any]) -> int | None:
    """The zstandard level: file.compression.zstd-level for zstd, Avro's default for
    'zstandard' (as Java's CodecFactory.fromString)."""
    if str(compression).lower() == "zstd":
        return int(options.get("compression_level", 1))
    return ZSTANDARD_DEFAULT_LEVEL if str(compression).lower() == "zstandard" else None
