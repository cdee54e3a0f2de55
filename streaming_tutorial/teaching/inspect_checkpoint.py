"""What a query's checkpoint holds, read for the learner: ``python course.py checkpoint DIR``.

    python course.py checkpoint checkpoints/11_delta_lake      # every query of a lesson
    python course.py checkpoint checkpoints/03_file_streaming/transactions --sink PATH
    python course.py checkpoint checkpoints/06_windowing --no-state   # no Spark, no state
    (the same from streaming_tutorial/: python -m teaching.inspect_checkpoint DIR)

It only reads. DIR is one query's checkpoint or a folder holding several (one section each).
For each it prints:

- the query id, from ``metadata`` (the same across restarts: a new one means a new checkpoint);
- the batches in ``offsets/`` (planned: written BEFORE a batch runs) and ``commits/`` (written
  AFTER its sink), the last committed batch, and a planned batch not committed yet, which a
  restart runs again with the same offsets;
- the newest offsets entry: its watermark and two settings the checkpoint fixes (the shuffle
  partitions change only by Spark 4.2's experimental offline repartition, RocksDB state only),
  then each source's offsets: a file source's log offset and the files each batch read (its own
  log, ``sources/<i>/``), Kafka's offset per topic and partition, a Delta table's version and
  index, a counter for a rate, socket or memory source;
- where there is ``state/``: the stateful operators, read by Spark's state data source
  (``state-metadata``: operator, state store, partitions, batches; ``statestore``: the rows at
  the last commit). A Spark session starts for that only (or pass one; ``--no-state``: none);
- the sink, where it keeps a log of its own: a file sink's ``_spark_metadata`` (its batches and
  files) or a Delta table's last streaming transaction of this query (a ``txn`` action whose
  ``appId`` is the query id; its ``version`` is the batch id);
- what is damaged and the safe way out (``infra.checkpoint_health.diagnose``).

The checkpoint does not name its sink. ``--sink PATH`` names it. Otherwise, for a checkpoint in a
lesson's folder (``checkpoints/<lesson>/...``, or ``output/<lesson>/...``), the lesson's output
folder ``output/<lesson>/`` is searched: a Delta table is this query's sink when its log holds a
transaction of this query's id; a file sink's ``_spark_metadata`` names no query, so a file sink is
this query's when its folder has the checkpoint folder's name (``checkpoints/06_windowing/
quarantine`` -> ``output/06_windowing/quarantine``); a sink named otherwise needs ``--sink``.

A file it cannot read is shown as "unreadable" and the rest still prints. The logs' formats are
Spark's and Delta's internal ones (as written by Spark 4.2 and Delta 4.4), read here only to show
what a restart will find; a checkpoint's parts are read with the course's checkpoint model,
``infra.checkpoints``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from common import paths
from infra import checkpoint_health, checkpoints
from infra.checkpoints import Unreadable, name_in_checkpoint, parse_json, read_lines
from teaching import state_reader

LABEL_WIDTH = 16  # the width of the labels on the left of each line
INDENT = " " * (LABEL_WIDTH + 2)  # continuation lines line up under the values
SHOWN_BATCHES = 5  # a log's newest batches listed with their files; older ones are counted
SHOWN_FILES = 4  # files named per batch; more are counted
STATE_APP_NAME = "checkpoint-inspector"
# The settings of offsets/'s second line that a restart keeps whatever the session says, with
# the words the report uses for them.
FIXED_SETTINGS = {
    "spark.sql.shuffle.partitions": "shuffle partitions",
    "spark.sql.streaming.stateStore.providerClass": "state store",
}
NO_STATE_FLAG = "--no-state"


@dataclass(frozen=True)
class SinkLog:
    """A sink that keeps its own log: ``kind`` is "delta" or "files"."""

    kind: str
    path: Path


# --- formatting ----------------------------------------------------------------------------


def batch_range(ids: list[int]) -> str:
    """[0, 1, 2, 3, 5] -> "0-3 5": runs of three or more as a range, so a gap stands out."""
    if not ids:
        return "none"
    runs: list[list[int]] = []
    for batch_id in ids:
        if runs and batch_id == runs[-1][-1] + 1:
            runs[-1].append(batch_id)
        else:
            runs.append([batch_id])
    parts = []
    for run in runs:
        if len(run) >= 3:
            parts.append(f"{run[0]}-{run[-1]}")
        else:
            parts.extend(str(batch_id) for batch_id in run)
    return " ".join(parts)


def line(label: str, value: str) -> str:
    return f"  {label:<{LABEL_WIDTH}}{value}".rstrip()


def utc(milliseconds: int) -> str:
    moment = datetime.fromtimestamp(milliseconds / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


# --- finding sinks -------------------------------------------------------------------------


def lesson_output(checkpoint: Path) -> Path | None:
    """The folder ``output/<lesson>`` of the same course folder for a checkpoint that is (or lies
    under) ``checkpoints/<lesson>`` or ``output/<lesson>``, when it exists; else None."""
    checkpoint = checkpoint.resolve()
    for folder in (checkpoint, *checkpoint.parents):
        if folder.parent.name in (paths.CHECKPOINT_DIR.name, paths.OUTPUT_DIR.name):
            output = folder.parent.parent / paths.OUTPUT_DIR.name / folder.name
            if output.is_dir():
                return output
    return None


def sink_of(path: Path) -> SinkLog | None:
    if (path / "_delta_log").is_dir():
        return SinkLog("delta", path)
    if (path / checkpoints.SINK_LOG).is_dir():
        return SinkLog("files", path)
    return None


def find_sinks(checkpoint: Path, query_id: str | None) -> list[SinkLog]:
    """The sinks of this query in its lesson's output folder (see the module's docstring)."""
    output = lesson_output(checkpoint)
    if output is None:
        candidates = []
    else:
        candidates = sorted(
            {log.parent for log in output.rglob("_delta_log")}
            | {log.parent for log in output.rglob(checkpoints.SINK_LOG)}
        )
    found = []
    for folder in candidates:
        sink = sink_of(folder)
        if sink is None:
            continue
        if sink.kind == "files" and folder.name == checkpoint.name:
            found.append(sink)
        elif sink.kind == "delta" and query_id and last_transaction(folder, query_id):
            found.append(sink)
    return found


# --- the parts of a report -----------------------------------------------------------------


def batch_lines(checkpoint: Path) -> list[str]:
    planned = checkpoints.batch_ids(checkpoint / checkpoints.OFFSETS)
    committed = checkpoints.batch_ids(checkpoint / checkpoints.COMMITS)
    lines = [
        line("offsets/", f"batches {batch_range(planned)}"),
        line("commits/", f"batches {batch_range(committed)}"),
        line("last committed", f"batch {committed[-1]}" if committed else "none"),
    ]
    waiting = [batch_id for batch_id in planned if not committed or batch_id > committed[-1]]
    if waiting:
        lines.append(
            line(
                "not committed",
                f"batch {batch_range(waiting)}: planned in offsets/, not in commits/; a restart "
                "runs it again with the same offsets",
            )
        )
    else:
        lines.append(line("not committed", "none"))
    return lines


def offsets_lines(checkpoint: Path) -> list[str]:
    """The newest offsets entry: its watermark and settings, then one line per source."""
    planned = checkpoints.batch_ids(checkpoint / checkpoints.OFFSETS)
    if not planned:
        return [line("sources", "none planned yet (offsets/ is empty)")]
    entry = checkpoints.read_offsets(checkpoint / checkpoints.OFFSETS / str(planned[-1]))
    settings = entry.settings
    watermark = settings.get("batchWatermarkMs", 0)
    lines = [
        line(
            "watermark",
            f"{utc(watermark)} (offsets/{planned[-1]})" if watermark else "none (0)",
        )
    ]
    conf = settings.get("conf", {})
    fixed = [
        f"{words} {str(conf[key]).rsplit('.', 1)[-1]}"
        for key, words in FIXED_SETTINGS.items()
        if key in conf
    ]
    if fixed:
        lines.append(line("fixed settings", ", ".join(fixed)))
    for index, text in enumerate(entry.sources):
        lines.extend(source_lines(checkpoint, index, text))
    return lines


def source_lines(checkpoint: Path, index: int, text: str) -> list[str]:
    """What one source's line of the newest offsets entry says, and a file source's files."""
    label = f"source {index}"
    if text.strip() == "-":
        return [line(label, "no offset yet")]
    try:
        offset = json.loads(text)
    except ValueError:
        return [line(label, f"unreadable offset: {text[:60]}")]
    log_offset = checkpoints.file_source_offset(text)
    if log_offset is not None:
        return [
            line(label, f"file source, log offset {log_offset}"),
            *part_lines(file_source_lines, checkpoint / checkpoints.SOURCES / str(index)),
        ]
    if isinstance(offset, dict) and "reservoirVersion" in offset:
        return [
            line(
                label,
                f"Delta table {offset.get('reservoirId')}: version {offset['reservoirVersion']}, "
                f"index {offset.get('index')}",
            )
        ]
    if isinstance(offset, dict) and kafka_offsets(offset):
        return [
            line(label if number == 0 else "", f"Kafka topic {topic}: {partitions}")
            for number, (topic, partitions) in enumerate(kafka_offsets(offset))
        ]
    if isinstance(offset, dict) and {"offset", "timestamp"} <= offset.keys():
        return [line(label, f"rate-micro-batch source, offset {offset['offset']}")]
    if isinstance(offset, int):
        return [line(label, f"offset {offset} (a count: a rate, socket or memory source)")]
    return [line(label, text[:100])]


def kafka_offsets(offset: dict) -> list[tuple[str, str]]:
    """[(topic, "partition 0 at 12, partition 1 at 9")] for a Kafka source's offsets, else []."""
    topics = []
    for topic, partitions in sorted(offset.items()):
        if not isinstance(partitions, dict) or not all(
            str(key).isdigit() and isinstance(value, int) for key, value in partitions.items()
        ):
            return []
        topics.append(
            (
                topic,
                ", ".join(
                    f"partition {key} at {partitions[key]}" for key in sorted(partitions, key=int)
                ),
            )
        )
    return topics


