"""Is a query's checkpoint whole? What is damaged, and the safe way out (reads only).

A lesson calls :func:`diagnose_all` on its checkpoint folder before Spark starts (the runner
does, in ``lesson_session``) and stops with :func:`advice` when anything is damaged: Spark
itself either fails with a JVM trace or, worse, goes on silently and reads input again.
What Spark 4.2 does with each kind of damage unchecked, measured on lesson 03's real checkpoint
(the cases of tests/hardening/test_damaged_checkpoints.py) and lesson 11's events query:

- a log entry cut short, empty or not what Spark wrote: "Checksum error" (the entry no longer
  matches its ``.crc``), or, without a ``.crc``, a JSON error, "Incomplete log file" or
  MALFORMED_LOG_FILE. Spark reads the newest two ``offsets/`` entries, the newest commit, and
  every entry of a file source's log (``sources/<i>/``) since its last ``.compact``; a damaged
  older entry of ``offsets/`` or ``commits/`` is never read;
- ``metadata`` missing: STREAMING_CHECKPOINT_MISSING_METADATA_FILE. ``offsets/`` missing:
  "assertion failed", or with ``commits/`` missing too, every file is read again, silently.
  ``commits/`` missing: the newest batch runs again, silently. ``sources/`` missing: "batch N
  doesn't exist". A commit whose ``offsets/`` entry was removed: CONCURRENT_STREAM_LOG_UPDATE,
  which blames another run;
- a ``.crc`` out of step with an intact file: "Checksum error", although the file is fine;
- a course folder copied or moved elsewhere: a file source's log names its files by full
  path, and Spark stops with "Wrong basePath ... for the root path";
- a log written by another Spark version: INVALID_LOG_VERSION (UnsupportedLogVersion). Here
  that is simulated by the version line alone ("v99"): no real newer Spark wrote it;
- another query's checkpoint in this one's place: Spark does not check whose it is. Lesson 03's
  checkpoint in the place of lesson 11's file query stops with "Wrong basePath" (its file
  source's log names another folder's files); a checkpoint of a query with the same source
  would be resumed as this one's (not measured). The course recognises it by the query id in
  ``metadata``: the runner records which place each query id belongs to (:func:`remember`, in
  ``.runtime/``), so a checkpoint moved or copied into another query's place is named. A copy
  from another course folder, or one that predates the record, is not recognised.

Limits: a ``.crc`` is called stale only when the file it guards reads as a whole Spark log
(version line, JSON lines, the same number of sources as the entry before). A file cut exactly
at the end of a line can still read that way: then the advice to remove the ``.crc`` is wrong,
and only the lost lines' input would be read again. Remote checkpoints (``--storage``) are not
checked.
"""

from __future__ import annotations

import json
import os
import struct
import textwrap
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from common import paths
from infra import checkpoints

# The kinds of damage (Damage.kind).
UNREADABLE = "unreadable entry"  # a log entry cut short, empty, or not what Spark wrote
STALE_CRC = "stale crc"  # a Hadoop .crc that does not match its intact file
MISSING = "missing part"  # metadata, offsets/, commits/ or sources/ (or one entry) is gone
OTHER_VERSION = "other Spark version"  # a log version this Spark cannot read
FOREIGN = "foreign checkpoint"  # another query's checkpoint in this one's place
MOVED = "moved course folder"  # a file source's log names files in another course folder

# The newest log version Spark 4.2 reads, per log (its INVALID_LOG_VERSION messages say so).
MAX_LOG_VERSION = {"offsets": 2, "commits": 3, "sources": 1, "initial": 1}
# Hadoop's .crc file: the magic "crc\0", the chunk size (int32, big-endian, 512), then one
# CRC-32 (the zlib polynomial) per chunk of the file.
CRC_MAGIC = b"crc\x00"
CRC_HEADER = struct.Struct(">4si")
CRC_VALUE = struct.Struct(">I")

REGISTRY_FILE = "checkpoint_ids.json"  # under .runtime/: query id -> the place it belongs to

# What starting over costs, said wherever only a restore or a new start is left.
START_OVER = (
    "Starting over (--reset, or a new --checkpoint-dir) reads all of the input again: a sink "
    "that is not idempotent gets every row again (duplicates), and a stateful query's state "
    "(running counts, open windows) starts empty."
)
RESTORE = "Restore {files} from a backup of this checkpoint if you have one (all of it, as it was)."


