"""Lesson 04: one stream into three sinks. Exact rows on hand-written input, no clock.
(Lessons 02 and 03 moved to tests/lessons/.)"""

from __future__ import annotations

from datetime import date

import pytest

from common.microbatch import stream_batches, write_batches
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from conftest import load_lesson, run_script

sinks = load_lesson("04_multiple_sinks")


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