def logged_names(log: Path) -> dict[int, list[str]]:
    """{batch id: file names} of a log of files (``checkpoints.logged_files``)."""
    return {
        batch_id: list(dict.fromkeys(checkpoints.file_name(uri) for uri in uris))
        for batch_id, uris in checkpoints.logged_files(log).items()
    }


def files_by_batch(by_batch: dict[int, list[str]]) -> list[str]:
    """One line per batch, the newest SHOWN_BATCHES, each naming up to SHOWN_FILES files."""
    batch_ids = sorted(by_batch)
    lines = []
    if len(batch_ids) > SHOWN_BATCHES:
        older = batch_ids[:-SHOWN_BATCHES]
        count = sum(len(by_batch[batch_id]) for batch_id in older)
        lines.append(f"{INDENT}batches {batch_range(older)}: {count} files")
    for batch_id in batch_ids[-SHOWN_BATCHES:]:
        names = by_batch[batch_id]
        shown = ", ".join(names[:SHOWN_FILES])
        more = f" and {len(names) - SHOWN_FILES} more" if len(names) > SHOWN_FILES else ""
        lines.append(f"{INDENT}batch {batch_id}: {shown or '(no files)'}{more}")
    return lines


def file_source_lines(folder: Path) -> list[str]:
    if not folder.is_dir():
        return [f"{INDENT}its log {name_in_checkpoint(folder)}/ is missing"]
    by_batch = logged_names(folder)
    total = sum(len(names) for names in by_batch.values())
    return [
        f"{INDENT}files read, by batch ({name_in_checkpoint(folder)}/, {total} in all):",
        *files_by_batch(by_batch),
    ]


