"""A stateful query's state, read back from its checkpoint, and the plumbing around it.

Spark's state data source reads the state a checkpoint holds, as a batch DataFrame:
``spark.read.format("state-metadata")`` lists the stateful operators, and
``spark.read.format("statestore")`` their rows (a lesson writes those reads itself; see
lesson 15). What is here only shows what they return, and sets up what they need:

- ``session_conf``: session settings for a block (e.g. the state store provider, which
  a query reads when it starts from a fresh checkpoint), restored afterwards;
- ``print_rows`` / ``as_text``: state rows (nested structs) as a plain table;
- ``print_metadata``: the state-metadata rows, one line per operator and store;
- ``print_states``: several of those, by title;
- ``print_changes``: a change feed, per micro-batch, which keys were updated or deleted;
- ``state_files``: which files each state partition's folder holds (how a provider writes);
- ``paths.import_lesson``: another lesson's module, to build what its state holds;
- ``run_scenario``: a query over a small finite input, for the checkpoint it leaves;
- ``other_lessons_checkpoints``: what lessons 07 and 09 leave, on a few of their events;
- ``count_events``: a small transformWithState query, whose state schema a restart changes;
- ``start_restarted``: run a query, then start another version of it on the same checkpoint
  (what a changed state schema meets); ``rows_of`` its output once it has ended.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterator, Sequence

from common import paths
from common.schemas import CLICK_SCHEMA, IMPRESSION_SCHEMA, SENSOR_SCHEMA
from infra.files import json_lines, write_atomically
from infra.runner import finish
from teaching.demos import Output, replay_streams
from teaching.microbatch import (
    collect_batches,
    finish_run,
    start_collecting,
    stream_batches,
    write_batches,
)
from teaching.narration import print_table

PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
HDFS_PROVIDER = (
    "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"  # Spark's default
)
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
# How state rows are encoded: 'unsaferow' (the default) or 'avro'; fixed at a checkpoint's first start.
ENCODING_CONF = "spark.sql.streaming.stateStore.encodingFormat"
AVAILABLE_NOW_TIMEOUT = 120  # a small availableNow query still running after this long is stuck
MAX_ROWS = 8  # rows print_rows shows; the rest are counted


@contextmanager
def session_conf(spark, settings: dict[str, str]) -> Iterator[None]:
    """Set session confs for the block, then put back what was there (unset if nothing was)."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def as_text(value) -> str:
    """A state cell as a reader wants it: a struct's fields joined by ', ' (one field: just it),
    times as 'HH:MM:SS' (the course's scenarios are all on one day, in UTC), None as 'null'."""
    if value is None:
        return "null"
    if isinstance(value, datetime):
        return value.strftime("%H:%M:%S")
    if isinstance(value, tuple):  # a Row is a tuple
        return ", ".join(as_text(field) for field in value)
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    return str(value)


def text_rows(rows: Sequence, columns: Sequence[str]) -> list[tuple[str, ...]]:
    """``rows`` as tuples of ``as_text`` cells in the order of ``columns``, sorted by the first
    (the key); rows of one key keep Spark's order (a list state's elements, in list order)."""
    return sorted(
        (tuple(as_text(row[column]) for column in columns) for row in rows),
        key=lambda cells: cells[0],
    )


def print_rows(
    title: str, df, columns: Sequence[str] | None = None, *, limit: int = MAX_ROWS
) -> list[tuple]:
    """Print a (small) batch DataFrame of state rows under ``title``; returns the rows as text."""
    columns = list(columns or [column for column in df.columns if column != "partition_id"])
    rows = text_rows(df.collect(), columns)
    print(f"{title}: {len(rows)} row{'s' * (len(rows) != 1)}", flush=True)
    if rows:
        more = (
            [(f"... {len(rows) - limit} more",) + ("",) * (len(columns) - 1)]
            if len(rows) > limit
            else []
        )
        print_table(tuple(columns), rows[:limit] + more)
    return rows


def metadata_rows(df) -> list[tuple]:
    """The state-metadata rows: (operator id, operator, store, partitions, 'first-last' batch,
    the state variables of a transformWithState operator, or '-')."""
    rows = []
    for row in df.orderBy("operatorId", "stateStoreName").collect():
        properties = json.loads(row.operatorProperties) if row.operatorProperties else {}
        variables = ", ".join(
            f"{v['stateName']} ({v['stateVariableType']}{', TTL' if v['ttlEnabled'] else ''})"
            for v in properties.get("stateVariables", [])
        )
        rows.append(
            (
                row.operatorId,
                row.operatorName,
                row.stateStoreName,
                row.numPartitions,
                f"{row.minBatchId}-{row.maxBatchId}",
                variables or "-",
            )
        )
    return rows


def print_metadata(df) -> list[tuple]:
    rows = metadata_rows(df)
    print_table(("id", "operator", "store", "partitions", "batches", "state variables"), rows)
    return rows


def change_rows(df, key: Callable = as_text) -> list[tuple[int, str, str]]:
    """A change feed as (batch, keys updated, keys deleted), one row per micro-batch that changed
    something; ``key(row.key)`` names a key (a map state's entries are 'key/user key')."""
    by_batch: dict[int, dict[str, set]] = {}
    for row in df.collect():
        name = key(row.key) + (f"/{as_text(row.user_map_key)}" if "user_map_key" in row else "")
        by_batch.setdefault(row.batch_id, {"update": set(), "delete": set()})[row.change_type].add(
            name
        )
    return [
        (batch, " ".join(sorted(kinds["update"])) or "-", " ".join(sorted(kinds["delete"])) or "-")
        for batch, kinds in sorted(by_batch.items())
    ]


