"""teaching.demos: a refusal shown one way, and a scenario replayed batch by batch."""

from __future__ import annotations

import pytest

from infra.errors import CourseError
from teaching.demos import (
    Output,
    print_replay,
    records_as_text,
    records_from_text,
    replay,
    replay_streams,
    show_refusal,
)


def test_show_refusal_prints_sparks_first_line_and_returns_the_message(spark, tmp_path, capsys):
    counts = spark.readStream.format("rate").load().groupBy("value").count()

    message = show_refusal(
        lambda: counts.writeStream.format("console").outputMode("append").start(),
        "Append on an aggregation without a watermark",
    )

    out = capsys.readouterr().out
    assert out.startswith(
        "Append on an aggregation without a watermark fails:\n  [STREAMING_OUTPUT_MODE"
    )
    assert "STREAMING_OUTPUT_MODE" in message


def test_show_refusal_shows_sparks_reason_when_a_started_query_dies(spark, capsys):
    numbers = spark.readStream.format("rate").load()

    # Real-time mode takes Kafka only: start() accepts the rate source, the query dies at once.
    message = show_refusal(
        lambda: (
            numbers.writeStream.format("console")
            .outputMode("update")
            .trigger(realTime="5 seconds")
            .start()
        ),
        "Real-time mode on the rate source",
    )

    out = capsys.readouterr().out
    assert out.startswith(
        "Real-time mode on the rate source starts, then fails (query.exception()):\n"
        "  [STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED]"
    )  # not "[STREAM_FAILED] Query [id"
    assert message.startswith("[STREAM_FAILED]")
    # The JVM's log was off while the query died (its stack traces), and is back at the course's
    # level.
    assert str(spark._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel()) == "WARN"


def test_show_refusal_says_when_spark_accepts_the_attempt(spark, tmp_path):
    (tmp_path / "in").mkdir()
    files = spark.readStream.schema("n INT").json(str(tmp_path / "in"))

    # A valid query that ends by itself: Spark accepts it, so the lesson's claim would be wrong.
    with pytest.raises(CourseError, match="unexpectedly worked"):
        show_refusal(
            lambda: (
                files.writeStream.format("noop")
                .trigger(availableNow=True)
                .option("checkpointLocation", str(tmp_path / "cp"))
                .start()
            ),
            "An empty folder with availableNow",
        )


def test_replay_prints_what_each_output_received_in_each_batch(spark, tmp_path, capsys):
    batches = [[{"k": "a"}, {"k": "b"}], [{"k": "a"}]]
    outputs = {
        "complete": Output(
            lambda s: s.groupBy("k").count(), "complete", sort_key=lambda row: row.k
        ),
        "update": Output(lambda s: s.groupBy("k").count(), "update", sort_key=lambda row: row.k),
    }

    runs = replay(
        spark,
        batches,
        "k STRING",
        outputs,
        tmp_path / "replay",
        describe_input=lambda records: ", ".join(r["k"] for r in records),
        describe_rows=lambda rows: " ".join(f"{row.k}={row['count']}" for row in rows),
    )

    assert capsys.readouterr().out.splitlines() == [
        "Batch 0 reads: a, b",
        "  complete  a=1 b=1",
        "  update    a=1 b=1",
        "Batch 1 reads: a",
        "  complete  a=2 b=1",
        "  update    a=2",
    ]
    assert [len(batch.rows) for batch in runs["update"].batches] == [2, 1]
    # A second replay starts afresh: same table.
    replay(
        spark,
        batches,
        "k STRING",
        outputs,
        tmp_path / "replay",
        describe_input=str,
        describe_rows=lambda rows: str(len(rows)),
        show=False,
    )


