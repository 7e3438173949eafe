"""Tag success files (`tag.create-success-file`): Paimon 2.0's SuccessFileTagCallback.

With the option on, creating a tag also writes `tag/tag-success-file/<name>_SUCCESS`, Java's
pretty-printed SuccessFile JSON `{"creationTime", "modificationTime"}` (epoch milliseconds); one
already there keeps its creationTime. Deleting a tag through TagManager.deleteTag (delete-tag,
expiry by time retained, auto tags beyond tag.num-retained-max) deletes its success file; a
rollback, and TagBatchCreation deleting a whole snapshot's tags at once, leave it, as in Java.

The success file is written after the tag file, as Java's callback runs after the tag is
committed: a failure or kill in between leaves a tag without its success file (never a success
file naming a missing tag), which a retry of the creation finishes. Deletion removes the success
file first for the same reason.
"""

from __future__ import annotations

import json

from dagster_paimon.errors import CorruptFileError
from dagster_paimon.snapshot.metadata import TableMetadata
from dagster_paimon.storage.snapshots import replace_file

SUCCESS_DIR = "tag-success-file"
SUCCESS_SUFFIX = "_SUCCESS"


def success_path(meta: TableMetadata, name: str) -> str:
    """SuccessFileTagCallback.tagSuccessFilePath: beside the tag files of the main branch."""
    return f"{meta.main.dir('tag')}/{SUCCESS_DIR}/{name}{SUCCESS_SUFFIX}"


def success_json(creation_ms: int, modification_ms: int) -> str:
    """SuccessFile.toJson: Jackson's pretty printer, fields in declaration order."""
    return f'{{\n  "creationTime" : {creation_ms},\n  "modificationTime" : {modification_ms}\n}}'


def notify_creation(meta: TableMetadata, name: str, now_ms: int) -> None:
    """notifyCreation: a new success file, or the existing one with modificationTime `now_ms`."""
    path = success_path(meta, name)
    try:
        text = meta.file_io.read_file_utf8(path)
    except FileNotFoundError:
        created = now_ms
    else:
        try:
            # Jackson reads an absent creationTime as 0 (ignoreUnknown, primitive long)
            created = int(json.loads(text).get("creationTime", 0))
        except (ValueError, TypeError, AttributeError) as e:
            raise CorruptFileError(f"success file {path} cannot be decoded: {e}") from e
    replace_file(meta.file_io, path, success_json(created, now_ms))


def success_file_exists(meta: TableMetadata, name: str) -> bool:
    """Whether the tag's creation finished (its success file is there)."""
    return bool(meta.file_io.exists(success_path(meta, name)))


def finish_creation(meta: TableMetadata, name: str, now_ms: int) -> bool:
    """Write the success file of a tag an interrupted creation left without one; True if so."""
    if success_file_exists(meta, name):
        return False
    notify_creation(meta, name, now_ms)
    return True


def notify_deletion(meta: TableMetadata, name: str) -> None:
    """notifyDeletion: remove the tag's success file; none there is fine."""
    meta.files.delete_files([success_path(meta, name)])