def state_lines(checkpoint: Path, spark) -> list[str]:
    """The stateful operators, from Spark's state-metadata and statestore readers."""
    if not (checkpoint / checkpoints.STATE).is_dir():
        return [line("state", "none (a stateless query)")]
    if spark is None:
        operators = " ".join(map(str, checkpoints.state_operators(checkpoint)))
        return [
            line(
                "state",
                f"state/ holds operators {operators or 'none'} "
                f"(read with Spark: run without {NO_STATE_FLAG})",
            )
        ]
    # The statestore reader asks the state store coordinator, which Spark 4.2 starts with the
    # session's StreamingQueryManager: in a session that never ran a query, only this starts it.
    spark.streams.active  # noqa: B018  (the look is what starts it)
    try:
        rows = state_reader.metadata_rows(
            spark.read.format("state-metadata").load(paths.uri(checkpoint))
        )
    except Exception as error:  # Spark's reader, on a damaged state/: show its first line
        return [line("state", f"unreadable by Spark's state-metadata reader: {first_line(error)}")]
    if not rows:
        return [line("state", "state/ holds no operator metadata yet")]
    table = [("id", "operator", "store", "partitions", "batches", "rows")]
    variables_of = []  # a transformWithState operator's state variables, below the table
    for operator_id, name, store, partitions, batches, variables in rows:
        if variables == "-":
            count = state_rows(spark, checkpoint, operator_id, store)
        else:
            count = "-"  # the statestore reader reads such state one variable at a time
            variables_of.append(f"{INDENT}operator {operator_id}'s state variables: {variables}")
        table.append((str(operator_id), name, store, str(partitions), batches, count))
    widths = [max(len(row[column]) for row in table) for column in range(len(table[0]))]
    lines = [line("state", "stateful operators (state-metadata; rows: statestore)")]
    for row in table:
        cells = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        lines.append(f"{INDENT}{cells}".rstrip())
    return lines + variables_of


