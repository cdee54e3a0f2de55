"""The course's one model of a query's checkpoint, as Spark 4.2 writes it: how to find one, and
what each part holds. The runner, the checkpoint doctor (``infra.checkpoint_health``), the
inspector (``teaching.inspect_checkpoint``) and the lessons read checkpoints through it.

A query's checkpoint folder holds:

- ``metadata``: the query id, one JSON object (``{"id":"..."}``), written when the query first
  starts there and the same across restarts;
- ``offsets/<batch>`` (OffsetSeqLog), written BEFORE the batch runs: the batch's settings (its
  watermark and time, the confs a restart keeps), then one line per source, its end offset as
  JSON ("-" for a source with no offset yet);
- ``commits/<batch>`` (CommitLog), written AFTER the sink took the batch. A restart resumes
  after the last commit;
- ``sources/<i>/``: a source's own log. A file source (FileStreamSourceLog) logs the files of
  each batch, one JSON line each (``{"path": URI, "timestamp": ..., "batchId": N}``), and every
  tenth entry, ``<batch>.compact``, repeats the entries before it; a Kafka source keeps only its
  starting offsets there (``sources/<i>/0``, a NUL byte before the version line);
- ``state/<operator>/<partition>/``: a stateful operator's state, one version per batch
  (``<version>.delta`` and ``.snapshot``; RocksDB ``.changelog`` and ``.zip``), the operator's
  own metadata in ``state/<operator>/_metadata/``.

A file sink keeps a log of its own in its output folder, ``_spark_metadata/`` (FileStreamSinkLog):
the files each batch wrote, compacted like a file source's log.

Every log (HDFSMetadataLog) is one file per batch named by its id; ``.<batch>.crc`` checksums and
``.<batch>.<...>.tmp`` files being written are not entries. Each entry starts with the log's
version line ("v1"). These are Spark's internal formats, read here to show and check what a
restart will find. The one write is :func:`forget_last_commit` (lesson 10's crash simulation).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from common import paths

METADATA = "metadata"
OFFSETS = "offsets"
COMMITS = "commits"
SOURCES = "sources"
STATE = "state"
LOGS = (OFFSETS, COMMITS, SOURCES)  # the folders only a query's checkpoint has
SINK_LOG = "_spark_metadata"  # a file sink's log, in its output folder
COMPACT = ".compact"
VERSION_LINE = re.compile(r"v(\d+)")  # a log entry's first line
STATE_STORE_METADATA = "_metadata"  # state/<operator>/_metadata/metadata: not a query's


class Unreadable(Exception):
    """A checkpoint (or sink) file that cannot be read as Spark wrote it; the message names the
    file and says why."""


# --- finding query checkpoints ----------------------------------------------------------------


def is_query_checkpoint(folder: Path) -> bool:
    """A folder Spark made for one query: a ``metadata`` file or an ``offsets/``, ``commits/`` or
    ``sources/`` folder (so one with a part missing still counts)."""
    folder = Path(folder)
    return marks_a_query(
        folder.name,
        folders=[log for log in LOGS if (folder / log).is_dir()],
        files=[METADATA] if (folder / METADATA).is_file() else [],
    )


def marks_a_query(name: str, folders, files) -> bool:
    """The rule of :func:`is_query_checkpoint`, on a folder's name and the names of its folders and
    files (a state store's ``_metadata/metadata`` is not a query's)."""
    return name != STATE_STORE_METADATA and (METADATA in files or bool(set(LOGS) & set(folders)))


def find(root: Path) -> list[Path]:
    """Every query checkpoint at or under ``root``, sorted: ``root`` itself when it is one, else
    each one below it (a query's own folders, state/ and the logs, hold no other query). Empty
    for a remote or missing ``root``."""
    root = Path(root)
    if paths.is_remote(root) or not root.is_dir():
        return []
    found = []
    for folder, subfolders, files in os.walk(root):
        if marks_a_query(Path(folder).name, subfolders, files):
            found.append(Path(folder))
            subfolders.clear()
    return sorted(found)


def checkpoint_of(path: Path) -> Path | None:
    """The query checkpoint ``path`` is or lies in (the nearest), or None."""
    path = Path(path)
    return next((folder for folder in (path, *path.parents) if is_query_checkpoint(folder)), None)


def name_in_checkpoint(path: Path) -> str:
    """A file's name below its query checkpoint (``offsets/3``, ``sources/0/1``), else its folder
    and name (``_delta_log/00000000000000000002.json``): what a learner finds in the folder."""
    checkpoint = checkpoint_of(Path(path).parent)
    if checkpoint is not None:
        return Path(path).relative_to(checkpoint).as_posix()
    return "/".join(Path(path).parts[-2:])


# --- reading a file, or saying why not --------------------------------------------------------


def read_lines(file: Path) -> list[str]:
    """A small text file's lines; Unreadable when it cannot be read as text. (Read as text, "\\r\\n"
    and "\\r" end a line too, as for Spark's readers.)"""
    try:
        lines = Path(file).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as error:
        why = type(error).__name__
        raise Unreadable(f"{name_in_checkpoint(file)} unreadable ({why})") from None
    return lines[:-1] if lines[-1] == "" else lines


def parse_json(text: str, file: Path):
    """One JSON line of ``file``; Unreadable when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        why = "not the JSON Spark writes"
        raise Unreadable(f"{name_in_checkpoint(file)} unreadable ({why})") from None


# --- metadata: the query id -------------------------------------------------------------------


def query_id(checkpoint: Path) -> str | None:
    """The query id in ``metadata``; None when there is no ``metadata`` (Unreadable when it holds
    no id)."""
    metadata = Path(checkpoint) / METADATA
    if not metadata.exists():
        return None
    lines = read_lines(metadata)
    found = parse_json(lines[0], metadata) if lines else None
    if not isinstance(found, dict) or not isinstance(found.get("id"), str):
        raise Unreadable(f"{name_in_checkpoint(metadata)} unreadable (no query id)")
    return found["id"]


# --- the logs: offsets/, commits/, sources/<i>/, a file sink's _spark_metadata/ ----------------


def entries(log: Path) -> dict[int, Path]:
    """A log's entries by batch id, in order: the files named ``N`` (or, in a log of files,
    ``N.compact``)."""
    log = Path(log)
    if not log.is_dir():
        return {}
    found = {}
    for file in log.iterdir():
        name = file.name.removesuffix(COMPACT)
        if name.isdigit() and file.is_file():
            found[int(name)] = file
    return dict(sorted(found.items()))


def batch_ids(log: Path) -> list[int]:
    """The batch ids a log holds (``checkpoint / "offsets"``: planned; ``commits``: committed)."""
    return list(entries(log))


def last_commit(checkpoint: Path) -> int | None:
    """The id of the last micro-batch the sink committed, or None."""
    committed = batch_ids(Path(checkpoint) / COMMITS)
    return committed[-1] if committed else None


def log_version(file: Path) -> int | None:
    """The version of a log entry ("v1" -> 1; Kafka's NUL byte before it skipped), or None."""
    first = Path(file).read_bytes().removeprefix(b"\x00").split(b"\n", 1)[0]
    match = VERSION_LINE.fullmatch(first.decode("utf-8", errors="replace"))
    return int(match.group(1)) if match else None


def entry_lines(file: Path) -> list[str]:
    """A log entry's lines after its version line; Unreadable when it has none."""
    lines = read_lines(file)
    if not lines or not VERSION_LINE.fullmatch(lines[0]):
        raise Unreadable(
            f"{name_in_checkpoint(file)} unreadable (no version line: cut short or empty)"
        )
    return lines[1:]


@dataclass(frozen=True)
class Offsets:
    """One ``offsets/<batch>`` entry: the batch's settings (``batchWatermarkMs``,
    ``batchTimestampMs``, ``conf``) and one line per source (its offset as JSON, or "-")."""

    settings: dict
    sources: list[str]


def read_offsets(entry: Path) -> Offsets:
    """An ``offsets/<batch>`` entry; Unreadable when it is not whole."""
    lines = entry_lines(entry)
    if not lines:
        raise Unreadable(f"{name_in_checkpoint(entry)} unreadable (no settings line: cut short)")
    settings = parse_json(lines[0], entry)
    if not isinstance(settings, dict):
        raise Unreadable(
            f"{name_in_checkpoint(entry)} unreadable (its settings line is not an object)"
        )
    return Offsets(settings, lines[1:])


def file_source_offset(line: str) -> int | None:
    """A file source's offset, ``{"logOffset": N}``: N, the last entry of its log the batch read.
    None for another source's (Kafka's, Delta's, a rate's ...) or "-"."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or set(value) != {"logOffset"}:
        return None
    return value["logOffset"] if isinstance(value["logOffset"], int) else None


def source_logs(checkpoint: Path) -> list[Path]:
    """Every source's own log: ``sources/0``, ``sources/1``, ..."""
    folder = Path(checkpoint) / SOURCES
    if not folder.is_dir():
        return []
    return sorted(
        (log for log in folder.iterdir() if log.is_dir() and log.name.isdigit()),
        key=lambda log: int(log.name),
    )


def is_file_source_log(log: Path, source_lines: list[str]) -> bool:
    """Whether ``sources/<i>`` is a file source's log of files (else a Kafka or rate source's
    starting offsets). An offsets entry's ``source_lines`` say it ({"logOffset": N} is a file
    source's); without one, the first byte does (Kafka's log starts with a NUL byte)."""
    index = int(log.name)
    if index < len(source_lines) and source_lines[index] != "-":
        return file_source_offset(source_lines[index]) is not None
    first = entries(log)
    if not first:
        return True
    with open(next(iter(first.values())), "rb") as file:
        return file.read(1) != b"\x00"


def file_records(entry: Path) -> list[dict]:
    """The lines of one entry of a log of files (a file source's or a file sink's), each naming a
    file by URI ("path"); Unreadable when one does not."""
    records = [parse_json(text, entry) for text in entry_lines(entry)]
    if not all(isinstance(record, dict) and "path" in record for record in records):
        raise Unreadable(f"{name_in_checkpoint(entry)} unreadable (an entry without a path)")
    return records


def logged_files(log: Path) -> dict[int, list[str]]:
    """{batch id: the URIs of the files it added} from a log of files: a file source's
    ``sources/<i>/`` or a file sink's ``_spark_metadata/``. A ``.compact`` entry repeats the
    batches before it: a source's lines carry their batch id, a sink's do not (they count under
    the compact entry's id). A sink's "delete" lines are left out."""
    by_batch: dict[int, list[str]] = {}
    for batch, entry in entries(log).items():
        for record in file_records(entry):
            if record.get("action") == "delete":
                continue
            uris = by_batch.setdefault(record.get("batchId", batch), [])
            if record["path"] not in uris:
                uris.append(record["path"])
    return dict(sorted(by_batch.items()))


def file_name(uri: str) -> str:
    """A file's name from the URI a log holds ("file:///.../part-a.json" -> "part-a.json")."""
    return PurePosixPath(unquote(urlparse(uri).path)).name


def local_path(uri: str) -> PurePosixPath | None:
    """The local path of a ``file:`` URI a log holds; None for another file system's."""
    parsed = urlparse(uri)
    return PurePosixPath(unquote(parsed.path)) if parsed.scheme in ("", "file") else None


def newest_offsets(checkpoint: Path) -> Offsets | None:
    """The newest ``offsets/`` entry that reads whole, or None."""
    for file in reversed(entries(Path(checkpoint) / OFFSETS).values()):
        try:
            return read_offsets(file)
        except Unreadable:
            continue
    return None


def source_files(checkpoint: Path, *, committed_only: bool = False) -> set[str]:
    """The names of the files a query's file sources have read, from their logs.

    A batch's files are logged when it is planned, before it runs. With ``committed_only``, only
    the batches the sink committed count: a planned batch that a stop or crash cut off runs again
    with the same files on the next start (a replay, not a second read). The last committed
    batch's offsets entry says how far into each source's log it read: usually its own batch id,
    but a run that starts on a log entry written before a stop reads that entry and the next in
    its first batch.
    """
    checkpoint = Path(checkpoint)
    through = last_commit(checkpoint) if committed_only else None
    if committed_only and through is None:
        return set()
    read_to = {}
    if through is not None:
        try:
            read_to = dict(enumerate(read_offsets(checkpoint / OFFSETS / str(through)).sources))
        except Unreadable:
            pass  # then the batch id is the limit
    newest = newest_offsets(checkpoint)
    names = set()
    for log in source_logs(checkpoint):
        if not is_file_source_log(log, newest.sources if newest else []):
            continue
        limit = file_source_offset(read_to.get(int(log.name), "-"))
        limit = through if limit is None else limit
        for batch, uris in logged_files(log).items():
            if limit is None or batch <= limit:
                names.update(file_name(uri) for uri in uris)
    return names


# --- state/ -------------------------------------------------------------------------------------


def state_operators(checkpoint: Path) -> list[int]:
    """The ids of the stateful operators with a folder in ``state/`` (none: a stateless query)."""
    folder = Path(checkpoint) / STATE
    if not folder.is_dir():
        return []
    return sorted(int(path.name) for path in folder.iterdir() if path.name.isdigit())


def state_files(checkpoint: Path, operator: int = 0, partition: int = 0) -> list[str]:
    """The files one state partition keeps, ``state/<operator>/<partition>/``, checksums left out,
    in version order: '1.delta' (HDFS-backed), '1.zip' (a RocksDB snapshot), '1.changelog'
    (RocksDB's changelog)."""
    folder = Path(checkpoint) / STATE / str(operator) / str(partition)
    names = [
        path.name for path in folder.glob("*") if path.is_file() and not path.name.endswith(".crc")
    ]

    def order(name: str):
        stem = name.split(".")[0].split("_")[0]
        return (int(stem), name) if stem.isdigit() else (1 << 62, name)

    return sorted(names, key=order)


# --- what a run resumes -------------------------------------------------------------------------


def describe(root: Path, found: list[Path] | None = None) -> str:
    """One line: what a run of the lesson will resume from, so a second run says so. ``found``:
    the query checkpoints under ``root`` when the caller has just looked (:func:`find`)."""
    if paths.is_remote(root):
        return (
            f"Checkpoints in {paths.uri(root)} (remote storage, not inspected from Python): a "
            "query resumes from its checkpoint there if it has one; --reset deletes them."
        )
    found = find(root) if found is None else found
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
        (Path(checkpoint) / COMMITS / name).unlink(missing_ok=True)
    return last
