"""Lesson 01: transformations on a stream behave exactly as in batch; .show() is refused."""

import re

import pytest
from pyspark.sql import Row
from pyspark.sql.types import LongType, StructField, StructType, TimestampType

from conftest import at, iso_at, load_lesson, prose, run_script
from teaching import demos
from teaching.microbatch import collect_batches, stream_batches, write_batches

lesson = load_lesson("01_basic_streaming")
RATE_ROWS = StructType(
    [StructField("timestamp", TimestampType()), StructField("value", LongType())]
)


def rate_row(value: int) -> dict:
    return {"timestamp": iso_at(f"10:30:{value:02d}"), "value": value}


def fact(value: int) -> Row:
    return Row(
        timestamp=at(f"10:30:{value:02d}"),
        value=value,
        value_squared=value * value,
        is_even=value % 2 == 0,
    )


def test_number_facts_keep_every_third_number_per_batch(spark, tmp_path):
    write_batches(
        tmp_path / "in", [[rate_row(n) for n in range(5)], [rate_row(n) for n in range(5, 10)]]
    )
    stream = stream_batches(spark, tmp_path / "in", RATE_ROWS)

    run = collect_batches(
        lesson.build_number_facts(stream), tmp_path / "chk", sort_key=lambda r: r.value
    )

    assert [batch.rows for batch in run.batches] == [[fact(0), fact(3)], [fact(6), fact(9)]]


def test_show_on_a_stream_is_refused_with_sparks_message(spark, capsys):
    message = demos.show_refusal(lesson.read_numbers(spark).show, "Calling .show() on a stream")

    assert "Queries with streaming sources must be executed with writeStream.start()" in message
    assert "Calling .show() on a stream fails:" in capsys.readouterr().out


@pytest.mark.smoke
def test_lesson_01_runs_by_itself(course_home):
    result = run_script(
        "streaming_tutorial/01_basic_streaming.py", "--duration", "3", home=course_home
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "isStreaming: True" in out
    assert (
        "Calling .show() on a stream fails:\n  Queries with streaming sources must be executed"
        in out
    )
    assert "Batch: 0" in out and "|timestamp|value|value_squared|is_even|" in out
    assert re.search(
        r"Stopped after 3 s. The query read \d+ rows in \d+ micro-batch(es)?\.", prose(out)
    ), out[-2000:]