def state_rows(spark, checkpoint: Path, operator_id: int, store: str) -> str:
    """How many rows one state store holds at the last commit, or "-" when the statestore reader
    cannot read that store on its own (a stream-stream join's stores are read by joinSide)."""
    try:
        return str(
            spark.read.format("statestore")
            .option("operatorId", operator_id)
            .option("storeName", store)
            .load(paths.uri(checkpoint))
            .count()
        )
    except Exception:  # shown as "-": the operator line above still says what the state is
        return "-"


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:160] if text else type(error).__name__


def last_transaction(table: Path, query_id: str) -> tuple[int, int] | None:
    """(txn version, table version) of the newest commit in a Delta table's JSON log that holds a
    ``txn`` action of ``query_id``, or None."""
    commits = sorted(
        (path for path in (table / "_delta_log").glob("*.json") if path.stem.isdigit()),
        key=lambda path: int(path.stem),
        reverse=True,
    )
    for commit in commits:
        for text in read_lines(commit):
            action = parse_json(text, commit) if text.strip() else {}
            txn = action.get("txn") if isinstance(action, dict) else None
            if isinstance(txn, dict) and txn.get("appId") == query_id:
                return txn["version"], int(commit.stem)
    return None


def delta_sink_lines(table: Path, query_id: str | None, last_commit: int | None) -> list[str]:
    versions = [
        int(path.stem) for path in (table / "_delta_log").glob("*.json") if path.stem.isdigit()
    ]
    newest = f"version {max(versions)}" if versions else "no version yet"
    return [
        line("sink", f"Delta table {paths.display(table)} ({newest})"),
        *part_lines(transaction_lines, table, query_id, last_commit),
    ]