@dataclass(frozen=True)
class Damage:
    """One thing wrong with a query's checkpoint.

    ``kind``: one of the constants above; ``path``: the damaged file or folder; ``what``: one
    sentence of what is wrong; ``fix``: the safe way out, naming the files (relative to the
    checkpoint) and what it costs; ``safe``: True when following ``fix`` loses and duplicates
    nothing.
    """

    kind: str
    path: Path
    what: str
    fix: str
    safe: bool


# --- reading one query's checkpoint ----------------------------------------------------------


def diagnose(checkpoint: Path) -> list[Damage]:
    """Everything damaged in one query's checkpoint folder (empty when it is whole). Reads only."""
    checkpoint = Path(checkpoint)
    found: list[Damage] = []
    offsets = checkpoints.entries(checkpoint / "offsets")
    commits = checkpoints.entries(checkpoint / "commits")
    found += metadata_damage(checkpoint, has_batches=bool(offsets or commits))
    found += missing_folders(checkpoint, offsets, commits)
    newest = max(offsets) if offsets else None
    committed = max(commits) if commits else None
    if newest is not None and committed is not None and committed > newest:
        found.append(commit_without_offsets(checkpoint, newest, committed))
    for batch in offsets:
        found += entry_damage(checkpoint, "offsets", offsets[batch], batch, newest, committed)
    for batch in commits:
        found += entry_damage(checkpoint, "commits", commits[batch], batch, newest, committed)
    source_lines = newest_source_lines(offsets)
    for source in checkpoints.source_logs(checkpoint):
        logged = checkpoints.entries(source)
        if not checkpoints.is_file_source_log(source, source_lines):
            # A Kafka (or rate) source keeps only its starting offsets, in sources/<i>/0.
            for batch, file in logged.items():
                found += entry_damage(checkpoint, "initial", file, batch, newest, committed)
            continue
        latest_compact = max((b for b, f in logged.items() if f.suffix == ".compact"), default=-1)
        for batch, file in logged.items():
            if batch >= latest_compact:
                found += entry_damage(checkpoint, "sources", file, batch, newest, committed)
        found += moved_damage(checkpoint, source)
    found += foreign_damage(checkpoint)
    return found


def diagnose_all(root: Path, found: list[Path] | None = None) -> list[Damage]:
    """The damage in every query checkpoint under ``root`` (a lesson's checkpoint folder);
    ``found``: the query checkpoints there when the caller has just looked (checkpoints.find)."""
    damages: list[Damage] = []
    for checkpoint in checkpoints.find(root) if found is None else found:
        damages += diagnose(checkpoint)
    return damages


def crc_file(file: Path) -> Path:
    return file.with_name(f".{file.name}.crc")


def relative(checkpoint: Path, path: Path) -> str:
    return path.relative_to(checkpoint).as_posix()


def files_of(checkpoint: Path, *files: Path) -> str:
    """'offsets/2 and offsets/.2.crc': the files named, each with its .crc when it has one."""
    names = []
    for file in files:
        names.append(relative(checkpoint, file))
        if crc_file(file).exists():
            names.append(relative(checkpoint, crc_file(file)))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# --- the content of one log entry -----------------------------------------------------------


def content_problem(log: str, file: Path, previous: Path | None) -> str | None:
    """Why ``file`` is not a whole entry of ``log`` ("offsets", "commits", "sources"), or None.

    A version line "vN", then JSON lines: for offsets the batch's settings and one line per
    source (JSON, or "-" for a source with no offset yet), as many as in the entry before; for
    commits one line; for a file source's log one line per file with its path and batch id.
    """
    data = file.read_bytes()
    if log == "initial":
        data = data.removeprefix(b"\x00")  # Kafka's starting offsets: a NUL byte, then the log
    if not data:
        return "it is empty"
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return "it is not text"
    if not checkpoints.VERSION_LINE.fullmatch(lines[0]):
        return "its first line is no log version (v1, v2...)"
    try:
        values = [json.loads(line) for line in lines[1:] if line != "-"]
    except ValueError:
        return "a line of it is not whole JSON (it was cut short or changed)"
    if log == "offsets":
        if not values or not isinstance(values[0], dict) or "batchTimestampMs" not in values[0]:
            return "it has no batch settings line"
        if previous is not None and content_problem(log, previous, None) is None:
            expected = len(previous.read_bytes().decode("utf-8").split("\n"))
            if len(lines) != expected:
                return (
                    f"it has {len(lines) - 2} source line(s) where the entry before has "
                    f"{expected - 2}"
                )
    if log == "commits" and (len(values) != 1 or not isinstance(values[0], dict)):
        return "a commit holds one JSON line"
    if log == "initial" and (len(values) != 1 or not isinstance(values[0], dict)):
        return "a source's starting offsets are one JSON line"
    if log == "sources" and not all(isinstance(v, dict) and "path" in v for v in values):
        return "a line of it names no file"
    return None