def test_replay_streams_feeds_batch_n_of_every_input_to_micro_batch_n(spark, tmp_path, capsys):
    left = [[{"k": "a", "l": 1}, {"k": "b", "l": 2}], [{"k": "c", "l": 3}]]
    right = [[{"k": "a", "r": 10}], [{"k": "b", "r": 20}], [{"k": "c", "r": 30}]]
    join = Output(lambda lefts, rights: lefts.join(rights, "k"), sort_key=lambda row: row.k)

    runs = replay_streams(
        spark,
        {"left": (left, "k STRING, l INT"), "right": (right, "k STRING, r INT")},
        {"inner": join},
        tmp_path / "replay",
        describe_rows=lambda rows: " ".join(f"{row.k}:{row.l}+{row.r}" for row in rows),
    )

    # By default a batch is described as each input's records as text, separated by ' | '.
    assert capsys.readouterr().out.splitlines() == [
        "Batch 0 reads: a 1, b 2 | a 10",
        "  inner  a:1+10",
        "Batch 1 reads: c 3 | b 20",
        "  inner  b:2+20",
        "Batch 2 reads: - | c 30",  # the left input has no batch 2: it reads nothing
        "  inner  c:3+30",
    ]
    assert [[tuple(row) for row in batch.rows] for batch in runs["inner"].batches] == [
        [("a", 1, 10)],
        [("b", 2, 20)],
        [("c", 3, 30)],
    ]


def test_replay_edits_change_the_world_between_micro_batches(spark, tmp_path, capsys):
    table = str(tmp_path / "names")
    spark.createDataFrame([("a", "Ann")], "k STRING, name STRING").write.format("delta").save(table)

    def rename() -> str:
        spark.sql(f"UPDATE delta.`{table}` SET name = 'Anna' WHERE k = 'a'")
        return "a is now called Anna"

    # A stream-static join against a Delta table reads the table's latest version in every batch.
    output = Output(lambda stream: stream.join(spark.read.format("delta").load(table), "k"))
    runs = replay(
        spark,
        [[{"k": "a"}], [{"k": "a"}]],
        "k STRING",
        {"named": output},
        tmp_path / "replay",
        describe_input=lambda records: str(len(records)),
        describe_rows=lambda rows: " ".join(row.name for row in rows),
        edits={1: rename},
    )

    assert capsys.readouterr().out.splitlines() == [
        "Batch 0 reads: 1",
        "  named  Ann",
        "Before batch 1: a is now called Anna",
        "Batch 1 reads: 1",
        "  named  Anna",
    ]
    assert [batch.batch_id for batch in runs["named"].batches] == [0, 1]


def test_a_scenario_written_as_text_becomes_records_and_back():
    text = ["IMP-1 AD-1 10:00, IMP-2 AD-2 10:01:30", "", "IMP-3 AD-1 10:02"]

    batches = records_from_text(text, "impression_id", "ad_id", "impression_time")

    assert batches == [
        [
            {"impression_id": "IMP-1", "ad_id": "AD-1", "impression_time": "2025-01-15T10:00:00Z"},
            {"impression_id": "IMP-2", "ad_id": "AD-2", "impression_time": "2025-01-15T10:01:30Z"},
        ],
        [],
        [{"impression_id": "IMP-3", "ad_id": "AD-1", "impression_time": "2025-01-15T10:02:00Z"}],
    ]
    assert [records_as_text(batch) for batch in batches] == [text[0], "-", text[2]]


def test_print_replay_lines_up_rows_described_on_several_lines(capsys):
    from teaching.microbatch import BatchResult, Run

    runs = {
        "sessions": Run(
            [BatchResult(0, ["a", "b"], "2025-01-15T10:30:09.000Z"), BatchResult(1, [])]
        ),
        "all": Run([BatchResult(0, ["c"])]),
    }

    print_replay([["x"], ["y"]], runs, describe_input=" ".join, describe_rows="\n".join)

    assert capsys.readouterr().out.splitlines() == [
        "Batch 0 reads: x",
        "  sessions  a   [watermark 10:30:09]",
        "            b",
        "  all       c",
        "Batch 1 reads: y",
        "  sessions  (nothing)",
    ]


def test_the_jvm_log_goes_back_to_the_level_it_had_not_to_warn(spark):
    from teaching.demos import jvm_logs_off

    def level() -> str:
        return str(spark._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())

    spark.sparkContext.setLogLevel("ERROR")  # e.g. a learner's own choice in a notebook
    try:
        with jvm_logs_off():
            assert level() == "OFF"
        assert level() == "ERROR"
    finally:
        spark.sparkContext.setLogLevel("WARN")