def transaction_lines(table: Path, query_id: str | None, last_commit: int | None) -> list[str]:
    """This query's last transaction in a Delta table, against the checkpoint's last commit."""
    if query_id is None:
        return [f"{INDENT}without the query id, this query's transactions are unknown"]
    found = last_transaction(table, query_id)
    if found is None:
        return [f"{INDENT}no streaming transaction of this query in its log"]
    txn_version, table_version = found
    return [
        f"{INDENT}this query's last transaction: batch {txn_version} "
        f"(txn version {txn_version}, table version {table_version})",
        *sink_against_commits(txn_version, last_commit, "Delta"),
    ]


def file_sink_lines(folder: Path, last_commit: int | None) -> list[str]:
    return [
        line("sink", f"file sink {paths.display(folder)}"),
        *part_lines(sink_log_lines, folder, last_commit),
    ]


def sink_log_lines(folder: Path, last_commit: int | None) -> list[str]:
    """A file sink's _spark_metadata: its batches and the files of each."""
    by_batch = logged_names(folder / checkpoints.SINK_LOG)
    total = sum(len(names) for names in by_batch.values())
    lines = [
        f"{INDENT}_spark_metadata: batches {batch_range(sorted(by_batch))}, {total} files",
        *files_by_batch(by_batch),
    ]
    if by_batch:
        lines.extend(sink_against_commits(max(by_batch), last_commit, "the file sink"))
    return lines


def sink_against_commits(sink_batch: int, last_commit: int | None, sink: str) -> list[str]:
    """What a restart does when the sink holds a batch that commits/ does not (yet)."""
    if last_commit is not None and sink_batch <= last_commit:
        return []
    return [
        f"{INDENT}batch {sink_batch} is in the sink but not in commits/: a restart runs it "
        f"again and {sink} skips it"
    ]


def sink_lines(checkpoint: Path, query_id: str | None, sink: Path | None) -> list[str]:
    last = checkpoints.last_commit(checkpoint)
    if sink is not None:
        found = sink_of(sink)
        if found is None:
            return [
                line(
                    "sink",
                    f"{paths.display(sink)} is neither a Delta table (_delta_log/) nor a file "
                    "sink's folder (_spark_metadata/)",
                )
            ]
        sinks = [found]
    else:
        sinks = find_sinks(checkpoint, query_id)
    if not sinks:
        return [
            line(
                "sink",
                "no Delta table or file sink of this query found (name one with --sink PATH)",
            )
        ]
    lines = []
    for found in sinks:
        if found.kind == "delta":
            lines.extend(delta_sink_lines(found.path, query_id, last))
        else:
            lines.extend(file_sink_lines(found.path, last))
    return lines


def damage_lines(checkpoint: Path) -> list[str]:
    """What ``infra.checkpoint_health.diagnose`` finds damaged, with its safe way out."""
    damages = checkpoint_health.diagnose(checkpoint)
    if not damages:
        return [line("damage", "none found")]
    lines = []
    for damage in damages:
        lines.append(line("damage", f"{damage.kind}: {damage.what}"))
        lines.append(f"{INDENT}{'safe fix' if damage.safe else 'way out'}: {damage.fix}")
    return lines


def part_lines(read, *args) -> list[str]:
    """``read(*args)``, or one line saying what could not be read: a damaged file never stops
    the rest of the report."""
    try:
        return read(*args)
    except Unreadable as problem:
        return [f"{INDENT}{problem}"]
    except Exception as error:  # a damaged file parsed into something unexpected
        return [f"{INDENT}unreadable ({type(error).__name__}: {first_line(error)})"]