def crc_matches(file: Path) -> bool | None:
    """Whether ``file`` matches its Hadoop ``.crc`` (CRC-32 per chunk); None without a .crc."""
    crc = crc_file(file)
    if not crc.is_file():
        return None
    stored = crc.read_bytes()
    if len(stored) < CRC_HEADER.size:
        return False
    magic, chunk = CRC_HEADER.unpack_from(stored)
    if magic != CRC_MAGIC or chunk <= 0:
        return False
    data = file.read_bytes()
    computed = b"".join(
        CRC_VALUE.pack(zlib.crc32(data[start : start + chunk]))
        for start in range(0, len(data), chunk)
    )
    return stored[CRC_HEADER.size :] == computed


# --- the kinds of damage -----------------------------------------------------------------------


def entry_damage(
    checkpoint: Path, log: str, file: Path, batch: int, newest: int | None, committed: int | None
) -> list[Damage]:
    """The damage of one entry of ``offsets/``, ``commits/`` or a file source's log."""
    previous = file.with_name(str(batch - 1)) if log == "offsets" else None
    problem = content_problem(log, file, previous if previous and previous.is_file() else None)
    name = relative(checkpoint, file)
    if problem is None:
        version = checkpoints.log_version(file)
        if version is not None and version > MAX_LOG_VERSION[log]:
            return [other_version(checkpoint, file, version, MAX_LOG_VERSION[log])]
        if crc_matches(file) is False:
            return [
                Damage(
                    STALE_CRC,
                    crc_file(file),
                    f"{name} reads as a whole entry, but its checksum file "
                    f"{relative(checkpoint, crc_file(file))} does not match it, so Spark "
                    "refuses it with 'Checksum error'.",
                    f"Remove {relative(checkpoint, crc_file(file))} only: Spark then reads "
                    f"{name} as it is. Nothing is lost.",
                    True,
                )
            ]
        return []
    what = f"{name} is not what Spark wrote: {problem}."
    return [
        Damage(
            UNREADABLE, file, what, *unreadable_fix(checkpoint, log, file, batch, newest, committed)
        )
    ]


def unreadable_fix(
    checkpoint: Path, log: str, file: Path, batch: int, newest: int | None, committed: int | None
) -> tuple[str, bool]:
    """(fix, safe) for a damaged entry: which files to remove or restore, and what it costs."""
    if log == "sources" and (newest is None or batch > newest):
        # A stop between the file source's log and offsets/: the batch was never planned.
        return (
            f"The file source logged the files of batch {batch}, but the batch was never planned "
            f"(offsets/ has no entry {batch}). Remove {files_of(checkpoint, file)}: the source "
            f"lists those files again as new, and batch {batch} reads them. Nothing is lost or "
            "read twice.",
            True,
        )
    uncommitted = batch == newest and (committed is None or committed < batch)
    if log in ("offsets", "sources") and uncommitted:
        return replan_fix(checkpoint, batch)
    if log == "offsets" and newest is not None and batch < newest - 1:
        older = [checkpoint / "offsets" / str(old) for old in range(batch + 1)]
        present = [old for old in older if old.exists()]
        return (
            f"Spark reads only the newest two entries of offsets/, and deletes old ones itself. "
            f"Remove {files_of(checkpoint, *present)}. Nothing is lost.",
            True,
        )
    if log == "commits" and committed is not None and batch < committed:
        older = [checkpoint / "commits" / str(old) for old in range(batch + 1)]
        present = [old for old in older if old.exists()]
        return (
            f"Spark reads only the newest commit, and deletes old ones itself. Remove "
            f"{files_of(checkpoint, *present)}. Nothing is lost.",
            True,
        )
    if log == "commits":
        return (
            f"Batch {batch} is the last one the sink finished; Spark needs this commit to know "
            f"it. Remove {files_of(checkpoint, file)}: batch {batch} then runs again with the "
            "same input (its offsets are kept). A sink that recognises a replayed batch (Delta, "
            "the file sink, a foreachBatch write keyed by batch id) writes nothing twice; "
            f"any other sink gets batch {batch}'s rows again.",
            False,
        )
    if log == "initial":
        return (
            RESTORE.format(files=relative(checkpoint, file))
            + " It holds where the source started reading (Kafka's starting offsets). "
            + START_OVER,
            False,
        )
    needed = "where that batch ended" if log == "offsets" else "which files the source has read"
    return (
        RESTORE.format(files=relative(checkpoint, file))
        + f" Batch {batch} was committed, and Spark needs this entry to know {needed}: "
        "removing it is not safe. " + START_OVER,
        False,
    )


