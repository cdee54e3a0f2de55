"""01 · Your first streaming query: the rate source, transformations and the console sink.

What you'll learn
  - A streaming DataFrame comes from ``spark.readStream``; ``df.isStreaming`` tells you so.
  - Transformations (``withColumn``, ``filter``, ``select``) are written exactly as in batch.
  - Nothing runs until ``writeStream ... .start()``; the query then runs micro-batch after
    micro-batch in the background until you stop it.
  - Why ``.show()`` (or ``.count()``) fails on a stream, and what to use instead.

Run
  python streaming_tutorial/01_basic_streaming.py                 # runs 15 s, then stops
  python streaming_tutorial/01_basic_streaming.py --duration 60   # watch it longer
  No simulator needed: the rate source makes its own rows.

What you'll see
  (your timestamps differ)
  isStreaming: True
  Calling .show() on a stream fails with:
    Queries with streaming sources must be executed with writeStream.start()
  -------------------------------------------
  Batch: 1
  -------------------------------------------
  +-----------------------+-----+-------------+-------+
  |timestamp              |value|value_squared|is_even|
  +-----------------------+-----+-------------+-------+
  |2026-11-22 12:40:01.118|0    |0            |true   |
  |2026-11-22 12:40:01.318|1    |1            |false  |
  ...
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import cli
from common.runner import await_queries, banner, lesson_session, run_lesson, say

LESSON = "01_basic_streaming"
ROWS_PER_SECOND = 5  # the rate source's pace: small enough to read every row
TRIGGER_INTERVAL = "5 seconds"  # one micro-batch every 5 s, so batches are easy to follow
DEFAULT_DURATION = 15


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, simulator=False).parse_args(argv)
    with lesson_session(LESSON, args) as spark:
        banner("1. A streaming DataFrame")
        # The rate source emits (timestamp, value) rows forever: perfect for learning.
        # One partition keeps the rows of a batch in order, which makes them easier to read.
        numbers = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", ROWS_PER_SECOND)
            .option("numPartitions", 1)
            .load()
        )
        print(f"isStreaming: {numbers.isStreaming}")
        numbers.printSchema()

        banner("2. Why .show() fails on a stream")
        explain_show_failure(numbers)

        banner(f"3. The query runs for {args.duration:g} s: one table per micro-batch")
        query = (
            add_number_facts(numbers)
            .writeStream.outputMode("append")  # every row is new: append is the natural mode
            .format("console")
            .option("truncate", False)
            .trigger(processingTime=TRIGGER_INTERVAL)
            .queryName("rate_to_console")
            .start()
        )
        await_queries([query], args.duration)
        say(f"Stopped after {args.duration:g} s. The query processed "
            f"{sum(p['numInputRows'] for p in query.recentProgress)} rows in "
            f"{len(query.recentProgress)} micro-batches.")


def add_number_facts(numbers: DataFrame) -> DataFrame:
    """The same transformations you would write on a batch DataFrame."""
    return numbers.withColumn("value_squared", F.col("value") * F.col("value")).withColumn(
        "is_even", F.col("value") % 2 == 0
    )


def explain_show_failure(stream: DataFrame) -> str:
    """Call .show() on a stream, catch the error and explain it; returns Spark's message."""
    try:
        stream.show()
    except AnalysisException as error:
        message = str(error).splitlines()[0]
        print(f"Calling .show() on a stream fails with:\n  {message}")
        say("""A stream has no end, so there is nothing to 'show' yet. Start a query with
            writeStream...start() and let a sink (console, memory, files) receive each
            micro-batch instead.""")
        return message
    raise AssertionError("show() on a streaming DataFrame unexpectedly worked")


if __name__ == "__main__":
    run_lesson(main)
