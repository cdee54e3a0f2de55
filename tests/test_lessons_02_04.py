"""Lessons 02-04: output modes batch by batch, file streaming with a checkpoint and a
quarantine, one stream into three sinks. Exact rows on hand-written input, no clock."""

from __future__ import annotations

import json
import os
import time
from datetime import date, datetime
from pathlib import Path

import pytest
from pyspark.sql import Row

from common.files import json_lines, write_atomically
from common.microbatch import collect_batches, stream_batches, write_batches
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from conftest import load_lesson, run_script

modes = load_lesson("02_output_modes")
files = load_lesson("03_file_streaming")
sinks = load_lesson("04_multiple_sinks")


# --- 02 · output modes -------------------------------------------------------------


@pytest.fixture
def orders(spark, tmp_path):
    """The lesson's own three walk-through batches, as a stream (one file per batch)."""
    write_batches(tmp_path / "orders", modes.WALKTHROUGH_BATCHES)
    return stream_batches(spark, tmp_path / "orders", modes.ORDER_SCHEMA)


def stats(category: str, orders: int, avg: float) -> Row:
    return Row(category=category, orders=orders, avg_amount=avg)


def test_complete_mode_sends_the_whole_table_every_batch(orders, tmp_path):
    run = collect_batches(
        modes.build_category_stats(orders), tmp_path / "chk", output_mode="complete", sort_key=modes.by_category
    )

    assert [batch.rows for batch in run.batches] == [
        [stats("books", 2, 20.0), stats("games", 1, 20.0)],
        [stats("books", 2, 20.0), stats("games", 2, 30.0), stats("music", 1, 5.0)],
        [stats("books", 3, 20.0), stats("games", 2, 30.0), stats("music", 1, 5.0)],
    ]


def test_update_mode_sends_only_the_rows_that_changed(orders, tmp_path):
    run = collect_batches(
        modes.build_category_stats(orders), tmp_path / "chk", output_mode="update", sort_key=modes.by_category
    )

    assert [batch.rows for batch in run.batches] == [
        [stats("books", 2, 20.0), stats("games", 1, 20.0)],
        [stats("games", 2, 30.0), stats("music", 1, 5.0)],
        [stats("books", 3, 20.0)],
    ]


def test_append_mode_sends_each_window_once_after_the_watermark_passes_it(orders, tmp_path):
    run = collect_batches(
        modes.build_windowed_category_stats(orders),
        tmp_path / "chk",
        output_mode="append",
        sort_key=lambda row: (row.window.start, row.category),
    )

    def window(minute: int, category: str, orders: int, avg: float) -> tuple:
        return (datetime(2025, 1, 15, 10, minute), datetime(2025, 1, 15, 10, minute + 1), category, orders, avg)

    emitted = [
        [(r.window.start, r.window.end, r.category, r.orders, r.avg_amount) for r in batch.rows]
        for batch in run.batches
    ]
    # Batches 0 and 1: no window has ended before the watermark. Batch 2 closes 10:30-10:31;
    # batch 3 has no input but runs because the watermark moved, and closes 10:31-10:32.
    # The 10:32 window is still open when the input ends, so it is never emitted.
    assert emitted == [
        [],
        [],
        [window(30, "books", 2, 20.0), window(30, "games", 1, 20.0)],
        [window(31, "games", 1, 40.0), window(31, "music", 1, 5.0)],
    ]
    assert [batch.watermark for batch in run.batches] == [
        "1970-01-01T00:00:00.000Z",
        "2025-01-15T10:30:10.000Z",
        "2025-01-15T10:31:00.000Z",
        "2025-01-15T10:32:20.000Z",
    ]


def test_append_on_an_aggregation_without_watermark_is_refused_and_explained(spark, orders, capsys):
    error = modes.explain_append_failure(modes.build_category_stats(orders))

    assert error.getCondition() == "STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION"
    assert "append" in str(error) and "without watermark" in str(error)
    assert "Append on an aggregation without a watermark fails at start()" in capsys.readouterr().out
    assert not spark.streams.active


