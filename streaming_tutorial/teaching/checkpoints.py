"""What a query's checkpoint folder holds, read for the learner (never written).

A checkpoint folder has ``offsets/`` (the input range of each micro-batch, written
before the batch runs), ``commits/`` (one file per batch the sink finished), and,
for stateful queries, ``state/``; a file source also logs the files it read, under
``sources/`` (``source_files``). A restart resumes after the last commit.
The one exception to "read only": ``forget_last_commit``, lesson 10's crash simulation.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from common import paths, storage
from infra import checkpoint_health


def batch_ids(folder: Path) -> list[int]:
    """The batch ids logged in ``offsets/`` or ``commits/`` (files named 0, 1, 2, ...)."""
    if not folder.is_dir():
        return []
    return sorted(int(path.name) for path in folder.iterdir() if path.name.isdigit())


def last_commit(checkpoint: Path) -> int | None:
    """The id of the last micro-batch the sink committed, or None."""
    ids = batch_ids(checkpoint / "commits")
    return ids[-1] if ids else None


def query_checkpoints(root: Path) -> list[Path]:
    """Every query checkpoint under ``root`` (folders with an ``offsets/`` log), sorted."""
    if not root.is_dir():
        return []
    return sorted(offsets.parent for offsets in root.rglob("offsets") if offsets.is_dir())


def describe(root: Path) -> str:
    """One line: what a run of the lesson will resume from, so a second run says so."""
    if paths.is_remote(root):
        return storage.describe_remote(root)
    found = query_checkpoints(root)
    if not found:
        return (
            f"Checkpoints: none yet in {paths.display(root)}, "
            "so every query starts from the beginning."
        )
    parts = []
    for checkpoint in found:
        name = checkpoint.relative_to(root).as_posix() if checkpoint != root else root.name
        last = last_commit(checkpoint)
        parts.append(
            f"{name} after batch {last}" if last is not None else f"{name} (no batch committed)"
        )
    return f"Checkpoints in {paths.display(root)}: resuming {', '.join(parts)}."


def forget_last_commit(checkpoint: Path) -> int | None:
    """Delete the last commit of a query's checkpoint; its batch id, or None when there is none.

    What a crash after the sink wrote but before Spark recorded the batch as done leaves
    behind: the next start runs that batch again, with the same id and the same input.
    """
    last = last_commit(checkpoint)
    for name in (str(last), f".{last}.crc") if last is not None else ():
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    return last


def source_files(checkpoint: Path, *, committed_only: bool = False) -> set[str]:
    """The names of the files a query's file source has read, from its checkpoint.

    The file source logs the files of each micro-batch under ``sources/<source>/<batch>``
    (every tenth log also repeats the ones before it, as ``<batch>.compact``): a version
    line ("v1"), then one JSON object per file, whose "path" is a URI. It is an internal
    format, read here only to show the learner what the checkpoint remembers.

    A batch's files are logged when it is planned, before it runs. With ``committed_only``,
    only the batches the sink committed count: a planned batch that a stop or crash cut off
    runs again with the same files on the next start (a replay, not a second read). The last
    committed batch's offsets entry says how far into each source's log it read: usually its
    own batch id, but a run that starts on a log entry written before a stop reads that entry
    and the next in its first batch.
    """
    through = last_commit(checkpoint) if committed_only else None
    if committed_only and through is None:
        return set()
    read_to = log_offsets(checkpoint / "offsets" / str(through)) if committed_only else {}
    names = set()
    for log in (checkpoint / "sources").glob("*/*"):
        if log.name.startswith("."):  # .crc checksums, files being written
            continue
        limit = read_to.get(log.parent.name, through)
        if limit is not None and int(log.name.removesuffix(".compact")) > limit:
            continue
        for line in log.read_text(encoding="utf-8").splitlines():
            if line.startswith("{"):
                names.add(PurePosixPath(unquote(urlparse(json.loads(line)["path"]).path)).name)
    return names


def log_offsets(offsets_entry: Path) -> dict[str, int]:
    """{source index: the file source's log offset, {"logOffset": N}} from one
    ``offsets/<batch>`` entry, read by the checkpoint model (infra.checkpoint_health). Empty
    when the entry is missing or not whole."""
    if not offsets_entry.is_file():
        return {}
    lines = checkpoint_health.newest_source_lines({0: offsets_entry})
    return {
        str(index): json.loads(line)["logOffset"]
        for index, line in enumerate(lines)
        if checkpoint_health.is_file_source_offset(line)
    }
