"""01 · Your first streaming query: the rate source, transformations and the console sink.

What you'll learn
  - A streaming DataFrame comes from ``spark.readStream``; ``df.isStreaming`` tells you so.
  - Transformations (``filter``, ``select``, ``withColumn``...) are written exactly as in batch.
  - Nothing runs until ``writeStream ... .start()``; the query then runs micro-batch after
    micro-batch in the background until you stop it.
  - Why ``.show()`` (or ``.count()``) fails on a stream, and what to use instead.

Run
  python streaming_tutorial/01_basic_streaming.py                 # runs 20 s, then stops
  python streaming_tutorial/01_basic_streaming.py --duration 60   # watch it longer
  No simulator needed: the rate source makes its own rows.

Practise
  python course.py exercises check 01.1   Large payments (build)

What you'll see
  (your timestamps differ)
  isStreaming: True
  root
   |-- timestamp: timestamp (nullable = true)
   |-- value: long (nullable = true)
  ...
  Calling .show() on a stream fails:
    Queries with streaming sources must be executed with writeStream.start(), or from a ...
  ...
  -------------------------------------------
  Batch: 1
  -------------------------------------------
  +-----------------------+-----+-------------+-------+
  |timestamp              |value|value_squared|is_even|
  +-----------------------+-----+-------------+-------+
  |2026-11-23 05:38:55.883|0    |0            |true   |
  |2026-11-23 05:38:56.483|3    |9            |false  |
  |2026-11-23 05:38:57.083|6    |36           |true   |
  ...
  Stopped after 20 s. The query read 75 rows in 5 micro-batches. The first
  batch is often empty: the rate source counts its rows from the moment
  the query starts.
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from infra import cli
from infra.runner import banner, lesson_session, pick_trigger, run_lesson, run_queries, say
from teaching import demos, progress

LESSON = "01_basic_streaming"
ROWS_PER_SECOND = 5  # the rate source's pace: small enough to read every row
TRIGGER_INTERVAL = "5 seconds"  # one micro-batch every 5 s, so batches are easy to follow
KEEP_EVERY = 3  # keep every third number: a batch's 25 rows become a table of 8 or 9


def read_numbers(spark) -> DataFrame:
    """The rate source: (timestamp, value) rows, ROWS_PER_SECOND of them, forever."""
    # One partition keeps the rows of a batch in order, which makes them easier to read.
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", ROWS_PER_SECOND)
        .option("numPartitions", 1)
        .load()
    )


def build_number_facts(numbers: DataFrame) -> DataFrame:
    """The same transformations you would write on a batch DataFrame."""
    # Nothing here knows it is a stream: filter keeps rows, select picks and computes columns.
    return numbers.filter(F.col("value") % KEEP_EVERY == 0).select(
        "timestamp",
        "value",
        (F.col("value") * F.col("value")).alias("value_squared"),
        (F.col("value") % 2 == 0).alias("is_even"),
    )


def start_console(facts: DataFrame, trigger: dict):
    """Print every micro-batch to the console: the sink for watching a query learn."""
    # No checkpointLocation: Spark uses a temporary one, so every run starts afresh.
    return (
        facts.writeStream.format("console")
        .outputMode("append")  # every row is new: append is the natural mode
        .option("truncate", False)
        .trigger(**trigger)
        .queryName("rate_to_console")
        .start()
    )


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, simulator=False).parse_args(argv)
    with lesson_session(LESSON, args) as spark:
        banner("1. A streaming DataFrame")
        numbers = read_numbers(spark)
        print(f"isStreaming: {numbers.isStreaming}")
        numbers.printSchema()

        banner("2. Why .show() fails on a stream")
        demos.show_refusal(numbers.show, "Calling .show() on a stream")
        say("""A stream has no end, so there is nothing to 'show' yet. Start a query with
            writeStream...start() and let a sink (console, memory, files) receive each
            micro-batch instead.""")

        banner(f"3. The query runs for {args.duration:g} s: one table per micro-batch")
        facts = build_number_facts(numbers)
        query = start_console(facts, pick_trigger(args, TRIGGER_INTERVAL))
        run_queries([query], args)
        read = progress.read_in_batches(query.recentProgress)
        say(f"""Stopped after {args.duration:g} s. The query {read}. The first batch is often
            empty: the rate source counts its rows from the moment the query starts.""")


if __name__ == "__main__":
    run_lesson(main)