def replan_fix(checkpoint: Path, batch: int) -> tuple[str, bool]:
    """Batch ``batch`` was planned but never committed: remove what was written for it."""
    planned = [checkpoint / "offsets" / str(batch)]
    planned += [
        log / str(batch)
        for log in checkpoints.source_logs(checkpoint)
        if entry_is_damaged(log, batch)
    ]
    planned = [file for file in planned if file.exists()]
    only_files = all(
        checkpoints.file_source_offset(line) is not None
        for line in previous_source_lines(checkpoint, batch)
    )
    remove = files_of(checkpoint, *planned)
    if only_files:
        return (
            f"Batch {batch} was planned but never committed. Remove {remove}: "
            f"Spark plans batch {batch} again, and the file source's own log (sources/) gives it "
            "the same files. Nothing is lost or read twice.",
            True,
        )
    return (
        f"Batch {batch} was planned but never committed. Remove {remove}: "
        f"Spark plans batch {batch} again from where batch {batch - 1} ended. With a Kafka or "
        "Delta source the new plan may take more input than the lost one: a sink that skips a "
        "batch id it already wrote (Delta) would skip those extra rows if it had written this "
        "batch before the crash.",
        False,
    )


def entry_is_damaged(log: Path, batch: int) -> bool:
    file = log / str(batch)
    if not file.is_file():
        return False
    return content_problem("sources", file, None) is not None or crc_matches(file) is False


def previous_source_lines(checkpoint: Path, batch: int) -> list[str]:
    """The source lines of the offsets entry before ``batch`` (what kinds of source it has)."""
    before = checkpoint / "offsets" / str(batch - 1)
    if not before.is_file() or content_problem("offsets", before, None) is not None:
        return ["unknown"]
    return checkpoints.read_offsets(before).sources


def other_version(checkpoint: Path, file: Path, version: int, supported: int) -> Damage:
    name = relative(checkpoint, file)
    return Damage(
        OTHER_VERSION,
        file,
        f"{name} was written by another Spark version (log version v{version}; this Spark "
        f"reads up to v{supported}), so Spark stops with UnsupportedLogVersion.",
        "Run this checkpoint with the Spark version that wrote it (do not edit the file). "
        + START_OVER,
        False,
    )


def commit_without_offsets(checkpoint: Path, newest: int, committed: int) -> Damage:
    missing = [checkpoint / "offsets" / str(b) for b in range(newest + 1, committed + 1)]
    names = ", ".join(relative(checkpoint, file) for file in missing)
    return Damage(
        MISSING,
        missing[0],
        f"commits/ records batch {committed} as done but {names} is gone, so Spark stops with "
        "CONCURRENT_STREAM_LOG_UPDATE (it is not another run).",
        RESTORE.format(files=names)
        + " Removing the commits after it is not safe: those batches would run again. "
        + START_OVER,
        False,
    )


def metadata_damage(checkpoint: Path, has_batches: bool) -> list[Damage]:
    """A missing or unreadable ``metadata`` (the query id) in a checkpoint that has batches."""
    metadata = checkpoint / checkpoints.METADATA
    try:
        current = checkpoints.query_id(checkpoint)
    except checkpoints.Unreadable:
        what = "metadata, which holds the query id, is not what Spark wrote."
    else:
        if current is not None:
            if crc_matches(metadata) is False:
                return [
                    Damage(
                        STALE_CRC,
                        crc_file(metadata),
                        "metadata reads well, but its checksum file .metadata.crc does not "
                        "match it, so Spark refuses it with 'Checksum error'.",
                        "Remove .metadata.crc only: Spark then reads metadata as it is. "
                        "Nothing is lost.",
                        True,
                    )
                ]
            return []
        if not has_batches:
            return []  # a query that never planned a batch: Spark writes metadata when it starts
        what = "metadata, which holds the query id, is missing while offsets/ has batches."
    known = recorded_id(checkpoint)
    crc_note = " and remove .metadata.crc" if crc_file(metadata).exists() else ""
    if known:
        return [
            Damage(
                MISSING,
                metadata,
                what,
                f"Write the query id the course recorded for this place back into metadata "
                f'(exactly this line: {{"id":"{known}"}}){crc_note}. Nothing is lost.',
                True,
            )
        ]
    return [
        Damage(MISSING, metadata, what, RESTORE.format(files="metadata") + " " + START_OVER, False)
    ]