def print_changes(df) -> list[tuple]:
    rows = change_rows(df)
    print_table(("batch", "updated", "deleted"), rows)
    return rows


def print_states(states: dict) -> None:
    """Print each {title: state DataFrame}: state-metadata by operator, a change feed (a 'change_type'
    column) by micro-batch, other state as rows."""
    for title, df in states.items():
        if "operatorProperties" in df.columns:  # state-metadata
            print_metadata(df)
        elif "change_type" in df.columns:
            print(f"{title}: what each micro-batch changed", flush=True)
            print_changes(df)
        else:
            print_rows(title, df)


def state_files(checkpoint: Path, operator: int = 0, partition: int = 0) -> list[str]:
    """The files one state partition keeps in the checkpoint, checksums left out, in batch order:
    '1.delta' (HDFS-backed), '1.zip' (a RocksDB snapshot), '1.changelog' (RocksDB's changelog)."""
    folder = checkpoint / "state" / str(operator) / str(partition)
    names = [
        path.name for path in folder.glob("*") if path.is_file() and not path.name.endswith(".crc")
    ]

    def order(name: str):
        stem = name.split(".")[0].split("_")[0]
        return (int(stem), name) if stem.isdigit() else (1 << 62, name)

    return sorted(names, key=order)


def run_scenario(
    spark,
    inputs: dict[str, tuple[Sequence[Sequence[dict]], object]],
    build: Callable,
    workdir: Path,
    *,
    output_mode: str = "append",
) -> Path:
    """Run ``build(*streams)`` over a finite scenario (``demos.replay_streams``' inputs: name ->
    (batches, schema)), afresh, without printing: the checkpoint it leaves, to read its state."""
    replay_streams(
        spark, inputs, {"query": Output(build, output_mode)}, workdir, describe_rows=str, show=False
    )
    return workdir / "checkpoints" / "query"


def other_lessons_checkpoints(spark, workdir: Path) -> dict[str, Path]:
    """Lesson 07's windowed count and lesson 09's stream-stream join (their own build_ functions),
    each run afresh on the first two micro-batches of its lesson's scenario: {'07'|'09': checkpoint}."""
    l07, l09 = paths.import_lesson("07_watermarking"), paths.import_lesson("09_stream_joins")
    readings = {"readings": (l07.to_readings(l07.SCENARIO[:2]), SENSOR_SCHEMA)}
    ads = {
        "impressions": (l09.IMPRESSIONS[:2], IMPRESSION_SCHEMA),
        "clicks": (l09.CLICKS[:2], CLICK_SCHEMA),
    }
    return {
        "07": run_scenario(spark, readings, l07.build_window_counts, workdir / "07"),
        "09": run_scenario(spark, ads, l09.build_ad_join, workdir / "09"),
    }


def count_events(state_schema: str) -> Callable:
    """A transformWithState query (stream -> stream) that counts events per user in a ValueState of
    ``state_schema`` (its first field: the count; any others stay null), and outputs (user_id,
    events, kept: what the state held before, as text)."""
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    class CountEvents(StatefulProcessor):
        def init(self, handle):
            self.counts = handle.getValueState("counts", state_schema)

        def handleInputRows(self, key, rows, timerValues):
            kept = self.counts.get()
            events = (kept[0] if kept else 0) + sum(1 for _ in rows)
            self.counts.update((events,) + (None,) * state_schema.count(","))
            yield Row(user_id=key[0], events=events, kept=str(kept))

    return lambda events: events.groupBy("user_id").transformWithState(
        CountEvents(), "user_id STRING, events INT, kept STRING", "Update", "None"
    )


def rows_of(query, run) -> list:
    """Every row a query started by ``start_restarted`` (or ``microbatch.start_collecting`` with
    availableNow) outputs, once it has ended by itself; its failure is raised."""
    finish([query], AVAILABLE_NOW_TIMEOUT)
    return finish_run(query, run).rows()


def start_restarted(
    spark,
    first: Callable,
    second: Callable,
    batches: Sequence[Sequence[dict]],
    schema,
    workdir: Path,
    *,
    settings: dict[str, str] | None = None,
    output_mode: str = "update",
) -> tuple:
    """Run ``first(stream)`` on batch 0 to its end, then start ``second(stream)`` on batch 1 from the
    same checkpoint, as a restart with changed code would: (the started query, its Run so far).
    Wait for it (``runner.finish``), then ``microbatch.finish_run(query, run)`` has its rows; or hand
    the query to ``demos.show_refusal``. ``settings`` (session confs, e.g. the state encoding) hold
    for the first run only: what a checkpoint fixes at its start, it keeps."""
    if len(batches) != 2:
        raise ValueError("start_restarted takes two micro-batches, one per run")
    if workdir.exists():  # from a fresh start every time
        paths.remove_tree(workdir, allow_outside=True)
    write_batches(workdir / "input", batches[:1])
    with session_conf(spark, settings or {}):
        collect_batches(
            first(stream_batches(spark, workdir / "input", schema)),
            workdir / "checkpoint",
            output_mode=output_mode,
        )
    write_atomically(
        workdir / "input", "batch-0001.json", json_lines(batches[1])
    )  # new input after the restart
    return start_collecting(
        second(stream_batches(spark, workdir / "input", schema)),
        workdir / "checkpoint",
        output_mode=output_mode,
        trigger={"availableNow": True},
    )