def test_complete_without_an_aggregation_is_refused(spark, orders):
    error = modes.explain_complete_failure(orders)

    assert error.getCondition() == "STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION"
    assert "complete" in str(error)
    assert not spark.streams.active


def test_live_orders_cycle_through_the_categories(spark):
    rate_rows = spark.createDataFrame(
        [(datetime(2025, 1, 15, 10, 30, second), second) for second in range(4)], "timestamp timestamp, value long"
    )

    rows = modes.build_live_orders(rate_rows).collect()

    assert [(r.category, r.amount) for r in rows] == [("books", 1.0), ("games", 8.0), ("music", 15.0), ("films", 22.0)]


@pytest.mark.smoke
def test_lesson_02_runs_by_itself(course_home):
    result = run_script("streaming_tutorial/02_output_modes.py", home=course_home)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Append on an aggregation without a watermark fails at start()" in out
    assert "STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION" in out
    # The walk-through's lines, exactly as the docstring shows them.
    assert "  update    games: 2 orders, avg 30.0 | music: 1 order, avg 5.0" in out
    assert "  append    [10:30-10:31) books: 2 orders, avg 20.0 | [10:30-10:31) games: 1 order, avg 20.0" in out
    assert "  append    [10:31-10:32) games: 1 order, avg 40.0 | [10:31-10:32) music: 1 order, avg 5.0" in out
    # The live part: every query's batch 0 holds the same three orders (rate-micro-batch).
    totals = "|category|orders|avg_amount|\n+--------+------+----------+\n"
    first_three = "|books   |1     |1.0       |\n|games   |1     |8.0       |\n|music   |1     |15.0      |\n"
    assert f"--- complete · batch 0 ---\n+--------+------+----------+\n{totals}{first_three}" in out
    assert f"--- update · batch 0 ---\n+--------+------+----------+\n{totals}{first_three}" in out
    assert "--- append · batch 0 ---" in out
    assert "StackOverflowError" not in result.stderr


# --- 03 · file streaming --------------------------------------------------------------

GOOD_A = {"transaction_id": "TXN-1", "user_id": "USER-1", "amount": 12.5, "category": "Books",
          "timestamp": "2025-01-15T10:30:00.000Z"}
GOOD_B = {"transaction_id": "TXN-2", "user_id": "USER-2", "amount": 99.0, "category": "Sports",
          "timestamp": "2025-01-15T10:30:05.000Z"}
GOOD_C = {"transaction_id": "TXN-3", "user_id": "USER-1", "amount": 5.25, "category": "Home",
          "timestamp": "2025-01-15T10:31:00.000Z"}
CUT_LINE = '{"transaction_id":"TXN-9","user_id":"USER-9","amount":1'  # a writer crashed mid-line
WRONG_TYPE = '{"transaction_id":"TXN-8","user_id":"USER-8","amount":"lots","category":"Home"}'  # not a double


def write_files(folder: Path, files: dict[str, str], first_mtime: float) -> None:
    """Write raw text files in the given order, one second apart (the file source reads by mtime)."""
    for number, (name, text) in enumerate(files.items()):
        path = write_atomically(folder, name, text)
        os.utime(path, (first_mtime + number, first_mtime + number))


@pytest.fixture
def transaction_files(tmp_path) -> Path:
    folder = tmp_path / "input_stream"
    write_files(
        folder,
        {
            "tx-1.json": json_lines([GOOD_A, GOOD_B]),
            "tx-2.json": CUT_LINE + "\n" + json_lines([GOOD_C]) + WRONG_TYPE + "\n",
        },
        first_mtime=time.time() - 120,
    )
    return folder


def transaction(record: dict, source_file: str) -> Row:
    return Row(
        transaction_id=record["transaction_id"],
        user_id=record["user_id"],
        amount=record["amount"],
        category=record["category"],
        timestamp=datetime.fromisoformat(record["timestamp"].replace(".000Z", "")),
        source_file=source_file,
    )


