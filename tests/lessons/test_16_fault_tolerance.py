"""Lesson 16: fault tolerance. In-process: a replayed batch id into Delta and into plain files,
the windowed count across a restart, the refused grouping key and the two ways out, the socket
source's restart. The real SIGKILLs of a child process: the smoke test, which runs the lesson as a
learner does.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import lesson16_crash_harness as crash
import pytest
from pyspark.errors import StreamingQueryException

from conftest import load_lesson, prose, run_script, write_by_hand
from infra import checkpoints, errors
from infra.runner import finish

LESSON = "16_fault_tolerance"
lesson = load_lesson(LESSON)

# The windows of parts a and b (records R-0001..R-0024 of the lesson's seed), as the lesson
# prints them.
WINDOWS_A_B = [
    (datetime(2025, 1, 15, 10, 30), 5, 571.85),
    (datetime(2025, 1, 15, 10, 31), 7, 662.32),
    (datetime(2025, 1, 15, 10, 32), 6, 557.66),
    (datetime(2025, 1, 15, 10, 33), 6, 581.95),
]


def folders(tmp_path) -> SimpleNamespace:
    output = tmp_path / "out"
    return SimpleNamespace(
        output=output,
        input=output / "input",
        events=output / "events",
        plain=output / "plain",
        windows=output / "windows",
        logs=output / "logs",
        checkpoints=tmp_path / "checkpoints",
    )


def ids_of(part: str) -> list[str]:
    first, count = lesson.PARTS[part]
    return [f"R-{number:04d}" for number in range(first, first + count)]


def test_a_replayed_batch_id_is_skipped_by_delta_and_doubled_by_plain_files(spark, tmp_path):
    where = folders(tmp_path)
    lesson.write_part(where, "a")
    batch = spark.read.schema(lesson.SCHEMA).json(str(where.input))
    # what a streaming batch carries
    spark.sparkContext.setLocalProperty("sql.streaming.queryId", "test-query")
    try:
        lesson.write_events(batch, 0, where)
        lesson.write_events(batch, 0, where)  # batch 0 again, as after a kill before its commit
    finally:
        spark.sparkContext.setLocalProperty("sql.streaming.queryId", None)
    delta_ids, plain_ids = lesson.read_ids(spark, where)
    assert sorted(delta_ids) == ids_of("a")
    assert Counter(plain_ids) == Counter(ids_of("a") * 2)
    delta, plain = lesson.read_tallies(spark, where)
    assert (delta.lost, delta.duplicated, plain.lost, plain.duplicated) == (0, 0, 0, 12)


def test_the_streaming_file_sink_writes_a_replayed_batch_once_through_spark_metadata(
    spark, tmp_path
):
    """What section 1 says of Spark's own file sink, unlike batch.write in foreachBatch: a batch
    cut off after its files were written (no _spark_metadata entry, no commit) runs again, and a
    read through the folder counts it once; the files themselves hold it twice."""
    where = folders(tmp_path)
    lesson.write_part(where, "a")
    output, checkpoint = tmp_path / "sink", tmp_path / "sink-checkpoint"

    def run_file_sink() -> None:
        query = (
            lesson.read_records(spark, where.input)
            .writeStream.format("json")
            .option("path", str(output))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        finish([query])

    run_file_sink()
    # A crash after the files of batch 0 were written, before the sink logged them and before
    # Spark committed the batch: both logs lose their entry 0, the files stay.
    for log in (output / "_spark_metadata", checkpoint / "commits"):
        for name in ("0", ".0.crc"):
            (log / name).unlink(missing_ok=True)
    run_file_sink()  # batch 0 again: same id, same file

    assert checkpoints.last_commit(checkpoint) == 0
    through_log = spark.read.schema(lesson.SCHEMA).json(str(output)).select("record_id")
    assert sorted(row[0] for row in through_log.collect()) == ids_of("a")
    # A reader of the files themselves (a glob bypasses _spark_metadata) sees both attempts.
    every_file = spark.read.schema(lesson.SCHEMA).json(str(output / "*.json")).select("record_id")
    assert Counter(row[0] for row in every_file.collect()) == Counter(ids_of("a") * 2)


def test_window_counts_across_a_restart_then_a_refused_key_and_the_two_ways_out(spark, tmp_path):
    where = folders(tmp_path)
    checkpoint = where.checkpoints / "windows"
    lesson.write_part(where, "a")
    finish(
        [
            lesson.start_windows(
                lesson.build_window_counts(lesson.read_records(spark, where.input)),
                where.windows,
                checkpoint,
            )
        ]
    )
    lesson.write_part(where, "b")  # the restart on the same checkpoint reads only part b
    finish(
        [
            lesson.start_windows(
                lesson.build_window_counts(lesson.read_records(spark, where.input)),
                where.windows,
                checkpoint,
            )
        ]
    )
    assert lesson.read_windows(spark, where.windows) == WINDOWS_A_B
    records = crash.numbered_records(
        1, 24, seed=lesson.SEED, base_time=lesson.config.BASE_EVENT_TIME
    )
    assert sorted(Counter(record["event_time"][11:16] for record in records).items()) == [
        ("10:30", 5),
        ("10:31", 7),
        ("10:32", 6),
        ("10:33", 6),
    ]
    finish([lesson.start_uninterrupted(spark, where)])
    assert lesson.read_windows(spark, where.output / "windows_uninterrupted") == WINDOWS_A_B

    lesson.write_part(where, "c")
    refused = lesson.start_by_user(spark, where, checkpoint)
    with pytest.raises(StreamingQueryException) as failure:
        refused.awaitTermination(120)
    assert "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]" in str(failure.value)
    assert "grouping keys" in errors.explain(failure.value)
    before = checkpoints.last_commit(checkpoint)
    # the allowed change goes on from the same checkpoint
    finish([lesson.start_filtered(spark, where)])
    assert checkpoints.last_commit(checkpoint) > before
    assert lesson.read_windows(spark, where.windows)[-1][:2] == (datetime(2025, 1, 15, 10, 34), 4)
    # a new checkpoint
    finish([lesson.start_by_user(spark, where, where.checkpoints / "windows_by_user")])
    by_user = spark.read.format("delta").load(str(where.output / "windows_by_user"))
    assert by_user.groupBy().sum("records").first()[0] == 28  # every record read again


def test_socket_lines_sent_while_no_query_listens_are_gone(spark, tmp_path, capsys):
    result = crash.socket_gap(
        lambda server, seen, checkpoint: lesson.start_lines(spark, server, seen, checkpoint),
        tmp_path,
    )
    assert result["first"] == ["line 1", "line 2"]
    assert result["new"] == ["line 4"]
    assert "sent while down" not in result["old"] + result["new"]
    assert "Offsets committed out of order: 1 followed by -1" in result["refusal"]
    assert "'sent while down' reached 0 queries" in capsys.readouterr().out


def processes_using(home: Path) -> list[str]:
    """Processes whose command line or environment names ``home`` (the lesson, its children,
    their JVMs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                seen = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
            except OSError:
                continue
            if str(home).encode() in seen:
                found.append(f"{entry.name}: {(entry / 'cmdline').read_bytes()[:200]!r}")
    return found


def test_a_replay_split_otherwise_loses_rows_behind_a_partition_epoch_guard_not_a_record_key(
    tmp_path,
):
    from pyspark.sql import Row

    rows = [Row(record_id=f"R-{n:04d}", amount=float(n)) for n in range(1, 7)]
    guard = lesson.PartitionEpochGuard(tmp_path / "guard.db")
    keyed = lesson.RecordKeyedWriter(tmp_path / "keyed.db")
    both = lesson.BothWriters(guard, keyed)

    # Epoch 0 in two partitions; the process dies after partition 0, before partition 1.
    write_by_hand(both, 0, 0, rows[:3])
    # A failed task of partition 1: neither writer keeps anything of it.
    write_by_hand(both, 1, 0, rows[3:4], error=RuntimeError("killed"))
    assert crash.sqlite_ids(tmp_path / "guard.db") == ["R-0001", "R-0002", "R-0003"]
    assert crash.sqlite_ids(tmp_path / "keyed.db") == ["R-0001", "R-0002", "R-0003"]

    # The replay splits epoch 0 into ONE partition: the guard skips all of it.
    write_by_hand(both, 0, 0, rows)
    assert crash.tally(
        [row.record_id for row in rows], crash.sqlite_ids(tmp_path / "guard.db")
    ) == crash.Tally(lost=3, duplicated=0, unexpected=0)
    assert sorted(crash.sqlite_ids(tmp_path / "keyed.db")) == [row.record_id for row in rows]

    # A replay split into three: the guard writes partition 1's and 2's rows, some a second time.
    write_by_hand(both, 1, 0, rows[2:4])
    write_by_hand(both, 2, 0, rows[4:])
    assert Counter(crash.sqlite_ids(tmp_path / "guard.db")) == Counter(
        ["R-0001", "R-0002", "R-0003", "R-0003", "R-0004", "R-0005", "R-0006"]
    )
    assert sorted(crash.sqlite_ids(tmp_path / "keyed.db")) == [row.record_id for row in rows]


# The full-length run (about a minute on 2 cores) belongs to the crash lane
# ('python course.py test -m crash', which CI runs) and to the tour, not to every test run.
@pytest.mark.smoke
@pytest.mark.crash
def test_lesson_16_kills_its_child_twice_and_loses_nothing(course_home):
    result = run_script("streaming_tutorial/16_fault_tolerance.py", home=course_home, timeout=400)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert (
        "kill 1, before the offsets of part-b.json are written: events: offsets/ 0, commits/ 0; "
        "windows: offsets/ 0, commits/ 0"
    ) in out
    assert (
        "kill 2, after the sink wrote batch 1, before its commit: "
        "events: offsets/ 0 1, commits/ 0; windows: offsets/ 0 1, commits/ 0"
    ) in out
    assert "Delta table (txnAppId/txnVersion): rows lost: 0, rows duplicated: 0" in out
    assert "batch.write.json() (no batch id):  rows lost: 0, rows duplicated: 12" in out
    # Section 2: the checkpoint inspector (python course.py checkpoint) on the windows query.
    windows = course_home / "checkpoints" / LESSON / "this-run" / "windows"
    query_id = json.loads((windows / "metadata").read_text())["id"]
    table = course_home / "output" / LESSON / "this-run" / "windows"
    assert (
        f"Checkpoint {windows}\n"
        f"  query id        {query_id}\n"
        "  offsets/        batches 0 1\n"
        "  commits/        batches 0 1\n"
        "  last committed  batch 1\n"
        "  not committed   none\n"
        # the newest event of part-a.json (batch 0), 10:31:58, less the 1-minute delay
        "  watermark       2025-01-15 10:30:58 UTC (offsets/1)\n"
    ) in out
    assert (
        "  source 0        file source, log offset 1\n"
        "                  files read, by batch (sources/0/, 2 in all):\n"
        "                  batch 0: part-a.json\n"
        "                  batch 1: part-b.json\n"
        "  state           stateful operators (state-metadata; rows: statestore)\n"
        "                  id  operator        store    partitions  batches  rows\n"
    ) in out
    # one partition per core of the machine (common/session.py); 4 windows, none closed yet
    assert re.search(r"\n                  0   stateStoreSave  default  \d +  0-1      4\n", out)
    assert (
        f"  sink            Delta table {table} (version 1)\n"
        "                  this query's last transaction: batch 1 (txn version 1, table version 1)"
    ) in out
    assert "killed twice: 4 windows; uninterrupted run: 4 windows; equal: True" in out
    assert "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]" in out
    assert "a) a new checkpoint: all 28 records read again" in out
    assert (
        "Offsets committed out of order" in out
        and "a restart on a new checkpoint received: ['line 4']" in out
    )
    assert "Delta found (query id, 1) in its log and skipped it" in prose(out)
    assert 'writeStream.format("json") is exactly-once by itself' in prose(out)
    # Section 6: epoch 0 split in two by the child, killed between its partitions, replayed in
    # one partition here. Part a's 12 records: the split falls after R-0007.
    assert (
        "epoch 0 in the child, spark.sql.files.maxPartitionBytes 584:\n"
        "  partition 0 = R-0001..R-0007, partition 1 = R-0008..R-0012\n"
        "kill 3, after partition 0 of epoch 0 wrote 7 rows, before partition 1 did\n"
        "epoch 0 again, in this process, with Spark's default split:\n"
        "  partition 0 = R-0001..R-0012\n"
        "ForeachWriter guarded by (partition, epoch): rows lost: 5, rows duplicated: 0\n"
        "  lost for good: R-0008, R-0009, R-0010, R-0011, R-0012\n"
        "ForeachWriter keyed by record_id:            rows lost: 0, rows duplicated: 0\n"
    ) in out
    foreach = course_home / "output" / LESSON / "this-run"
    guarded = crash.sqlite_ids(foreach / "foreach_guard.db")
    keyed = crash.sqlite_ids(foreach / "foreach_keyed.db")
    assert sorted(guarded) == ids_of("a")[:7]  # partition 0 of the child, never partition 1
    assert sorted(keyed) == ids_of("a")  # every record, once
    assert (
        "  sink               after a replay      how\n"
        "  files              exactly-once        _spark_metadata lists each batch's files\n"
        "  Delta              exactly-once        its log holds (query id, batch id)\n"
        "  Kafka, both modes  at-least-once       a replay sends again: dedupe by key\n"
        "  foreachBatch       at-least-once       exactly-once if keyed by query + batch id\n"
        "  foreach            at-least-once       idempotent if keyed by the data (section 6)\n"
        "  memory, console    not fault-tolerant  nothing survives the process\n"
    ) in out
    logs = course_home / "output" / "16_fault_tolerance" / "this-run" / "logs"
    assert sorted(path.name for path in logs.glob("*.log")) == [
        "1-wait.log",
        "2-after-sink.log",
        "3-foreach.log",
    ]
    assert "paused at events@after-sink of batch 1" in (logs / "2-after-sink.log").read_text()
    assert "paused at foreach-part0@after-sink of batch 0" in (logs / "3-foreach.log").read_text()
    assert processes_using(course_home) == []  # no child, no JVM outlived the lesson


def next_batch_ms(now_ms: int, interval_ms: int) -> int:
    """When Spark's processing-time trigger fires next after a batch that started at now_ms
    (ProcessingTimeExecutor.nextBatchTime: the next whole multiple of the interval)."""
    return now_ms // interval_ms * interval_ms + interval_ms


def interval_ms(text: str) -> int:
    """'1 hour', '36500 days' -> milliseconds (the units this lesson uses)."""
    count, unit = text.split()
    return int(count) * {"hour": 3_600_000, "days": 86_400_000}[unit]


@pytest.mark.parametrize(
    "clock",
    [
        "2026-11-26T09:59:59.900+00:00",  # just before the top of an hour
        "2026-12-31T23:59:59.999+00:00",  # just before midnight and a new year
        "2030-06-15T12:00:00.000+00:00",
    ],
)
def test_the_child_waits_for_its_kill_whatever_the_clock(clock):
    # Kill 1 must find part-b.json unplanned: after batch 0 the child's trigger may not fire
    # again while the lesson runs (a few minutes). "1 hour" failed this a moment before the hour.
    started = int(datetime.fromisoformat(clock).timestamp() * 1000)
    interval = interval_ms(lesson.WAIT_FOR_KILL["processingTime"])
    a_day = 86_400_000
    assert next_batch_ms(started, interval) - started > a_day
    assert next_batch_ms(started, interval_ms("1 hour")) - started < a_day  # the old trigger