def describe(checkpoint: Path, *, spark=None, sink: Path | None = None) -> str:
    """The report of one query's checkpoint (``spark``: read its state with it; None: do not)."""
    lines = [f"Checkpoint {paths.display(checkpoint)}"]
    try:
        query_id = checkpoints.query_id(checkpoint)
        lines.append(line("query id", query_id or "none: metadata is missing"))
    except Unreadable as problem:
        query_id = None
        lines.append(line("query id", str(problem)))
    lines.extend(part_lines(batch_lines, checkpoint))
    lines.extend(part_lines(offsets_lines, checkpoint))
    lines.extend(part_lines(state_lines, checkpoint, spark))
    lines.extend(part_lines(sink_lines, checkpoint, query_id, sink))
    lines.extend(part_lines(damage_lines, checkpoint))
    return "\n".join(lines)


def report(root: Path, *, spark=None, sink: Path | None = None, state: bool = True) -> str:
    """The report of every query checkpoint under ``root``, one section each.

    ``state``: read the stateful operators' state with Spark: with ``spark`` when given, else
    with the active session or one started here (and stopped) for the first checkpoint that has
    ``state/``. ``sink`` names the sink of a single query's checkpoint.
    """
    root = Path(root)
    found = checkpoints.find(root)
    if not found:
        return (
            f"No query checkpoint in {paths.display(root)}: a query's checkpoint folder holds "
            "metadata, offsets/ and commits/ (e.g. checkpoints/03_file_streaming/transactions; "
            "a lesson's folder, checkpoints/03_file_streaming, holds one per query)."
        )
    started = None
    sections = []
    try:
        for checkpoint in found:
            if state and spark is None and (checkpoint / checkpoints.STATE).is_dir():
                spark, started = state_session()
            sections.append(describe(checkpoint, spark=spark if state else None, sink=sink))
    finally:
        if started is not None:
            started.stop()
    return "\n\n".join(sections)


def state_session():
    """(the session to read state with, the one started here to stop afterwards, or None)."""
    from pyspark.sql import SparkSession

    from common.session import get_spark

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, None
    # The state readers need no connector; one core is enough for a checkpoint's few files.
    spark = get_spark(STATE_APP_NAME, master="local[1]", ui=False)
    # Only what goes wrong, not the state store's notes on each version it loads.
    spark.sparkContext.setLogLevel("ERROR")
    return spark, spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python course.py checkpoint",
        description="Show what a query's checkpoint holds, and what is damaged (reads only).",
    )
    parser.add_argument(
        "folder", type=Path, metavar="DIR", help="a query's checkpoint, or a folder of several"
    )
    parser.add_argument(
        "--sink",
        type=Path,
        metavar="PATH",
        help="the query's Delta table or file sink folder, when the inspector does not find it",
    )
    parser.add_argument(
        NO_STATE_FLAG,
        dest="state",
        action="store_false",
        help="do not start Spark to read the stateful operators' state",
    )
    args = parser.parse_args(argv)
    folder = args.folder.resolve()
    if paths.is_remote(folder):
        print(
            f"{paths.uri(folder)} is on remote storage, out of this Python process's reach: "
            "copy the checkpoint to a local folder to inspect it.",
            file=sys.stderr,
        )
        return 1
    if not folder.is_dir():
        print(
            f"No folder {args.folder}: give a query's checkpoint folder "
            "(e.g. checkpoints/03_file_streaming/transactions) or a lesson's "
            "(checkpoints/03_file_streaming).",
            file=sys.stderr,
        )
        return 1
    if args.sink is not None and len(checkpoints.find(folder)) > 1:
        print(
            f"--sink names the sink of one query: give one query's checkpoint, not {args.folder}, "
            "which holds several.",
            file=sys.stderr,
        )
        return 1
    sink = args.sink.resolve() if args.sink else None
    text = report(folder, sink=sink, state=args.state)
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # The reader stopped early (python course.py checkpoint DIR | head): that is no error.
        # Python flushes stdout once more at exit, which would fail the same way: send it to
        # devnull first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    from infra.runner import run_lesson

    run_lesson(main)