def test_parsed_transactions_are_exactly_the_good_lines(spark, transaction_files, tmp_path):
    raw = files.read_transactions(spark, transaction_files)

    run = collect_batches(files.build_parsed_transactions(raw), tmp_path / "chk", sort_key=lambda r: r.transaction_id)

    assert [batch.rows for batch in run.batches] == [
        [transaction(GOOD_A, "tx-1.json"), transaction(GOOD_B, "tx-1.json")],
        [transaction(GOOD_C, "tx-2.json")],
    ]


def quarantine_on_disk(folder: Path) -> list[dict]:
    lines = [line for path in sorted(folder.glob("batch_id=*/*.json")) for line in path.read_text().splitlines()]
    return [json.loads(line) for line in lines]


def test_a_run_counts_and_quarantines_and_a_second_run_reads_only_the_new_file(spark, transaction_files, tmp_path):
    checkpoint, quarantine = tmp_path / "checkpoint", tmp_path / "quarantine"

    first = files.process_available(spark, transaction_files, checkpoint, quarantine)

    assert first.files_before == set()
    assert first.files_read == ["tx-1.json", "tx-2.json"]
    assert first.parsed == 3
    assert first.quarantined == [
        {"raw_line": CUT_LINE, "source_file": "tx-2.json"},
        {"raw_line": WRONG_TYPE, "source_file": "tx-2.json"},
    ]
    assert sorted(quarantine_on_disk(quarantine), key=lambda r: r["raw_line"]) == sorted(
        first.quarantined, key=lambda r: r["raw_line"]
    )
    assert [p.name for p in quarantine.iterdir()] == ["batch_id=1"]  # only the batch that had bad lines

    write_files(transaction_files, {"tx-3.json": json_lines([GOOD_A]) + "not json at all\n"}, first_mtime=time.time())
    second = files.process_available(spark, transaction_files, checkpoint, quarantine)

    assert second.files_before == {"tx-1.json", "tx-2.json"}
    assert second.files_read == ["tx-3.json"]
    assert second.reread == []
    assert second.parsed == 1
    assert second.quarantined == [{"raw_line": "not json at all", "source_file": "tx-3.json"}]
    assert len(quarantine_on_disk(quarantine)) == 3


def test_a_stream_without_a_schema_is_refused_and_explained(spark, transaction_files, capsys):
    message = files.explain_missing_schema(spark, transaction_files)

    assert "Schema must be specified when creating a streaming source DataFrame" in message
    assert "fails with" in capsys.readouterr().out


@pytest.mark.smoke
def test_lesson_03_runs_by_itself_starting_its_simulator(course_home):
    result = run_script("streaming_tutorial/03_file_streaming.py", home=course_home)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Schema must be specified" in out
    assert "Started the transactions simulator for this run" in out
    # The simulator the lesson starts writes 3 files of 10 lines, every 4th line broken.
    assert "Read in this run: 3 file(s): transactions-0001.json, transactions-0002.json, transactions-0003.json" in out
    assert "Rows parsed: 24; malformed lines quarantined: 6" in out
    assert len(list((course_home / "output" / "03_file_streaming" / "quarantine").glob("batch_id=*"))) == 3
    assert "StackOverflowError" not in result.stderr


# --- 04 · multiple sinks ---------------------------------------------------------------


def shop_event(number: int, event_type: str, day: int, price: float, quantity: int = 1) -> dict:
    return {
        "event_id": f"EVT-{number:06d}", "user_id": "USER-2001", "event_type": event_type, "product_id": "P004",
        "product_name": "Running Shoes", "category": "Sports", "price": price, "quantity": quantity,
        "timestamp": f"2025-01-{day:02d}T23:59:0{number}.000Z",
    }


SHOP_BATCHES = [
    [shop_event(1, "view", 15, 89.99), shop_event(2, "cart", 15, 89.99, 2)],
    [shop_event(3, "purchase", 16, 89.99, 2), shop_event(4, "view", 16, 29.99)],
]


