"""common.demos: a refusal shown one way, and a scenario replayed batch by batch."""

from __future__ import annotations

import pytest

from common.demos import Output, replay, show_refusal
from common.errors import CourseError


def test_show_refusal_prints_sparks_first_line_and_returns_the_message(spark, tmp_path, capsys):
    counts = spark.readStream.format("rate").load().groupBy("value").count()

    message = show_refusal(lambda: counts.writeStream.format("console").outputMode("append").start(),
                           "Append on an aggregation without a watermark")

    out = capsys.readouterr().out
    assert out.startswith("Append on an aggregation without a watermark fails:\n  [STREAMING_OUTPUT_MODE")
    assert "STREAMING_OUTPUT_MODE" in message


def test_show_refusal_says_when_spark_accepts_the_attempt(spark, tmp_path):
    (tmp_path / "in").mkdir()
    files = spark.readStream.schema("n INT").json(str(tmp_path / "in"))

    # A valid query that ends by itself: Spark accepts it, so the lesson's claim would be wrong.
    with pytest.raises(CourseError, match="unexpectedly worked"):
        show_refusal(lambda: files.writeStream.format("noop").trigger(availableNow=True)
                     .option("checkpointLocation", str(tmp_path / "cp")).start(), "An empty folder with availableNow")


def test_replay_prints_what_each_output_received_in_each_batch(spark, tmp_path, capsys):
    batches = [[{"k": "a"}, {"k": "b"}], [{"k": "a"}]]
    outputs = {
        "complete": Output(lambda s: s.groupBy("k").count(), "complete", sort_key=lambda row: row.k),
        "update": Output(lambda s: s.groupBy("k").count(), "update", sort_key=lambda row: row.k),
    }

    runs = replay(spark, batches, "k STRING", outputs, tmp_path / "replay",
                  describe_input=lambda records: ", ".join(r["k"] for r in records),
                  describe_rows=lambda rows: " ".join(f"{row.k}={row['count']}" for row in rows))

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
    replay(spark, batches, "k STRING", outputs, tmp_path / "replay", describe_input=str,
           describe_rows=lambda rows: str(len(rows)), show=False)
