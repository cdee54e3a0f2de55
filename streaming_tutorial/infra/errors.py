"""Turn the failures a learner meets into one paragraph that says what to do.

Every lesson and tool raises :class:`CourseError` for problems it understands.
``explain()`` also recognises a few Spark and Delta Lake failures, by their exact error
class (Spark 4 errors carry one: ``[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key
schema does not match ...``), and returns advice with the first lines of Spark's own
message beside it. Anything else returns None, so the learner sees the real traceback:
a guess from a word in the message would hide the error and could advise deleting
state that is fine.

A folder Spark cannot write (full, read-only, not yours) is recognised by the operating
system's own words that Java quotes after the path (``... .tmp (Read-only file system)``,
``java.io.IOException: No space left on device``) anywhere in the chain of causes.

A checkpoint file Spark could not read ("Checksum error: file:...", "Failed to read log file
...", a missing ``metadata``) is answered with infra.checkpoint_health's diagnosis of that
checkpoint: the files to remove or restore, and what each way out costs.

Only a checkpoint that no longer fits the query (changed state keys, aggregations or
stateful operators, another source table) is answered with ``--reset`` or a new
``--checkpoint-dir`` first, and the advice says what that throws away; for a damaged one it
is the last way out, after the repairs and restores that keep the checkpoint.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlparse

from infra import checkpoint_health, checkpoints


class CourseError(RuntimeError):
    """A failure we can explain: the message is the whole advice paragraph."""


ADVICE_WIDTH = 78  # the advice paragraph is wrapped for a terminal; Spark's lines are not
SPARK_LINES = 3  # how many lines of Spark's message to show beside the advice
SPARK_LINE_WIDTH = 160

# What --reset and a new --checkpoint-dir throw away, said in every advice that offers them.
START_OVER = (
    "To start over, run the lesson with --reset: it deletes this lesson's checkpoints and output "
    "(its progress, its state such as running counts and open windows, and what it wrote), not its "
    "input, which is then read again from the beginning. Or point --checkpoint-dir at a new, empty "
    "folder: the query also starts from the beginning, and the old checkpoint and output stay, so "
    "old results may be written again beside them."
)

CHANGED_STATE = (
    "The checkpoint holds state from an earlier version of this query, which has changed since: "
    "{what}, so Spark cannot reuse that state. Undo the change to continue from the checkpoint, or "
    "start over. " + START_OVER
)

# Exact error class (the part before any '.SUBCLASS') -> advice.
# A checkpoint that no longer fits the query: the only cases whose advice offers --reset.
CHECKPOINT_MISMATCH = {
    "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE": CHANGED_STATE.format(
        what="its grouping keys (the groupBy columns, the window, or the join or dropDuplicates "
        "keys) differ"
    ),
    "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE": CHANGED_STATE.format(
        what="what it keeps per key (its aggregations, or the state of applyInPandasWithState) "
        "differs"
    ),
    "STATE_STORE_COLUMN_FAMILY_SCHEMA_INCOMPATIBLE": CHANGED_STATE.format(
        what="the schema of one of its state variables differs"
    ),
    "STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE": CHANGED_STATE.format(
        what="the type of one of its state variables differs"
    ),
    "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA": CHANGED_STATE.format(
        what="a stateful operator (an aggregation, a join, dropDuplicates, a session window) was "
        "added, removed or replaced"
    ),
    "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY": (
        "The query has a stateful operator (an aggregation, a join, dropDuplicates) but its "
        "checkpoint has no state for it: either the query ran without that operator before, or "
        "files under state/ were deleted. Undo the change, or restore the state files if you have "
        "them, or start over. " + START_OVER
    ),
    "STATE_STORE_INVALID_CONFIG_AFTER_RESTART": (
        "A state store setting was changed between two runs of the same checkpoint, and Spark "
        "cannot switch it for existing state. Set it back to the old value named in Spark's "
        "message to continue from the checkpoint, or start over with the new value. " + START_OVER
    ),
    "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE": (
        "The checkpoint remembers reading another Delta table than the one at this path now: the "
        "table was deleted and created again (or the query now reads another table), so the "
        "positions stored in the checkpoint mean nothing for it. Start over. " + START_OVER
    ),
    "DELTA_SCHEMA_CHANGED": (
        "The Delta table this stream reads changed its schema while the query was reading it. Run "
        "the lesson again first: a restart picks up the new schema and usually goes on. Only if it "
        "fails the same way on every run is the change incompatible with the checkpoint; then "
        "start over. " + START_OVER
    ),
}
CHECKPOINT_MISMATCH["DELTA_SCHEMA_CHANGED_WITH_VERSION"] = CHECKPOINT_MISMATCH[
    "DELTA_SCHEMA_CHANGED"
]
CHECKPOINT_MISMATCH["DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS"] = CHECKPOINT_MISMATCH[
    "DELTA_SCHEMA_CHANGED"
]

# Not the checkpoint's fault: nothing to delete.
OTHER_FAILURES = {
    "_LEGACY_ERROR_TEMP_1299": (
        "A query that writes to the memory sink in append or update mode cannot restart from a "
        "checkpoint folder: the rows it collected lived in the driver's memory and ended with the "
        "previous run, so Spark refuses to resume it. This is a bug in the query, not in your "
        "data: give a memory-sink query no checkpointLocation (Spark then uses a temporary one, "
        "new on every run), or use complete mode. If a lesson does this, the lesson needs that "
        "fix; other lessons' checkpoints are fine."
    ),
    "STATE_STORE_COMMIT_VALIDATION_FAILED": (
        "A foreachBatch function returned without reading the whole micro-batch, so the query's "
        "state was not saved for every partition. Make the function consume all of batch_df (write "
        "it, collect it or count it; show() and limit() read only part of it) and let its "
        "exceptions propagate instead of returning early. If it writes to Delta with "
        "txnAppId/txnVersion, Delta skips a replayed batch id without reading the batch: call "
        "batch_df.persist().count() before the write. The checkpoint is fine: run the lesson again "
        "after the fix."
    ),
    # A subclass, for the one case of a general class (UNSUPPORTED_FEATURE) we can say more about.
    "UNSUPPORTED_FEATURE.STORE_BACKEND_NOT_SUPPORTED_FOR_TWS": (
        "transformWithState keeps its state only in the RocksDB state store, and this query ran on "
        "the default one. Set spark.sql.streaming.stateStore.providerClass to "
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider before the query "
        "starts (lesson 15 does), and give it a new checkpoint folder: the failed run already "
        "recorded the old store in this checkpoint's first offsets file, which a restart there "
        "keeps using. It committed no batch and wrote no state, so nothing is lost."
    ),
    "CONCURRENT_QUERY": (
        "Another run of this query is already active. Stop the other run (another terminal, or the "
        "tour) before you start this one; both would write the same checkpoint."
    ),
    "CONCURRENT_STREAM_LOG_UPDATE": (
        "Two queries are writing to the same checkpoint at once: probably the same lesson runs in "
        "another terminal, or two of your queries were given the same checkpointLocation. Stop the "
        "other run, or give each query its own checkpoint folder, then run the lesson again."
    ),
    # "Multiple streaming queries are concurrently using <path>": another run renamed its
    # offsets/ or commits/ entry into place first (Spark's check just before the rename).
    "_LEGACY_ERROR_TEMP_2207": (
        "Another run wrote this checkpoint's next batch first: probably the same lesson runs in "
        "another terminal, or two of your queries were given the same checkpointLocation. Stop "
        "the other run, or give each query its own checkpoint folder, then run the lesson again; "
        "the batch the other run wrote is kept."
    ),
    "STREAMING_UNFINISHED_REPARTITION_DETECTED": (
        "An offline state repartition of this checkpoint (Spark 4.2, experimental) did not "
        "finish: its newest offsets/ entry is the repartition's, with no commit. Run the "
        "repartition again, with the query stopped; if it cannot finish (on the default state "
        "store it refuses with STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER), "
        "remove only offsets/<batch> and its .crc, for the batch Spark's message names: the "
        "checkpoint is then as it was before, with its state and committed batches."
    ),
    "DELTA_CONCURRENT_TRANSACTION": (
        "Two streaming queries with the same checkpoint wrote to this Delta table at the same "
        "time: probably the same lesson runs in another terminal. Stop the other run, then run the "
        "lesson again."
    ),
    "DELTA_SOURCE_TABLE_IGNORE_CHANGES": (
        "The Delta table this stream reads had existing rows changed (an overwrite, a "
        "complete-mode write, MERGE, UPDATE or DELETE), and a Delta streaming source follows "
        "appends only. Read it with .option('skipChangeCommits', 'true') to skip such commits, or "
        "stream from a table that is only appended to."
    ),
    "DELTA_SOURCE_IGNORE_DELETE": (
        "Rows were deleted from the Delta table this stream reads, and a Delta streaming source "
        "follows appends only. Read it with .option('skipChangeCommits', 'true') to skip such "
        "commits, or stream from a table that is only appended to."
    ),
    "DELTA_METADATA_MISMATCH": (
        "The query writes columns or partitioning that differ from the Delta table already at that "
        "path, which an earlier version of the query created. To add new columns to the table, "
        "write with .option('mergeSchema', 'true'); otherwise write to a new table path."
    ),
}
ADVICE = {**CHECKPOINT_MISMATCH, **OTHER_FAILURES}

CONNECTORS = {
    "kafka": "org.apache.spark:spark-sql-kafka-0-10_2.13 (same version as pyspark); "
    "lessons ask for it with get_spark(..., kafka=True)",
    "delta": "io.delta:delta-spark_4.2_2.13 (the version matching the delta-spark package); "
    "lessons ask for it with get_spark(..., delta=True)",
}

# Spark's "Failed to find data source: <name>": its own class for Kafka, the general one for the
# rest.
MISSING_CONNECTOR = ("_LEGACY_ERROR_TEMP_1140", "DATA_SOURCE_NOT_FOUND")

# '[CLASS] message' or '[CLASS.SUBCLASS] message', as Spark 4 starts its error messages.
LEADING_CLASS = re.compile(r"\[([A-Z_][A-Z0-9_]*)(?:\.[A-Z0-9_]+)*\]")
# A query that failed wraps the real error: '[STREAM_FAILED] Query [...] terminated with exception:
# <message>'.
STREAM_FAILED = "STREAM_FAILED"
WRAPPED = "terminated with exception: "


def explain(error: BaseException) -> str | None:
    """Advice for a recognised error (a wrapped paragraph, then Spark's first lines); else None."""
    if isinstance(error, CourseError):
        return str(error)
    found = checkpoint_failure(error)
    if found:
        advice, message = found
        return f"{advice}\nSpark said:\n" + "\n".join(f"  {line}" for line in spark_lines(message))
    for condition, message in spark_errors(error):
        main_class = condition.split(".", 1)[0]
        if main_class in MISSING_CONNECTOR:
            advice = missing_connector_advice(message)
        else:
            advice = ADVICE.get(condition) or ADVICE.get(main_class)
        if advice:
            return with_spark_lines(advice, message)
    found = folder_failure(error)
    if found:
        advice, message = found
        return with_spark_lines(advice, message)
    return None


def with_spark_lines(advice: str, message: str) -> str:
    paragraph = textwrap.fill(
        advice, width=ADVICE_WIDTH, break_long_words=False, break_on_hyphens=False
    )
    return f"{paragraph}\nSpark said:\n" + "\n".join(f"  {line}" for line in spark_lines(message))


# --- a checkpoint Spark cannot read ---------------------------------------------------------------
#
# Spark names the file it could not read: 'Checksum error: file:/ckpt/offsets/2 at 512 exp: ...'
# (Hadoop's ChecksumException), 'Failed to read log file file:/ckpt/commits/2. [INVALID_LOG_VERSION
# ...' (also MALFORMED_LOG_FILE, 'Incomplete log file'), or the checkpoint itself: 'Checkpoint
# location file:/ckpt is in an inconsistent state' (STREAMING_CHECKPOINT_MISSING_METADATA_FILE).
UNREADABLE_CHECKPOINT = re.compile(
    r"(?:Checksum error: |Failed to read log file |Checkpoint location )(?P<path>file:\S+?)"
    r"(?=\.?\s|\.?$| at \d)"
)


def checkpoint_failure(error: BaseException) -> tuple[str, str] | None:
    """(advice, Spark's message) when Spark could not read a checkpoint file; else None.

    The advice is checkpoint_health's diagnosis of that checkpoint; when it finds nothing (the
    file was damaged and then replaced, say), a paragraph that names the file and repairs
    nothing."""
    for current in error_chain(error):
        message = spark_message(current)
        match = UNREADABLE_CHECKPOINT.search(message)
        if not match:
            continue
        path = Path(unquote(urlparse(match.group("path")).path))
        checkpoint = checkpoints.checkpoint_of(path)
        damages = checkpoint_health.diagnose(checkpoint) if checkpoint else []
        if damages:
            return checkpoint_health.advice(damages), message
        return textwrap.fill(
            f"Spark could not read {path}, a file of a query's checkpoint. Nothing was changed. "
            "See what the checkpoint holds with 'python course.py checkpoint DIR', and restore "
            "that file from a backup if you have one. " + START_OVER,
            width=ADVICE_WIDTH,
            break_long_words=False,
            break_on_hyphens=False,
        ), message
    return None


# --- a folder Spark cannot write ------------------------------------------------------------------
#
# Java's file errors end with the operating system's own text (strerror), after the path when
# there is one: 'java.io.FileNotFoundException: /ckpt/offsets/.2.tmp (Read-only file system)',
# 'java.io.IOException: No space left on device'. Hadoop says 'mkdir of file:/ckpt failed' when
# it cannot create a checkpoint folder. Only these exact texts after a java.io/Hadoop exception
# name are recognised, never a loose word.
DISK_FULL = ("No space left on device", "Disk quota exceeded")
READ_ONLY = "Read-only file system"
NO_PERMISSION = "Permission denied"
JAVA_FILE_ERROR = re.compile(
    r"(?:java\.io\.\w+|java\.nio\.file\.\w+|org\.apache\.hadoop\.[\w.$]+): "
    r"(?:(?P<path>\S[^\n]*?) \()?"
    rf"(?P<reason>{'|'.join(map(re.escape, (*DISK_FULL, READ_ONLY, NO_PERMISSION)))})\)?"
)
# What Spark prints after 'terminated with exception: ' when a checkpoint file cannot be opened.
BARE_FILE_ERROR = re.compile(
    rf"(?P<path>/[^\n]*?) \((?P<reason>{'|'.join(map(re.escape, (READ_ONLY, NO_PERMISSION)))})\)"
)
MKDIR_FAILED = re.compile(r"java\.io\.IOException: mkdir of (?P<path>\S+) failed")

FOLDER_ADVICE_END = (
    " Then run the lesson again: it goes on from its checkpoint, after the last micro-batch it "
    "completed, so nothing is lost."
)
# How to write elsewhere (also in environment.folder_problem): --checkpoint-dir moves only the
# checkpoints.
OTHER_FOLDER = (
    "give the lesson a folder you can write with --checkpoint-dir DIR (its queries then start from "
    "the beginning there), or set STREAMING_COURSE_HOME=DIR to keep all of the course's data, "
    "checkpoints and output there"
)


def folder_failure(error: BaseException) -> tuple[str, str] | None:
    """(advice, Spark's message) when Spark could not write a file or folder; else None."""
    for current in error_chain(error):
        message = spark_message(current)
        match = JAVA_FILE_ERROR.search(message) or BARE_FILE_ERROR.search(message)
        if match:
            return folder_advice(match.group("reason"), match.group("path")), message
        match = MKDIR_FAILED.search(message)
        if match:
            folder = match.group("path").removeprefix("file:")
            return (
                f"Spark could not create the folder {folder}: you may not write to the folder it "
                "goes in, or a part of that path is a file, not a folder. Make the parent folder "
                f"writable for your user ('ls -ld' on it shows its owner), or {OTHER_FOLDER}."
            ), message
    return None


def folder_advice(reason: str, path: str | None) -> str:
    where = f"{path.removeprefix('file:')}" if path else "the checkpoint or output folder"
    if reason in DISK_FULL:
        return (
            f"The disk that holds {where} is full ({reason}), so Spark could not write its next "
            "file and stopped the query. Free some space on that disk ('df -h' shows how much is "
            "left; keep the lesson's checkpoints, they are what lets it resume)."
            + FOLDER_ADVICE_END
        )
    if reason == READ_ONLY:
        return (
            f"Spark could not write {where}: that file system is read-only (mounted read-only, or "
            f"a read-only share or image). Remount it read-write, or {OTHER_FOLDER}."
            + FOLDER_ADVICE_END
        )
    return (
        f"Spark could not write {where}: permission denied. Make the folder writable for your user "
        "('ls -ld' shows its owner; 'sudo chown -R $USER FOLDER' if an earlier run with sudo "
        f"created it), or {OTHER_FOLDER}." + FOLDER_ADVICE_END
    )


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """The error and every error it wraps (pyspark's _cause, 'raise ... from'), outermost first."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        # pyspark keeps the JVM error's cause (converted) in _cause; 'raise ... from' sets
        # __cause__.
        for wrapped in (getattr(current, "_cause", None), current.__cause__):
            if isinstance(wrapped, BaseException):
                pending.append(wrapped)


def spark_errors(error: BaseException) -> Iterator[tuple[str, str]]:
    """(error class, message) for the error and every error it wraps, outermost first."""
    for current in error_chain(error):
        message = spark_message(current)
        condition = error_class(current, message)
        if condition == STREAM_FAILED and WRAPPED in message:
            # The failure inside the query; its class is at the start of the wrapped message.
            inner = message.split(WRAPPED, 1)[1]
            inner_class = leading_class(inner)
            if inner_class:
                yield inner_class, inner
        elif condition:
            yield condition, message


def error_class(error: BaseException, message: str) -> str | None:
    """getCondition() (or the pre-4.0 getErrorClass()) when the error has one, else its leading
    "[CLASS]"."""
    # getErrorClass is the pre-4.0 name; asking for it when getCondition exists only warns.
    getter = getattr(error, "getCondition", None) or getattr(error, "getErrorClass", None)
    if callable(getter):
        try:
            condition = getter()
        except Exception:  # a pyspark error whose JVM is gone: fall back to the text
            condition = None
        if condition:
            return str(condition)
    return leading_class(message)


def leading_class(message: str) -> str | None:
    match = LEADING_CLASS.match(message.lstrip())
    return match.group(0)[1:-1] if match else None


def spark_message(error: BaseException) -> str:
    """The error's own message, without the JVM stack trace pyspark may append."""
    text = str(error)
    return text.split("\n\nJVM stacktrace:", 1)[0]


def spark_lines(message: str) -> list[str]:
    """The first few non-empty lines of Spark's message, trimmed, without the trailing SQLSTATE."""
    lines = []
    for line in message.strip().splitlines():
        line = re.sub(r"(\s*SQLSTATE: \w+)+\s*$", "", line.strip())
        if line.startswith("=== Streaming Query ==="):
            break  # the query's plan and offsets follow: not for the learner's first read
        if line:
            lines.append(
                line if len(line) <= SPARK_LINE_WIDTH else line[: SPARK_LINE_WIDTH - 3] + "..."
            )
        if len(lines) == SPARK_LINES:
            break
    return lines


def missing_connector_advice(message: str) -> str:
    match = re.search(r"Failed to find (?:the )?data source: ([\w.\-]+?)\.?(?:\s|$)", message)
    provider = match.group(1) if match else "this format"
    package = CONNECTORS.get(provider.lower())
    if package:
        return (
            f"Spark has no connector for '{provider}' on its classpath: the package {package}. "
            "If you built your own session, add that package to spark.jars.packages."
        )
    return (
        f"Spark knows no data source named '{provider}'. Check the name in .format(...) "
        "(e.g. 'json', 'parquet', 'kafka', 'delta'), or add the package that provides it to "
        "spark.jars.packages."
    )
