"""02 · Output modes: what append, complete and update send to the sink, batch by batch.

What you'll learn
  - An aggregation keeps a result table that changes with every micro-batch; the output
    mode decides which part of it reaches the sink: all of it (complete), only the rows
    that changed (update), or only rows that will never change again (append).
  - Append on an aggregation fails at ``start()`` unless a watermark tells Spark when a
    row is final; with a watermark and an event-time window, append works and emits each
    window once, after the watermark has reached its end.
  - Complete is only allowed when there is an aggregation (it would otherwise have to
    keep every row ever seen).
  - The same three modes live, side by side, on generated orders (the rate-micro-batch
    source gives every query the same rows in batch N, so the tables compare exactly and
    read the same on every run).

Run
  python streaming_tutorial/02_output_modes.py                 # walk-through, then 20 s live
  python streaming_tutorial/02_output_modes.py --duration 30   # watch the live part longer
  No simulator needed: the walk-through writes its own small input and the live part
  generates orders with the rate-micro-batch source.

Practise
  python course.py exercises check 02.1   What update mode sends (predict)
  python course.py exercises check 02.2   What complete mode sends (predict)

What you'll see
  Batch 0 reads: books 10.0 10:30:05, games 20.0 10:30:20, books 30.0 10:30:40
    complete  books: 2 orders, avg 20.0 | games: 1 order, avg 20.0
    update    books: 2 orders, avg 20.0 | games: 1 order, avg 20.0
    append    (nothing)
  Batch 1 reads: games 40.0 10:31:10, music 5.0 10:31:30
    complete  books: 2 orders, avg 20.0 | games: 2 orders, avg 30.0 | music: 1 order, avg 5.0
    update    games: 2 orders, avg 30.0 | music: 1 order, avg 5.0
    append    (nothing)   [watermark 10:30:10]
  Batch 2 reads: books 20.0 10:32:50
    complete  books: 3 orders, avg 20.0 | games: 2 orders, avg 30.0 | music: 1 order, avg 5.0
    update    books: 3 orders, avg 20.0
    append    [10:30-10:31) books: 2 orders, avg 20.0 | [10:30-10:31) games: 1 order, avg 20.0 ...
  Batch 3 reads: nothing new (the watermark moved, so Spark runs one more batch)
    append    [10:31-10:32) games: 1 order, avg 40.0 | [10:31-10:32) music: 1 order, avg 5.0 ...
  ...
  Append on an aggregation without a watermark fails:
    [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: append. ...
  Complete without an aggregation fails:
    [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: complete. ...
  ...
  --- append · batch 1 ---
  |books   |12.0  |2025-01-15 10:30:04|
  |films   |22.0  |2025-01-15 10:30:04|
  |toys    |5.0   |2025-01-15 10:30:04|
  --- update · batch 1 ---
  |books   |2     |6.5       |
  |films   |1     |22.0      |
  |toys    |1     |5.0       |
  --- complete · batch 1 ---
  |books   |2     |6.5       |
  |films   |1     |22.0      |
  |games   |1     |8.0       |
  |music   |1     |15.0      |
  |toys    |1     |5.0       |
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import config, paths
from infra import cli
from infra.runner import (
    banner,
    foreach_batch,
    lesson_session,
    pick_trigger,
    run_lesson,
    run_queries,
    say,
)
from teaching import demos, narration

LESSON = "02_output_modes"
ROWS_PER_BATCH = 3  # the live part's pace: three new orders per micro-batch
TRIGGER_SECONDS = 4  # one live micro-batch every 4 s; event time advances as much
# The live orders' categories: more than one batch's worth, so update and complete differ.
LIVE_CATEGORIES = ("books", "games", "music", "films", "toys")
# The live part's first event time, in milliseconds: the course's day.
START_MILLIS = int(config.BASE_EVENT_TIME.timestamp() * 1000)
WINDOW = "1 minute"  # the event-time window of the append example
WATERMARK_DELAY = "30 seconds"  # an order up to this far behind the latest is always counted

ORDER_SCHEMA = "category STRING, amount DOUBLE, event_time TIMESTAMP"
# The walk-through's input: three micro-batches of orders. Event times move forward, so
# the watermark does too.
WALKTHROUGH_BATCHES = [
    [
        {"category": category, "amount": amount, "event_time": f"2025-01-15T{clock}Z"}
        for category, amount, clock in batch
    ]
    for batch in (
        [("books", 10.0, "10:30:05"), ("games", 20.0, "10:30:20"), ("books", 30.0, "10:30:40")],
        [("games", 40.0, "10:31:10"), ("music", 5.0, "10:31:30")],
        [("books", 20.0, "10:32:50")],
    )
]


def build_category_stats(orders: DataFrame) -> DataFrame:
    """Orders and average amount per category: a running aggregation with no end."""
    return orders.groupBy("category").agg(
        F.count(F.lit(1)).alias("orders"),
        F.round(F.avg("amount"), 2).alias("avg_amount"),
    )


def build_windowed_category_stats(orders: DataFrame) -> DataFrame:
    """The same numbers per event-time window, which append mode can emit once final."""
    # The watermark (latest event time seen minus WATERMARK_DELAY) closes windows: once it
    # reaches a window's end, no order can change that window any more (one that comes for it
    # later is dropped as too late), so append emits it then, once, and drops it from the
    # state. An order older than the watermark still counts while its window is open.
    return (
        orders.withWatermark("event_time", WATERMARK_DELAY)
        .groupBy(F.window("event_time", WINDOW), "category")
        .agg(
            F.count(F.lit(1)).alias("orders"),
            F.round(F.avg("amount"), 2).alias("avg_amount"),
        )
    )


def read_rate(spark) -> DataFrame:
    """ROWS_PER_BATCH rows per micro-batch, event time advancing one trigger interval each."""
    # rate-micro-batch (not rate): batch N holds rows 3N..3N+2 in every query, so the
    # three live tables of one batch number come from the very same orders.
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", ROWS_PER_BATCH)
        .option("startTimestamp", START_MILLIS)
        .option("advanceMillisPerBatch", TRIGGER_SECONDS * 1000)
        .load()
    )


def build_live_orders(rate: DataFrame) -> DataFrame:
    """Turn the rate source's (timestamp, value) rows into orders: a category and an amount."""
    # value % 5 picks the categories in turn; amounts cycle between 1.0 and 24.0.
    categories = F.array(*[F.lit(name) for name in LIVE_CATEGORIES])
    category = F.element_at(categories, (F.col("value") % len(LIVE_CATEGORIES) + 1).cast("int"))
    amount = ((F.col("value") * 7) % 24 + 1).cast("double")
    return rate.select(
        category.alias("category"),
        amount.alias("amount"),
        F.col("timestamp").alias("event_time"),
    )