def missing_folders(
    checkpoint: Path, offsets: dict[int, Path], commits: dict[int, Path]
) -> list[Damage]:
    """``offsets/``, ``commits/`` or a file source's ``sources/`` log missing."""
    found = []
    # Before its first offsets/0, a query may already have written sources/<i>/0: a Kafka or
    # rate source its starting offsets when it starts, a file source the files of batch 0 just
    # before offsets/0. A stop there leaves a healthy checkpoint: the next run plans batch 0
    # from that entry. Entries beyond 0 mean batches were planned, and offsets/ is gone.
    planned_sources = [
        log for log in checkpoints.source_logs(checkpoint) if set(checkpoints.entries(log)) - {0}
    ]
    if not offsets and (commits or planned_sources):
        found.append(
            Damage(
                MISSING,
                checkpoint / "offsets",
                "offsets/, where every batch's input range is planned, is missing or empty "
                "while the checkpoint has other logs; Spark fails, or reads every file again.",
                RESTORE.format(files="offsets/") + " " + START_OVER,
                False,
            )
        )
    if offsets and not (checkpoint / "commits").is_dir():
        newest = max(offsets)
        found.append(
            Damage(
                MISSING,
                checkpoint / "commits",
                "commits/, the record of which batches the sink finished, is missing; Spark "
                f"would silently run batch {newest} again.",
                RESTORE.format(files="commits/")
                + f" Without a backup, create commits/ as an empty folder: batch {newest} then "
                "runs again with the same input (its offsets are kept). A sink that recognises "
                "a replayed batch (Delta, the file sink, a foreachBatch write keyed by batch id) "
                f"writes nothing twice; any other sink gets batch {newest}'s rows again.",
                False,
            )
        )
    file_sources = [
        index
        for index, line in enumerate(newest_source_lines(offsets))
        if checkpoints.file_source_offset(line) is not None
    ]
    for index in file_sources:
        log = checkpoint / "sources" / str(index)
        if not checkpoints.entries(log):
            found.append(
                Damage(
                    MISSING,
                    log,
                    f"sources/{index}, the file source's list of the files it has read, is "
                    "missing; Spark fails with 'batch N doesn't exist'.",
                    RESTORE.format(files=f"sources/{index}") + " " + START_OVER,
                    False,
                )
            )
    return found


def newest_source_lines(offsets: dict[int, Path]) -> list[str]:
    """The source lines of the newest offsets entry that :func:`content_problem` finds whole."""
    for batch in sorted(offsets, reverse=True):
        if content_problem("offsets", offsets[batch], None) is None:
            return checkpoints.read_offsets(offsets[batch]).sources
    return []


def moved_damage(checkpoint: Path, log: Path) -> list[Damage]:
    """A course checkpoint whose file source read the data/ folder of another course folder.

    A file source's log names its files by absolute path, and on a restart Spark looks at the
    last batch's files again: in a copied or moved course folder it stops with "Wrong basePath
    ... for the root path" (measured in Spark 4.2)."""
    if paths.is_remote(checkpoint) or paths.CHECKPOINT_DIR not in Path(checkpoint).parents:
        return []
    readable = [
        file
        for file in checkpoints.entries(log).values()
        if content_problem("sources", file, None) is None
    ]
    if not readable:
        return []
    try:
        records = checkpoints.file_records(readable[-1])
    except checkpoints.Unreadable:
        return []
    local = [checkpoints.local_path(record["path"]) for record in records]
    for logged in [path for path in local if path is not None][:1]:
        parts = logged.parts
        if "data" not in parts:
            continue
        at = len(parts) - 1 - parts[::-1].index("data")
        root = PurePosixPath(*parts[:at])
        if root == PurePosixPath(paths.STORAGE_ROOT.as_posix()):
            continue
        if not paths.DATA_DIR.joinpath(*parts[at + 1 : -1]).is_dir():
            continue
        return [
            Damage(
                MOVED,
                log,
                f"{relative(checkpoint, log)} lists files of the course folder {root}, not of "
                f"this one ({paths.STORAGE_ROOT}): the course folder was copied or moved, and "
                "Spark would stop with 'Wrong basePath'. A file source names the files it read "
                "by their full path, so its checkpoint resumes only in the folder that wrote it.",
                f"Work in {root} (move this course folder back there if it was moved): the "
                "checkpoint resumes there, nothing lost. " + START_OVER,
                True,
            )
        ]
    return []


