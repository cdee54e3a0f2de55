"""teaching.progress: idle progress reports are not micro-batches."""

from __future__ import annotations

import time

from teaching.progress import batches_run, rows_read


def report(batch_id: int, rows: int, *, ran: bool = True) -> dict:
    durations = (
        {"addBatch": 3, "triggerExecution": 7}
        if ran
        else {"latestOffset": 1, "triggerExecution": 1}
    )
    return {
        "batchId": batch_id,
        "numInputRows": rows,
        "durationMs": durations,
        "stateOperators": [{"numRowsTotal": 2, "numRowsRemoved": 1}],
    }


def test_idle_reports_are_left_out():
    progress = [
        report(0, 4),
        report(1, 0),
        report(2, 0, ran=False),
        report(2, 0, ran=False),
        report(2, 3),
    ]

    assert [r["batchId"] for r in batches_run(progress)] == [0, 1, 2]
    assert rows_read(batches_run(progress)) == 7


def test_spark_idle_reports_look_as_batches_run_expects(spark, tmp_path):
    """What batches_run relies on, from a real query: an idle report has no addBatch time,
    the next batch's id and the last batch's state figures."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("x\ny\nx\n")
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "100ms")
    try:
        query = (
            spark.readStream.text(str(tmp_path / "in"))
            .groupBy("value")
            .count()
            .writeStream.format("memory")
            .queryName("idle_reports")
            .outputMode("complete")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="100 milliseconds")
            .start()
        )
        try:
            query.processAllAvailable()
            give_up = time.monotonic() + 120
            while len(query.recentProgress) < 3 and query.isActive and time.monotonic() < give_up:
                query.awaitTermination(0.2)  # polls for the condition; no sleep decides the result
        finally:
            query.stop()
    finally:
        spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")

    progress = query.recentProgress
    assert len(progress) >= 3
    ran, idle = batches_run(progress), [r for r in progress if r not in batches_run(progress)]
    assert [r["batchId"] for r in ran] == [0] and rows_read(ran) == 3
    assert idle and {r["batchId"] for r in idle} == {1}
    assert {r["stateOperators"][0]["numRowsTotal"] for r in idle} == {2}


def started(batch_id: int, rows: int, second: float) -> dict:
    return {**report(batch_id, rows), "timestamp": f"2025-01-15T10:30:{second:06.3f}Z"}


def test_seconds_between_batches_is_the_median_gap_so_a_cold_first_batch_does_not_count():
    from teaching.progress import describe_batches, seconds_between_batches

    cold = [started(0, 10, 0), started(1, 10, 5.0), started(2, 10, 5.25), started(3, 5, 5.5)]
    assert seconds_between_batches(cold) == 0.25
    assert describe_batches(cold) == (4, "10+10+10+5", "0.2 s")
    assert seconds_between_batches([started(0, 40, 1)]) is None
    assert describe_batches([]) == (0, "-", "-")
