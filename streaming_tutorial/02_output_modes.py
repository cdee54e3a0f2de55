"""02 · Output modes: what append, complete and update send to the sink, batch by batch.

What you'll learn
  - An aggregation keeps a result table that changes with every micro-batch; the output
    mode decides which part of it reaches the sink: all of it (complete), only the rows
    that changed (update), or only rows that will never change again (append).
  - Append on an aggregation fails at ``start()`` unless a watermark tells Spark when a
    row is final; with a watermark and an event-time window, append works and emits each
    window once, after the watermark has passed its end.
  - Complete is only allowed when there is an aggregation (it would otherwise have to
    keep every row ever seen).
  - The same three modes live, side by side, on generated orders (the rate-micro-batch
    source gives every query the same rows in batch N, so the tables compare exactly).

Run
  python streaming_tutorial/02_output_modes.py                 # walk-through, then 15 s live
  python streaming_tutorial/02_output_modes.py --duration 30   # watch the live part longer
  No simulator needed: the walk-through writes its own small input and the live part
  generates orders with the rate-micro-batch source.

What you'll see
  (the live part's times differ)
  Append on an aggregation without a watermark fails at start():
    [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: append. This output mode is not supported for streaming aggregations without watermark on streaming DataFrames/DataSets. SQLSTATE: 42KDE
  ...
  Batch 1 reads: games 40.00 @10:31:10, music 5.00 @10:31:30
    complete  books: 2 orders, avg 20.0 | games: 2 orders, avg 30.0 | music: 1 order, avg 5.0
    update    games: 2 orders, avg 30.0 | music: 1 order, avg 5.0
    append    (nothing: watermark 10:30:10, no window has ended yet)
  Batch 2 reads: books 20.00 @10:32:50
    complete  books: 3 orders, avg 20.0 | games: 2 orders, avg 30.0 | music: 1 order, avg 5.0
    update    books: 3 orders, avg 20.0
    append    [10:30-10:31) books: 2 orders, avg 20.0 | [10:30-10:31) games: 1 order, avg 20.0
  Batch 3 reads: nothing new (the watermark moved, so Spark runs one more batch)
    append    [10:31-10:32) games: 1 order, avg 40.0 | [10:31-10:32) music: 1 order, avg 5.0
  ...
  --- append · batch 1 ---
  |books   |12.0  |2026-11-22 13:17:16.815|
  |films   |22.0  |2026-11-22 13:17:16.815|
  |toys    |5.0   |2026-11-22 13:17:16.815|
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

from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType, TimestampType

from common import cli, paths
from common.microbatch import Run, collect_batches, stream_batches, write_batches
from common.runner import await_queries, banner, checkpoint_root, foreach_batch, lesson_session, run_lesson, say

LESSON = "02_output_modes"
DEFAULT_DURATION = 15  # seconds of the live part
ROWS_PER_BATCH = 3  # the live part's pace: three new orders per micro-batch
TRIGGER_SECONDS = 4  # one live micro-batch every 4 s; event time advances as much
# The live orders' categories: more than one batch's worth, so update and complete differ.
LIVE_CATEGORIES = ("books", "games", "music", "films", "toys")
WINDOW = "1 minute"  # the event-time window of the append example
WATERMARK_DELAY = "30 seconds"  # how late an order may arrive and still be counted
MODES = ("complete", "update", "append")

ORDER_SCHEMA = StructType(
    [
        StructField("category", StringType()),
        StructField("amount", DoubleType()),
        StructField("event_time", TimestampType()),
    ]
)

# The walk-through's input: three micro-batches of orders (one JSON file each).
# Event times move forward, so the watermark does too.
WALKTHROUGH_BATCHES = [
    [
        {"category": "books", "amount": 10.0, "event_time": "2025-01-15T10:30:05Z"},
        {"category": "games", "amount": 20.0, "event_time": "2025-01-15T10:30:20Z"},
        {"category": "books", "amount": 30.0, "event_time": "2025-01-15T10:30:40Z"},
    ],
    [
        {"category": "games", "amount": 40.0, "event_time": "2025-01-15T10:31:10Z"},
        {"category": "music", "amount": 5.0, "event_time": "2025-01-15T10:31:30Z"},
    ],
    [
        {"category": "books", "amount": 20.0, "event_time": "2025-01-15T10:32:50Z"},
    ],
]


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, simulator=False).parse_args(argv)
    with lesson_session(LESSON, args) as spark:
        banner("1. The input: three micro-batches of orders")
        input_dir = write_walkthrough_input(paths.output_for(LESSON, "walkthrough_input"))
        for number, batch in enumerate(WALKTHROUGH_BATCHES):
            print(f"Batch {number}: {describe_orders(batch)}")
        orders = stream_batches(spark, input_dir, ORDER_SCHEMA)

        banner("2. Append on an aggregation needs a watermark")
        explain_append_failure(build_category_stats(orders))
        explain_complete_failure(orders)

        banner("3. The same aggregation in each mode, batch by batch")
        say(f"""complete and update count orders per category. Append cannot, so it counts
            per category and {WINDOW} event-time window, with a watermark {WATERMARK_DELAY}
            behind the latest order: a window is emitted once the watermark passes its end.""")
        runs = walk_through_modes(orders, checkpoint_root(LESSON, args) / "walkthrough")
        print_walkthrough(runs)
        say("""complete re-sends the whole table every batch (fine for a small dashboard,
            costly for millions of keys). update sends only the categories whose numbers
            changed. append sends each window exactly once, when it can no longer change:
            later, but final, which is what an append-only sink such as files needs. The
            books order of 10:32:50 is never sent here: its window is still open when the
            input ends (an order after 10:33:30 would move the watermark past its end).""")

        banner(f"4. Live for {args.duration:g} s: three queries at once, one per mode, same orders")
        # rate-micro-batch (not rate): batch N holds rows 3N..3N+2 in every query, so the
        # three tables of one batch number come from the very same orders.
        live_orders = build_live_orders(
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", ROWS_PER_BATCH)
            .option("startTimestamp", int(time.time() * 1000))
            .option("advanceMillisPerBatch", TRIGGER_SECONDS * 1000)
            .load()
        )
        printer = BatchPrinter()
        # No checkpointLocation: these queries start fresh on every run (Spark uses a
        # temporary checkpoint and deletes it at stop); lesson 03 shows what one keeps.
        queries = [
            start_printing(build_category_stats(live_orders), "complete", printer),
            start_printing(build_category_stats(live_orders), "update", printer),
            # append without an aggregation: every order is a new row, sent once.
            start_printing(live_orders, "append", printer),
        ]
        await_queries(queries, args.duration)
        say(f"""Stopped after {args.duration:g} s. Compare the three tables of one batch
            number: append shows the batch's three new orders, update the categories they
            changed, complete every category seen so far.""")


def build_category_stats(orders: DataFrame) -> DataFrame:
    """Orders and average amount per category: a running aggregation with no end."""
    return orders.groupBy("category").agg(
        F.count(F.lit(1)).alias("orders"),
        F.round(F.avg("amount"), 2).alias("avg_amount"),
    )


def build_windowed_category_stats(orders: DataFrame) -> DataFrame:
    """The same numbers per event-time window, which append mode can emit once final.

    The watermark (latest event time seen minus WATERMARK_DELAY) tells Spark that no
    order older than it will be counted any more, so a window that ends before the
    watermark is final: append emits it then, once, and drops it from the state.
    """
    return (
        orders.withWatermark("event_time", WATERMARK_DELAY)
        .groupBy(F.window("event_time", WINDOW), "category")
        .agg(F.count(F.lit(1)).alias("orders"), F.round(F.avg("amount"), 2).alias("avg_amount"))
    )


def build_live_orders(rate: DataFrame) -> DataFrame:
    """Turn the rate source's (timestamp, value) rows into orders: a category and an amount."""
    categories = F.array(*[F.lit(name) for name in LIVE_CATEGORIES])
    # value % 5 picks the categories in turn; amounts cycle between 1.0 and 24.0.
    return rate.select(
        F.element_at(categories, (F.col("value") % len(LIVE_CATEGORIES) + 1).cast("int")).alias("category"),
        ((F.col("value") * 7) % 24 + 1).cast("double").alias("amount"),
        F.col("timestamp").alias("event_time"),
    )


