"""What the simulators generate: reproducible records, true to the course's schemas and to life.

These are the pure ``make_*`` functions the scripts, initial_setup.py and the Kafka
producer share; no files, no clock.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from datetime import timedelta
from itertools import pairwise

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from common import config, paths, schemas
from common.timestamps import parse_iso
from data_generators import (
    generate_ad_events,
    generate_ecommerce_events,
    generate_sensor_data,
    simulate_file_data,
)
from infra.files import json_lines

SCHEMAS = {
    "transactions": schemas.TRANSACTION_SCHEMA,
    "ecommerce": schemas.ECOMMERCE_EVENT_SCHEMA,
    "sensors": schemas.SENSOR_SCHEMA,
}
MAKERS = {
    "transactions": simulate_file_data.make_transactions,
    "ecommerce": generate_ecommerce_events.make_ecommerce_events,
    "sensors": generate_sensor_data.make_sensor_readings,
}


@pytest.mark.parametrize("name", MAKERS)
def test_records_are_a_pure_function_of_their_index(name):
    make = MAKERS[name]

    assert make(10) + make(15, start=10) == make(25)
    assert make(5, seed=1) != make(5, seed=2)


# --- the records match the schemas -----------------------------------------------------------


@pytest.mark.parametrize("name", MAKERS)
def test_records_parse_with_the_course_schema_without_nulls(name, spark, tmp_path):
    schema = SCHEMAS[name]
    records = MAKERS[name](60)
    assert [list(record) for record in records] == [schema.fieldNames()] * len(records)
    (tmp_path / "data.json").write_text(json_lines(records))

    with_corrupt = StructType([*schema.fields, StructField("_corrupt_record", StringType())])
    df = spark.read.schema(with_corrupt).json(str(tmp_path / "data.json")).cache()
    any_null = F.greatest(*[F.col(field).isNull().cast("int") for field in schema.fieldNames()])

    assert df.count() == 60
    assert df.filter(F.col("_corrupt_record").isNotNull()).count() == 0
    assert df.filter(any_null == 1).count() == 0
    df.unpersist()


def test_transactions_look_like_payments():
    records = simulate_file_data.make_transactions(200)
    categories = set(simulate_file_data.product_categories())

    assert [r["transaction_id"] for r in records[:3]] == ["TXN-000001", "TXN-000002", "TXN-000003"]
    assert all(r["amount"] > 0 and round(r["amount"], 2) == r["amount"] for r in records)
    assert (
        {r["category"] for r in records}
        == categories
        == {"Electronics", "Sports", "Home", "Fashion"}
    )
    times = [parse_iso(r["timestamp"]) for r in records]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert times[0] - config.BASE_EVENT_TIME < timedelta(
        seconds=simulate_file_data.SECONDS_BETWEEN_TRANSACTIONS
    )


def test_ecommerce_events_follow_the_funnel():
    events = generate_ecommerce_events.make_ecommerce_events(500)
    products = {p["product_id"]: p for p in generate_ecommerce_events.load_products()}
    kinds = Counter(event["event_type"] for event in events)

    assert set(kinds) == {"view", "cart", "purchase"}
    assert kinds["view"] > kinds["cart"] > kinds["purchase"] > 0
    assert parse_iso(events[0]["timestamp"]) == config.BASE_EVENT_TIME
    gaps = [parse_iso(b["timestamp"]) - parse_iso(a["timestamp"]) for a, b in pairwise(events)]
    assert all(timedelta(seconds=1) <= gap <= timedelta(seconds=4) for gap in gaps)
    viewed, carted = set(), set()
    for event in events:
        product = products[event["product_id"]]
        assert (event["product_name"], event["category"], event["price"]) == (
            product["product_name"],
            product["category"],
            product["list_price"],
        )
        shopper_and_product = (event["user_id"], event["product_id"])
        if event["event_type"] == "view":
            assert event["quantity"] == 1
            viewed.add(shopper_and_product)
        elif event["event_type"] == "cart":  # only what the same shopper viewed
            assert shopper_and_product in viewed and 1 <= event["quantity"] <= 3
            carted.add((*shopper_and_product, event["quantity"]))
        else:  # a purchase buys what the same shopper put in the cart, in the same quantity
            assert (*shopper_and_product, event["quantity"]) in carted


def test_products_csv_matches_the_schema(spark):
    with open(paths.PRODUCTS_CSV, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == schemas.PRODUCT_SCHEMA.fieldNames()

    df = (
        spark.read.schema(schemas.PRODUCT_SCHEMA)
        .option("header", True)
        .option("mode", "FAILFAST")
        .csv(str(paths.PRODUCTS_CSV))
    )
    categories = Counter(row.category for row in df.collect())

    assert df.count() == 12 and df.dropna().count() == 12
    assert categories == {"Electronics": 3, "Sports": 3, "Home": 3, "Fashion": 3}
    assert [row.product_id for row in df.orderBy("product_id").collect()] == [
        f"P{n:03d}" for n in range(1, 13)
    ]


# --- sensor readings: disorder and lateness ----------------------------------------------------


def test_late_readings_are_older_than_readings_that_arrived_before_them():
    readings = generate_sensor_data.make_sensor_readings(
        400, late_fraction=0.1, max_lateness_seconds=60, disorder_seconds=5
    )
    assert [r["reading_id"] for r in readings] == list(range(1, 401))  # arrival order

    newest_so_far = None
    behind = []  # how far each reading's event time is behind the newest one that arrived before it
    for reading in readings:
        taken = parse_iso(reading["event_time"])
        if newest_so_far is not None:
            behind.append((newest_so_far - taken).total_seconds())
        newest_so_far = taken if newest_so_far is None else max(newest_so_far, taken)

    very_late = [seconds for seconds in behind if seconds > 5]
    assert 20 <= len(very_late) <= 60  # about 10% of 400
    assert max(behind) <= 60
    assert sum(seconds > 30 for seconds in behind) >= 5  # a 30 s watermark drops some of them
    assert any(seconds > 0 for seconds in behind if seconds <= 5)  # and mild disorder exists too
    assert {r["sensor_id"] for r in readings} == {"SENSOR-0", "SENSOR-1", "SENSOR-2"}


def test_readings_in_order_when_asked():
    readings = generate_sensor_data.make_sensor_readings(100, late_fraction=0, disorder_seconds=0)
    times = [parse_iso(r["event_time"]) for r in readings]

    assert times == [config.BASE_EVENT_TIME + timedelta(seconds=n) for n in range(100)]
    # Only the times depend on the lateness options: the same sensors and temperatures.
    default = generate_sensor_data.make_sensor_readings(100)
    assert [(r["sensor_id"], r["temperature"]) for r in readings] == [
        (r["sensor_id"], r["temperature"]) for r in default
    ]


def test_every_reading_is_very_late_when_late_fraction_is_one():
    readings = generate_sensor_data.make_sensor_readings(
        50, late_fraction=1, max_lateness_seconds=20, disorder_seconds=5
    )
    delays = [
        (config.BASE_EVENT_TIME + timedelta(seconds=n) - parse_iso(r["event_time"])).total_seconds()
        for n, r in enumerate(readings)
    ]

    assert all(6 <= delay <= 20 for delay in delays)
    assert generate_sensor_data.count_late(readings, config.BASE_EVENT_TIME, 5) == 50


def test_malformed_every_breaks_exactly_every_nth_line():
    text = simulate_file_data.render_file(
        simulate_file_data.make_transactions(10), malformed_every=4
    )
    broken = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            json.loads(line)
        except json.JSONDecodeError:
            broken.append(number)

    assert broken == [4, 8]
    assert simulate_file_data.render_file(simulate_file_data.make_transactions(10)) == json_lines(
        simulate_file_data.make_transactions(10)
    )


# --- ad impressions and clicks ----------------------------------------------------------------


def test_ad_files_put_impressions_before_clicks_and_leave_out_empty_files():
    chunks = [
        ([{"impression_id": "IMP-1"}], []),
        ([], [{"click_id": "CLK-1"}]),
        ([{"impression_id": "IMP-2"}], [{"click_id": "CLK-2"}, {"click_id": "CLK-3"}]),
    ]

    batches = list(generate_ad_events.ad_files(chunks, config.BASE_EVENT_TIME, seed=5))

    assert [[(file.name, file.note) for file in batch] for batch in batches] == [
        [("impressions/impressions-20250115T103000Z-s5-0000.json", "1 impression")],
        [("clicks/clicks-20250115T103000Z-s5-0001.json", "1 click")],
        [
            ("impressions/impressions-20250115T103000Z-s5-0002.json", "1 impression"),
            ("clicks/clicks-20250115T103000Z-s5-0002.json", "2 clicks"),
        ],
    ]
    assert [json.loads(line) for line in batches[2][1].text.splitlines()] == chunks[2][1]