def start_noop(stream: DataFrame, mode: str):
    """Start ``stream`` into the noop sink (it discards every row): enough to ask Spark if it
    accepts the mode."""
    return (
        stream.writeStream.format("noop")  # runs the query, keeps nothing
        .outputMode(mode)  # the mode in question: Spark checks it at start()
        .start()
    )


def start_live(orders: DataFrame, trigger: dict) -> list:
    """The three modes side by side on the same live orders: one query each."""
    return [
        start_printing(build_category_stats(orders), "complete", trigger),
        start_printing(build_category_stats(orders), "update", trigger),
        start_printing(orders, "append", trigger),  # no aggregation: each order is sent once
    ]


def start_printing(stream: DataFrame, mode: str, trigger: dict):
    """Print each micro-batch as a table headed by its mode."""
    # No checkpointLocation: these queries start fresh on every run (Spark uses a
    # temporary checkpoint and deletes it at stop); lesson 03 shows what one keeps.
    return (
        stream.writeStream.outputMode(mode)
        .foreachBatch(foreach_batch(narration.table_printer(mode)))  # foreach_batch: a quiet stop
        .trigger(**trigger)
        .queryName(f"live_{mode}")
        .start()
    )


def describe_row(row) -> str:
    """A row a replayed batch sent, in words: '[10:30-10:31) books: 2 orders, avg 20.0'."""
    window = ""
    if "window" in row.__fields__:
        window = f"[{row.window.start:%H:%M}-{row.window.end:%H:%M}) "
    orders = f"{row.orders} order{'s' if row.orders > 1 else ''}"
    return f"{window}{row.category}: {orders}, avg {row.avg_amount}"


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, simulator=False).parse_args(argv)
    with lesson_session(LESSON, args) as spark:
        banner("1. The same aggregation in each mode, batch by batch")
        say(f"""complete and update count orders per category. Append cannot (part 2 shows
            why), so it counts per category and {WINDOW} event-time window, with a watermark
            {WATERMARK_DELAY} behind the latest order: a window is emitted once the watermark
            reaches its end.""")
        # A fresh start on every run (input and checkpoints under output/), so the table
        # never changes.
        demos.replay(
            spark,
            WALKTHROUGH_BATCHES,
            ORDER_SCHEMA,
            {
                "complete": demos.Output(
                    build_category_stats, "complete", lambda row: row.category
                ),
                "update": demos.Output(build_category_stats, "update", lambda row: row.category),
                "append": demos.Output(
                    build_windowed_category_stats, "append", lambda r: (r.window.start, r.category)
                ),
            },
            paths.output_for(LESSON, "walkthrough"),
            describe_rows=lambda rows: " | ".join(map(describe_row, rows)),
        )
        say("""complete re-sends the whole table every batch (fine for a small dashboard,
            costly for millions of keys). update sends only the categories whose numbers
            changed. append sends each window exactly once, when it can no longer change:
            later, but final, which is what an append-only sink such as files needs. The
            books order of 10:32:50 is never sent here: its window is still open when the
            input ends (an order after 10:33:30 would move the watermark past its end).""")

        banner("2. What Spark refuses")
        live_orders = build_live_orders(read_rate(spark))
        demos.show_refusal(
            lambda: start_noop(build_category_stats(live_orders), "append"),
            "Append on an aggregation without a watermark",
        )
        demos.show_refusal(
            lambda: start_noop(live_orders, "complete"), "Complete without an aggregation"
        )
        say("""Append promises that a row, once sent, never changes. A running count per
            category changes with every new order, so Spark refuses to start: pick complete
            or update, or add a watermark and an event-time window (part 1), whose row is
            final once the watermark has reached its end. Complete re-sends the whole result
            every batch; without an aggregation that would be every row ever read, kept
            forever: use append for plain row streams.""")

        banner(f"3. Live for {args.duration:g} s: three queries at once, one per mode, same orders")
        run_queries(start_live(live_orders, pick_trigger(args, f"{TRIGGER_SECONDS} seconds")), args)
        say(f"""Stopped after {args.duration:g} s. Compare the three tables of one batch
            number: append shows the batch's three new orders, update the categories they
            changed, complete every category seen so far.""")


if __name__ == "__main__":
    run_lesson(main)
