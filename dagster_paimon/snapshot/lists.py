"""Manifest lists of many snapshots, decoded only where they can name something new.

A commit that merges no manifests writes its base list as the previous snapshot's base list
followed by its delta list, record for record. Such a list names nothing its predecessor's
two lists did not; recognising it from the decompressed bytes avoids decoding the quadratic
number of records long histories repeat, which otherwise dominates expiry and orphan scans.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from io import BytesIO

import fastavro

from dagster_paimon.errors import CorruptFileError
from dagster_paimon.format.metadata import Snapshot
from dagster_paimon.snapshot.metadata import AVRO_ERRORS, TableMetadata, avro_records
from dagster_paimon.storage.pool import parallel_map

log = logging.getLogger(__name__)

CHUNK = 64
PROGRESS_EVERY = 1024

Manifests = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class ListedManifests:
    """One manifest list: its manifests (with sidecars), or None if the file is missing.

    A base list that repeats the previous snapshot's base + delta lists names nothing new;
    its manifests are left empty.
    """

    name: str
    manifests: Manifests | None


@dataclass(frozen=True)
class _Raw:
    """A list file's path, bytes, writer schema and decompressed record bytes."""

    path: str
    data: bytes
    schema: str
    payload: bytes


def _raw(meta: TableMetadata, name: str) -> _Raw | None:
    """Read one list file; None if it does not exist."""
    path = meta.manifest_path(name)
    try:
        with meta.file_io.new_input_stream(path) as stream:
            data = stream.read()
    except FileNotFoundError:
        return None
    try:
        blocks = fastavro.block_reader(BytesIO(data))
        schema = json.dumps(blocks.writer_schema, sort_keys=True)
        # fastavro's stub of Block omits bytes_, the BytesIO of the block's decompressed records
        payload = b"".join(block.bytes_.getvalue() for block in blocks)  # type: ignore[attr-defined]
        return _Raw(path, data, schema, payload)
    except AVRO_ERRORS as e:
        raise CorruptFileError(f"{path} is not a valid Avro file: {e}") from e


def _decode(raw: _Raw) -> Manifests:
    """(manifest name, its extra files) of every record."""
    records = avro_records(raw.data, raw.path)
    return tuple((r["_FILE_NAME"], tuple(r.get("_EXTRA_FILES") or ())) for r in records)


def snapshot_lists(
    meta: TableMetadata,
    snapshots: Sequence[Snapshot],
    lists_of: Callable[[Snapshot], list[str]],
) -> Iterator[tuple[Snapshot, list[ListedManifests]]]:
    """Each snapshot (in the given order) with its manifest lists as `lists_of` picks them.

    Files are fetched in parallel chunks; a base list that repeats the previous snapshot's
    base + delta (both yielded just before) is not decoded.
    """
    previous: tuple[_Raw | None, _Raw | None] = (None, None)
    for start in range(0, len(snapshots), CHUNK):
        if start and start % PROGRESS_EVERY == 0:
            log.info("read the manifest lists of %d/%d snapshots", start, len(snapshots))
        chunk = snapshots[start : start + CHUNK]
        names = [lists_of(s) for s in chunk]
        flat = sorted({n for group in names for n in group})
        raws = dict(zip(flat, parallel_map(lambda n: _raw(meta, n), flat), strict=True))
        for snapshot, group in zip(chunk, names, strict=True):
            listed = []
            for name in group:
                raw = raws[name]
                base, delta = previous
                repeats = (
                    name == snapshot.base_manifest_list
                    and raw is not None
                    and base is not None
                    and delta is not None
                    and raw.schema == base.schema == delta.schema
                    and raw.payload == base.payload + delta.payload
                )
                manifests = None if raw is None else () if repeats else _decode(raw)
                listed.append(ListedManifests(name, manifests))
            both = {snapshot.base_manifest_list, snapshot.delta_manifest_list} <= set(group)
            previous = (
                (raws[snapshot.base_manifest_list], raws[snapshot.delta_manifest_list])
                if both
                else (None, None)
            )
            yield snapshot, listed