def explain_append_failure(stats: DataFrame) -> AnalysisException:
    """Start an aggregation in append mode, catch Spark's refusal and explain it."""
    try:
        query = stats.writeStream.outputMode("append").format("noop").start()
    except AnalysisException as error:
        print(f"Append on an aggregation without a watermark fails at start():\n  {first_line(error)}")
        say("""Append promises that a row, once sent, never changes. A running count per
            category changes with every new order, so Spark can never send it under that
            promise and refuses to start. Either pick complete or update, or add a
            watermark and an event-time window (part 3): then a window's row is final
            once the watermark has passed its end, and append can send it.""")
        return error
    query.stop()
    raise AssertionError("append on an aggregation without a watermark unexpectedly started")


def explain_complete_failure(orders: DataFrame) -> AnalysisException:
    """Start a query without aggregation in complete mode, catch Spark's refusal and explain it."""
    try:
        query = orders.writeStream.outputMode("complete").format("noop").start()
    except AnalysisException as error:
        print(f"\nComplete without an aggregation fails too:\n  {first_line(error)}")
        say("""Complete re-sends the whole result every batch; without an aggregation that
            would be every row ever read, kept forever. Use append for plain row streams.""")
        return error
    query.stop()
    raise AssertionError("complete without an aggregation unexpectedly started")


