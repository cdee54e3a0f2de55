"""teaching.inspect_checkpoint (python course.py checkpoint DIR) on checkpoints written by real
queries: a windowed count from files into a file sink, files into a Delta table (a batch left
uncommitted, then damaged in four ways), Kafka; and its command line (main, and course.py's
checkpoint command run where the learner is).

The checkpoints sit in a lesson's layout (``checkpoints/<lesson>/<query>`` beside
``output/<lesson>/``) so the inspector finds each query's sink by itself, as for a lesson.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from lesson15_state_demos import session_conf
from pyspark.sql import functions as F

from conftest import ROOT, iso_at
from infra import checkpoint_health, checkpoints
from infra.runner import finish
from teaching import inspect_checkpoint
from teaching.microbatch import stream_batches, write_batches

# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11
# deprecates (as in tests/lessons/test_08_kafka_streaming.py).
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]
LESSON = "99_inspected"
SCHEMA = "user_id STRING, event_time TIMESTAMP, amount DOUBLE"
# Three files, one per micro-batch (maxFilesPerTrigger=1), two users each.
BATCHES = [
    [
        {"user_id": "U1", "event_time": iso_at("10:30:00"), "amount": 1.0},
        {"user_id": "U2", "event_time": iso_at("10:30:10"), "amount": 2.0},
    ],
    [
        {"user_id": "U1", "event_time": iso_at("10:31:00"), "amount": 3.0},
        {"user_id": "U2", "event_time": iso_at("10:31:20"), "amount": 4.0},
    ],
    [
        {"user_id": "U1", "event_time": iso_at("10:32:30"), "amount": 5.0},
        {"user_id": "U2", "event_time": iso_at("10:32:40"), "amount": 6.0},
    ],
]
FILES = ["batch-0000.json", "batch-0001.json", "batch-0002.json"]
# The newest event (10:32:40) less the 1-minute watermark delay.
WATERMARK = datetime(2025, 1, 15, 10, 31, 40, tzinfo=timezone.utc)


def lesson_layout(home: Path, query: str) -> SimpleNamespace:
    return SimpleNamespace(
        input=home / "data" / "input",
        checkpoint=home / "checkpoints" / LESSON / query,
        output=home / "output" / LESSON,
    )


def report_lines(text: str) -> list[str]:
    return text.splitlines()


def without_damage(lines: list[str]) -> list[str]:
    """The report before its damage section (infra.checkpoint_health's)."""
    for index, text in enumerate(lines):
        if text.startswith("  damage"):
            assert lines[index:] == ["  damage          none found"], lines[index:]
            return lines[:index]
    return lines


def query_id(checkpoint: Path) -> str:
    return json.loads((checkpoint / "metadata").read_text())["id"]


def files_section(first_label: str, folder: str) -> list[str]:
    return [
        f"  {first_label}",
        f"                  files read, by batch ({folder}/, 3 in all):",
        *(f"                  batch {number}: {name}" for number, name in enumerate(FILES)),
    ]


# --- a stateful query into a file sink -----------------------------------------------------


def test_a_windowed_count_into_a_file_sink_shows_its_batches_files_state_and_sink(spark, tmp_path):
    where = lesson_layout(tmp_path, "windows")
    write_batches(where.input, BATCHES)
    sink = where.output / "windows"  # the checkpoint's name: the inspector finds it by that
    counts = (
        stream_batches(spark, where.input, SCHEMA)
        .withWatermark("event_time", "1 minute")
        .groupBy(F.window("event_time", "1 minute"), "user_id")
        .count()
        .select("window.start", "user_id", "count")
    )
    with session_conf(spark, {"spark.sql.shuffle.partitions": "2"}):
        query = (
            counts.writeStream.format("json")
            .outputMode("append")
            .option("path", str(sink))
            .option("checkpointLocation", str(where.checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        finish([query])

    # The checkpoint model (infra.checkpoints) on this real checkpoint, against the query itself.
    assert checkpoints.find(tmp_path) == [where.checkpoint]  # not the sink's folder
    assert checkpoints.query_id(where.checkpoint) == query.id
    assert checkpoints.batch_ids(where.checkpoint / "offsets") == [0, 1, 2, 3]
    assert checkpoints.last_commit(where.checkpoint) == 3
    assert checkpoints.source_files(where.checkpoint, committed_only=True) == set(FILES)
    assert checkpoints.state_operators(where.checkpoint) == [0]
    # A state version per batch (version 1 after batch 0), in each of the 2 partitions.
    deltas = [name for name in checkpoints.state_files(where.checkpoint, 0, 1) if "delta" in name]
    assert deltas == ["1.delta", "2.delta", "3.delta", "4.delta"]
    assert list(checkpoints.logged_files(sink / checkpoints.SINK_LOG)) == [0, 1, 2, 3]

    lines = without_damage(report_lines(inspect_checkpoint.report(where.checkpoint, spark=spark)))

    # Batches 0-2 read a file each; batch 3 read nothing: the watermark moved, windows closed.
    assert lines[:17] == [
        f"Checkpoint {where.checkpoint}",
        f"  query id        {query_id(where.checkpoint)}",
        "  offsets/        batches 0-3",
        "  commits/        batches 0-3",
        "  last committed  batch 3",
        "  not committed   none",
        f"  watermark       {WATERMARK:%Y-%m-%d %H:%M:%S} UTC (offsets/3)",
        "  fixed settings  shuffle partitions 2, state store HDFSBackedStateStoreProvider",
        *files_section("source 0        file source, log offset 2", "sources/0"),
        "  state           stateful operators (state-metadata; rows: statestore)",
        "                  id  operator        store    partitions  batches  rows",
        # Windows 10:31 and 10:32 of both users: 10:30's two were written out and dropped.
        "                  0   stateStoreSave  default  2           0-3      4",
        f"  sink            file sink {sink}",
    ]
    written = sorted(path.name for path in sink.glob("part-*"))
    assert lines[17] == f"                  _spark_metadata: batches 0-3, {len(written)} files"
    listed = [name for text in lines[18:] for name in text.split(": ", 1)[1].split(", ")]
    assert sorted(listed) == written  # every file the sink wrote, each in one batch's line
    assert [text.split(":")[0].strip() for text in lines[18:]] == [
        "batch 0",
        "batch 1",
        "batch 2",
        "batch 3",
    ]


# --- files into a Delta table, a batch cut off before its commit --------------------------


@pytest.fixture(scope="module")
def delta_checkpoint(spark, tmp_path_factory) -> SimpleNamespace:
    """A query's checkpoint and its Delta table after three batches, as written: the tests copy
    it before they change it."""
    where = lesson_layout(tmp_path_factory.mktemp("delta-home"), "events")
    write_batches(where.input, BATCHES)
    where.table = where.output / "events_table"  # another name: found by the query id
    query = (
        stream_batches(spark, where.input, SCHEMA)
        .writeStream.format("delta")
        .option("checkpointLocation", str(where.checkpoint))
        .trigger(availableNow=True)
        .start(str(where.table))
    )
    finish([query])
    # A Delta table of the same lesson written by no stream: never taken for this query's sink.
    spark.range(1).write.format("delta").save(str(where.output / "other_table"))
    return where


def copy_of(where: SimpleNamespace, home: Path) -> SimpleNamespace:
    """The module's checkpoint and tables, copied into ``home``."""
    shutil.copytree(where.checkpoint.parents[2], home, dirs_exist_ok=True)
    copied = lesson_layout(home, "events")
    copied.table = copied.output / "events_table"
    return copied


def test_a_batch_in_the_delta_table_but_not_in_commits_is_shown_then_skipped_on_restart(
    spark, delta_checkpoint, tmp_path
):
    where = copy_of(delta_checkpoint, tmp_path)
    # A crash after Delta committed batch 2, before Spark wrote commits/2.
    assert checkpoints.forget_last_commit(where.checkpoint) == 2

    lines = without_damage(report_lines(inspect_checkpoint.report(where.checkpoint)))

    assert lines == [
        f"Checkpoint {where.checkpoint}",
        f"  query id        {query_id(where.checkpoint)}",
        "  offsets/        batches 0-2",
        "  commits/        batches 0 1",
        "  last committed  batch 1",
        "  not committed   batch 2: planned in offsets/, not in commits/; a restart runs it "
        "again with the same offsets",
        "  watermark       none (0)",
        *lines[7:8],  # the session's settings
        *files_section("source 0        file source, log offset 2", "sources/0"),
        "  state           none (a stateless query)",
        f"  sink            Delta table {where.table} (version 2)",
        "                  this query's last transaction: batch 2 (txn version 2, table version 2)",
        "                  batch 2 is in the sink but not in commits/: a restart runs it again "
        "and Delta skips it",
    ]
    # What the report says a restart does: batch 2 again, and Delta keeps one copy of it. (The
    # source's log names the files where they were written: the copy reads them there.)
    query = (
        stream_batches(spark, delta_checkpoint.input, SCHEMA)
        .writeStream.format("delta")
        .option("checkpointLocation", str(where.checkpoint))
        .trigger(availableNow=True)
        .start(str(where.table))
    )
    finish([query])
    assert spark.read.format("delta").load(str(where.table)).count() == 6
    after = without_damage(report_lines(inspect_checkpoint.report(where.checkpoint)))
    assert after[3:6] == [
        "  commits/        batches 0-2",
        "  last committed  batch 2",
        "  not committed   none",
    ]
    assert after[-2:] == [
        f"  sink            Delta table {where.table} (version 2)",
        "                  this query's last transaction: batch 2 (txn version 2, table version 2)",
    ]


def cut_newest_offsets(where) -> None:
    newest = where.checkpoint / "offsets" / "2"
    newest.write_bytes(newest.read_bytes()[:20])  # 'v1' and the start of its settings


def remove_metadata(where) -> None:
    (where.checkpoint / "metadata").unlink()


def garble_source_log(where) -> None:
    (where.checkpoint / "sources" / "0" / "1").write_bytes(b"\xff\xfe not a log \x00")


def empty_delta_commit(where) -> None:
    (where.table / "_delta_log" / "00000000000000000002.json").write_text("{not json\n")


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (
            cut_newest_offsets,
            ["                  offsets/2 unreadable (not the JSON Spark writes)"],
        ),
        (
            remove_metadata,
            [
                "  query id        none: metadata is missing",
                "                  without the query id, this query's transactions are unknown",
            ],
        ),
        (garble_source_log, ["                  sources/0/1 unreadable (UnicodeDecodeError)"]),
        (
            empty_delta_commit,
            [
                "                  _delta_log/00000000000000000002.json unreadable "
                "(not the JSON Spark writes)"
            ],
        ),
    ],
    ids=["offsets cut short", "metadata missing", "source log garbled", "Delta log garbled"],
)
def test_a_damaged_file_is_shown_unreadable_and_the_rest_still_prints(
    delta_checkpoint, tmp_path, damage, expected
):
    where = copy_of(delta_checkpoint, tmp_path)
    damage(where)

    lines = report_lines(inspect_checkpoint.report(where.checkpoint, sink=where.table))

    for text in expected:
        assert text in lines
    # The parts that do not depend on the damaged file are all there.
    assert "  commits/        batches 0-2" in lines
    assert "  state           none (a stateless query)" in lines
    assert f"  sink            Delta table {where.table} (version 2)" in lines


def test_the_damage_section_prints_what_checkpoint_health_finds(
    delta_checkpoint, tmp_path, monkeypatch
):
    where = copy_of(delta_checkpoint, tmp_path)
    found = []

    def diagnose(checkpoint: Path) -> list:
        found.append(checkpoint)
        return [
            SimpleNamespace(
                kind="offsets cut short",
                path=checkpoint / "offsets" / "2",
                what="offsets/2 ends in the middle of its settings.",
                fix="remove offsets/2: batch 2 was never committed and is planned again.",
                safe=True,
            ),
            SimpleNamespace(
                kind="foreign checkpoint",
                path=checkpoint,
                what="this is another query's checkpoint.",
                fix="a new checkpoint: everything is read again.",
                safe=False,
            ),
        ]

    monkeypatch.setattr(checkpoint_health, "diagnose", diagnose)

    lines = report_lines(inspect_checkpoint.report(where.checkpoint))

    assert found == [where.checkpoint]
    assert lines[-4:] == [
        "  damage          offsets cut short: offsets/2 ends in the middle of its settings.",
        "                  safe fix: remove offsets/2: batch 2 was never committed and is "
        "planned again.",
        "  damage          foreign checkpoint: this is another query's checkpoint.",
        "                  way out: a new checkpoint: everything is read again.",
    ]


# --- Kafka -------------------------------------------------------------------------------


@pytest.mark.kafka
def test_kafka_offsets_are_shown_per_topic_and_partition(spark, kafka_bootstrap, topic, tmp_path):
    from infra.kafka import ensure_topics

    name = topic("inspected")
    ensure_topics(kafka_bootstrap, [name], partitions=2)
    messages = spark.createDataFrame(
        [("a", "1", 0), ("b", "2", 0), ("c", "3", 0), ("d", "4", 1), ("e", "5", 1)],
        "key STRING, value STRING, partition INT",
    )
    (
        messages.write.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("topic", name)
        .save()
    )
    checkpoint = tmp_path / "kafka"
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", name)
        .option("startingOffsets", "earliest")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    finish([query])

    lines = report_lines(inspect_checkpoint.report(checkpoint))

    # The offset of the next message to read, per partition: 3 in partition 0, 2 in 1.
    assert f"  source 0        Kafka topic {name}: partition 0 at 3, partition 1 at 2" in lines


# --- the command line ----------------------------------------------------------------------


def test_the_command_shows_one_section_per_query_of_a_lesson_folder(
    delta_checkpoint, tmp_path, capsys
):
    where = copy_of(delta_checkpoint, tmp_path)
    shutil.copytree(where.checkpoint, where.checkpoint.parent / "events_copy")
    lesson_folder = where.checkpoint.parent

    assert inspect_checkpoint.main([str(lesson_folder), "--no-state"]) == 0

    headings = [text for text in capsys.readouterr().out.splitlines() if text.startswith("Check")]
    assert headings == [
        f"Checkpoint {lesson_folder / 'events'}",
        f"Checkpoint {lesson_folder / 'events_copy'}",
    ]


def test_the_command_says_what_to_give_it(delta_checkpoint, tmp_path, capsys):
    where = copy_of(delta_checkpoint, tmp_path)

    assert inspect_checkpoint.main([str(tmp_path / "nowhere")]) == 1
    assert capsys.readouterr().err.startswith(
        f"No folder {tmp_path / 'nowhere'}: give a query's checkpoint folder"
    )
    both = where.checkpoint.parent
    shutil.copytree(where.checkpoint, both / "second")
    assert inspect_checkpoint.main([str(both), "--sink", str(where.table)]) == 1
    assert "--sink names the sink of one query" in capsys.readouterr().err
    assert inspect_checkpoint.main([str(tmp_path / "data")]) == 0
    assert capsys.readouterr().out.startswith(f"No query checkpoint in {tmp_path / 'data'}")


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path):
    """``python course.py checkpoint DIR | head``: the reader may close the pipe before the
    report is written. The command then ends with exit 0 and nothing on stderr (no
    BrokenPipeError traceback). The pipe's reading end is closed before the command starts, so
    its one write always meets a closed pipe. --no-state: no Spark starts."""
    # stdout buffered, as in a learner's terminal (PYTHONUNBUFFERED would hide a second
    # failure: Python's flush of stdout at exit).
    environment = {**os.environ, "STREAMING_COURSE_HOME": str(tmp_path)}
    environment.pop("PYTHONUNBUFFERED", None)
    reading_end, writing_end = os.pipe()
    os.close(reading_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "teaching.inspect_checkpoint", str(tmp_path), "--no-state"],
            cwd=ROOT / "streaming_tutorial",
            env=environment,
            stdout=writing_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(writing_end)

    assert result.stderr == ""
    assert result.returncode == 0


def test_course_py_runs_the_inspector_where_the_learner_is(
    delta_checkpoint, tmp_path, monkeypatch, capfd
):
    import course

    where = copy_of(delta_checkpoint, tmp_path)
    monkeypatch.setattr(course, "ensure_environment", lambda: Path(sys.executable))
    monkeypatch.chdir(where.checkpoint.parent)  # so "events" is a path relative to the learner

    assert course.main(["checkpoint", "events", "--no-state"]) == 0

    out = capfd.readouterr().out.splitlines()
    assert out[:2] == [
        f"Checkpoint {where.checkpoint}",
        f"  query id        {query_id(where.checkpoint)}",
    ]
