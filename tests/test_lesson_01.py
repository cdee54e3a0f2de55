"""Lesson 01: transformations on a stream behave exactly as in batch; .show() fails."""

import pytest
from pyspark.sql import Row
from pyspark.sql.types import LongType, StructField, StructType

from common.microbatch import collect_batches, stream_batches, write_batches
from conftest import load_lesson, run_script

lesson = load_lesson("01_basic_streaming")
NUMBERS = StructType([StructField("value", LongType())])


def test_number_facts_per_batch(spark, tmp_path):
    write_batches(tmp_path / "in", [[{"value": 0}, {"value": 1}], [{"value": 2}, {"value": 7}]])
    stream = stream_batches(spark, tmp_path / "in", NUMBERS)

    run = collect_batches(lesson.add_number_facts(stream), tmp_path / "chk", sort_key=lambda r: r.value)

    assert [batch.rows for batch in run.batches] == [
        [Row(value=0, value_squared=0, is_even=True), Row(value=1, value_squared=1, is_even=False)],
        [Row(value=2, value_squared=4, is_even=True), Row(value=7, value_squared=49, is_even=False)],
    ]


def test_show_on_a_stream_fails_with_the_explained_message(spark, capsys):
    stream = spark.readStream.format("rate").load()

    message = lesson.explain_show_failure(stream)

    assert "writeStream.start()" in message
    assert "Calling .show() on a stream fails" in capsys.readouterr().out


@pytest.mark.smoke
def test_lesson_01_runs_by_itself(course_home):
    result = run_script("streaming_tutorial/01_basic_streaming.py", home=course_home)

    assert result.returncode == 0, result.stderr[-3000:]
    assert "isStreaming: True" in result.stdout
    assert "Batch: 1" in result.stdout
    assert "|timestamp" in result.stdout and "value_squared" in result.stdout
    assert "micro-batches" in result.stdout


def test_await_queries_with_a_sub_millisecond_remainder_stops_instead_of_failing(spark):
    # awaitTermination works in whole milliseconds; 0.0004 s became 0 ms and the JVM
    # raised "Timeout has to be positive" at the very end of a lesson's duration.
    from common.runner import await_queries

    query = spark.readStream.format("rate").load().writeStream.format("noop").start()

    await_queries([query], 0.0004)

    assert not query.isActive
    assert query.exception() is None