# --- whose checkpoint is it? -----------------------------------------------------------------


def registry_path() -> Path:
    return paths.RUNTIME_DIR / REGISTRY_FILE


def place_of(checkpoint: Path) -> str:
    """The key of a checkpoint place: relative to the course home, or absolute outside it."""
    resolved = Path(checkpoint).resolve()
    try:
        return resolved.relative_to(paths.COURSE_HOME).as_posix()
    except ValueError:
        return resolved.as_posix()


def read_registry() -> dict[str, str]:
    """Place -> the query id that the course saw there (empty when none was recorded)."""
    try:
        places = json.loads(registry_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return places if isinstance(places, dict) else {}


def readable_id(checkpoint: Path) -> str | None:
    """The checkpoint's query id (checkpoints.query_id); None when it has none that reads."""
    try:
        return checkpoints.query_id(checkpoint)
    except checkpoints.Unreadable:
        return None


def recorded_id(checkpoint: Path) -> str | None:
    return read_registry().get(place_of(checkpoint))


def foreign_damage(checkpoint: Path) -> list[Damage]:
    """A checkpoint whose query id the course recorded at another place."""
    current = readable_id(checkpoint)
    if current is None:
        return []
    registry = read_registry()
    here = place_of(checkpoint)
    if registry.get(here) == current:
        return []
    elsewhere = sorted(place for place, known in registry.items() if known == current)
    if not elsewhere:
        return []
    owner = elsewhere[0]
    return [
        Damage(
            FOREIGN,
            checkpoint,
            f"This folder holds the checkpoint of another query ({owner}, query id {current}); "
            "Spark cannot tell and would resume that query's progress here, skipping or "
            "re-reading input.",
            f"Move this folder back to {owner} if that place is now missing, or remove this "
            f"copy if {owner} still holds it; then restore this query's own checkpoint from a "
            "backup if you have one. " + START_OVER,
            False,
        )
    ]


def remember(found: Iterable[Path]) -> None:
    """Record the query id of each whole checkpoint in ``found`` (checkpoints.find) at its place,
    in ``.runtime/`` (so a checkpoint that later turns up in another place is recognised). A
    checkpoint with damage is not recorded."""
    registry = read_registry()
    changed = False
    for checkpoint in found:
        current = readable_id(checkpoint)
        place = place_of(checkpoint)
        if current is None or registry.get(place) == current or diagnose(checkpoint):
            continue
        registry[place] = current
        changed = True
    if not changed:
        return
    target = registry_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.{os.getpid()}")
    staging.write_text(json.dumps(registry, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(staging, target)


# --- what the learner reads -------------------------------------------------------------------

ADVICE_WIDTH = 78


def advice(damages: Iterable[Damage]) -> str:
    """The paragraph a learner sees: each damaged checkpoint, what is wrong, the safe fix."""
    damages = list(damages)
    if not damages:
        return "The checkpoint is whole."
    lines = [
        wrap(
            "A checkpoint is damaged; nothing was changed. Fix each item below by hand, then "
            "run the lesson again ('python course.py checkpoint DIR' shows what a checkpoint "
            "holds):"
        )
    ]
    for folder in dict.fromkeys(damaged_checkpoint(damage) for damage in damages):
        lines.append(f"In {paths.display(folder)}:")
        for damage in damages:
            if damaged_checkpoint(damage) != folder:
                continue
            verdict = "Safe fix" if damage.safe else "Way out (read what it costs)"
            lines.append(wrap(f"- {damage.what}", first="  ", rest="    "))
            lines.append(wrap(f"{verdict}: {damage.fix}", first="    ", rest="    "))
    return "\n".join(lines)


def damaged_checkpoint(damage: Damage) -> Path:
    """The query checkpoint a damage belongs to."""
    return checkpoints.checkpoint_of(damage.path) or damage.path.parent


def wrap(text: str, first: str = "", rest: str = "") -> str:
    """``text`` wrapped for a terminal, its first line indented by ``first``, the others by
    ``rest``; file names are never broken."""
    return textwrap.fill(
        text,
        width=ADVICE_WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