def walk_through_modes(orders: DataFrame, checkpoints: Path) -> dict[str, Run]:
    """Run the walk-through once per mode; returns what the sink received in each batch."""
    # The walk-through must show the same batches on every run, so it starts from
    # empty checkpoints (a kept checkpoint would say "all files already read").
    shutil.rmtree(checkpoints, ignore_errors=True)
    stats = build_category_stats(orders)
    runs = {
        "complete": lambda: collect_batches(
            stats, checkpoints / "complete", output_mode="complete", sort_key=by_category
        ),
        "update": lambda: collect_batches(stats, checkpoints / "update", output_mode="update", sort_key=by_category),
        "append": lambda: collect_batches(
            build_windowed_category_stats(orders),
            checkpoints / "append",
            output_mode="append",
            sort_key=lambda row: (row.window.start, row.category),
        ),
    }
    # The three queries are independent: running them at once takes about half the time.
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        futures = {mode: pool.submit(run) for mode, run in runs.items()}
        return {mode: future.result() for mode, future in futures.items()}


def write_walkthrough_input(folder: Path) -> Path:
    """Write the walk-through's batches afresh (one file per micro-batch)."""
    if folder.exists():
        paths.remove_tree(folder)
    return write_batches(folder, WALKTHROUGH_BATCHES)


def print_walkthrough(runs: dict[str, Run]) -> None:
    """Print, batch by batch, what each mode sent to the sink."""
    batch_ids = sorted({batch.batch_id for run in runs.values() for batch in run.batches})
    for batch_id in batch_ids:
        if batch_id < len(WALKTHROUGH_BATCHES):
            print(f"Batch {batch_id} reads: {describe_orders(WALKTHROUGH_BATCHES[batch_id])}")
        else:
            print(f"Batch {batch_id} reads: nothing new (the watermark moved, so Spark runs one more batch)")
        for mode in MODES:
            batch = next((b for b in runs[mode].batches if b.batch_id == batch_id), None)
            if batch is not None:
                print(f"  {mode:<9} {describe_result(batch.rows, batch.watermark)}")


def describe_orders(orders: list[dict]) -> str:
    return ", ".join(f"{o['category']} {o['amount']:.2f} @{o['event_time'][11:19]}" for o in orders)


def describe_result(rows: list, watermark: str | None) -> str:
    if not rows:
        mark = f"watermark {watermark[11:19]}, " if watermark and not watermark.startswith("1970") else ""
        return f"(nothing: {mark}no window has ended yet)"
    return " | ".join(describe_row(row) for row in rows)


def describe_row(row) -> str:
    plural = "order" if row.orders == 1 else "orders"
    text = f"{row.category}: {row.orders} {plural}, avg {row.avg_amount}"
    if "window" in row.asDict():
        text = f"[{row.window.start:%H:%M}-{row.window.end:%H:%M}) {text}"
    return text


def by_category(row) -> str:
    return row.category


def first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0]


class BatchPrinter:
    """Print each query's micro-batch as one labelled table.

    The console sink prints "Batch: N" without the query's name, and three queries
    writing at once would interleave their tables. foreachBatch hands each micro-batch
    to this function instead; the lock keeps each table whole.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def for_mode(self, mode: str):
        def show(batch: DataFrame, batch_id: int) -> None:
            with self.lock:
                print(f"--- {mode} · batch {batch_id} ---")
                batch.orderBy(*batch.columns).show(truncate=False)

        return show


def start_printing(stream: DataFrame, mode: str, printer: BatchPrinter):
    return (
        stream.writeStream.outputMode(mode)
        .foreachBatch(foreach_batch(printer.for_mode(mode)))  # foreach_batch: a quiet stop
        .trigger(processingTime=f"{TRIGGER_SECONDS} seconds")
        .queryName(f"live_{mode}")
        .start()
    )


if __name__ == "__main__":
    run_lesson(main)