def expected_events() -> list[tuple]:
    return sorted(
        (e["event_id"], e["event_type"], e["price"], e["quantity"], date(2025, 1, int(e["timestamp"][8:10])))
        for batch in SHOP_BATCHES for e in batch
    )


def as_tuples(df) -> list[tuple]:
    return sorted(tuple(row) for row in df.select("event_id", "event_type", "price", "quantity", "date").collect())


def test_one_stream_reaches_memory_and_parquet_exactly(spark, tmp_path):
    write_batches(tmp_path / "events_in", SHOP_BATCHES)
    events = sinks.build_events(stream_batches(spark, tmp_path / "events_in", ECOMMERCE_EVENT_SCHEMA))
    parquet_dir = tmp_path / "parquet"

    queries = sinks.start_sinks(
        events, checkpoints=tmp_path / "chk", parquet_dir=parquet_dir, memory_table="test_shop_events",
        trigger={"availableNow": True},
    )
    for query in queries:
        assert query.awaitTermination(120), f"{query.name} did not finish its input"
        assert query.exception() is None

    assert as_tuples(spark.table("test_shop_events")) == expected_events()
    assert as_tuples(spark.read.parquet(str(parquet_dir))) == expected_events()
    assert sorted(p.name for p in parquet_dir.glob("date=*")) == ["date=2025-01-15", "date=2025-01-16"]
    # Two events per date folder, as the input had.
    for folder in parquet_dir.glob("date=*"):
        assert spark.read.parquet(str(folder)).count() == 2
    assert sorted(p.name for p in (tmp_path / "chk").iterdir()) == ["console", "memory", "parquet"]


def test_complete_mode_on_a_file_sink_is_refused(spark, tmp_path):
    write_batches(tmp_path / "events_in", SHOP_BATCHES)
    events = sinks.build_events(stream_batches(spark, tmp_path / "events_in", ECOMMERCE_EVENT_SCHEMA))

    error = sinks.explain_complete_to_files(events, tmp_path / "demo")

    assert error.getCondition() == "STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE"
    assert "parquet" in str(error)
    assert not (tmp_path / "demo").exists()


@pytest.mark.smoke
def test_lesson_04_runs_by_itself_starting_its_simulator(course_home):
    result = run_script("streaming_tutorial/04_multiple_sinks.py", home=course_home)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE" in out
    assert "Started the ecommerce simulator for this run" in out
    assert "Batch: 0" in out and "|event_id" in out
    assert "spark.sql on the memory table at the end:" in out
    # The simulator writes 4 files of 20 events; every one reaches memory and Parquet.
    final = out.split("spark.sql on the memory table at the end:", 1)[1].split("\n\n", 1)[0]
    rows = [line.split() for line in final.splitlines()]
    counts = [int(row[1]) for row in rows if row and row[0] in ("view", "cart", "purchase")]
    assert sum(counts) == 80
    parquet = course_home / "output" / "04_multiple_sinks" / "events"
    assert list(parquet.glob("date=*")) and (parquet / "_spark_metadata").is_dir()
    assert "Partition folders in" in out


# --- common.runner.foreach_batch, which lessons 02 and 03 wrap their handlers in --------


def test_foreach_batch_turns_an_interruption_into_one_line_and_passes_other_errors():
    from common.runner import foreach_batch

    def interrupted(batch, batch_id):
        raise RuntimeError("An error occurred while calling o139.collectToPython.\n: java.lang.InterruptedException\n"
                           + "\tat java.base/...\n" * 500)

    def broken(batch, batch_id):
        raise ValueError("a real bug")

    with pytest.raises(RuntimeError) as caught:
        foreach_batch(interrupted)(None, 0)
    assert str(caught.value) == (
        "py4j.protocol.Py4JJavaError: An error occurred while calling a Spark job: java.lang.InterruptedException"
    )
    assert caught.value.__suppress_context__
    with pytest.raises(ValueError, match="a real bug"):
        foreach_batch(broken)(None, 0)
    assert foreach_batch(lambda batch, batch_id: batch_id * 2)(None, 21) == 42
