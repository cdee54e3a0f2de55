"""common.parsing: every JSON record is either a good row or quarantined with its reason.

The lines come from lesson 03's file source (the lesson that teaches the parse); the
quarantine sink is written out here, as the lessons write theirs.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import DoubleType, StringType, StructField, StructType, TimestampType

from common.parsing import (
    parse_json,
    quarantine_counts,
    quarantine_summary,
    quarantined,
    valid_records,
)
from conftest import load_lesson
from infra.files import write_atomically

LESSON_03 = load_lesson("03_file_streaming")

SCHEMA = StructType(
    [
        StructField("id", StringType(), nullable=False),
        StructField("amount", DoubleType()),
        StructField("note", StringType()),
        StructField("at", TimestampType(), nullable=False),
    ]
)

GOOD = '{"id":"a","amount":1.5,"at":"2025-01-15T10:30:00Z"}'
CASES = [
    (GOOD, None),
    ('{"id":"b","amount":2,"at":"2025-01-15T10:30:00Z","extra":"ignored"}', None),
    ('{"id":"c","amount":1.', "not a JSON object"),
    ("not json at all", "not a JSON object"),
    ('[{"id":"d"}]', "not a JSON object"),
    ("", "empty line"),
    ('{"id":"e","amount":"ten","at":"2025-01-15T10:30:00Z"}', "amount is not a number"),
    ('{"amount":3.0,"at":"2025-01-15T10:30:00Z"}', "missing id"),
    ('{"id":"f"}', "missing at"),
    ('{"id":"g","at":"yesterday"}', "at is not a date and time"),
    ('{"id":"h","amount":1e400,"at":"2025-01-15T10:30:00Z"}', "amount is not a finite number"),
]


@pytest.fixture(scope="module")
def parsed(spark):
    lines = spark.createDataFrame([(text,) for text, _ in CASES], "value string")
    return parse_json(lines, SCHEMA)


def test_each_bad_kind_gets_its_reason(parsed):
    reasons = {row.value: row.quarantine_reason for row in parsed.collect()}
    assert reasons == {text: reason for text, reason in CASES}


def test_good_plus_quarantined_is_every_line(parsed):
    good = valid_records(parsed, SCHEMA).collect()
    bad = quarantined(parsed).collect()
    assert [row.id for row in good] == ["a", "b"]
    assert good[0].amount == 1.5
    assert len(good) + len(bad) == len(CASES)
    assert {row.raw_line for row in bad} == {text for text, reason in CASES if reason}


def test_file_lines_carry_their_file_name(spark, tmp_path):
    write_atomically(tmp_path / "in", "one.json", GOOD + "\n{broken\n")
    lines = LESSON_03.read_transactions(spark, tmp_path / "in")
    query = (
        parse_json(lines, SCHEMA)
        .writeStream.format("memory")
        .queryName("parsed_lines")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    rows = sorted(spark.table("parsed_lines").collect(), key=lambda row: row.value)
    assert [(row.source_file, row.quarantine_reason) for row in rows] == [
        ("one.json", None),
        ("one.json", "not a JSON object"),
    ]


def test_the_quarantine_sink_keeps_each_bad_line_once_across_runs(spark, tmp_path):
    write_atomically(tmp_path / "in", "one.json", GOOD + "\n{broken\n\n")
    folder = tmp_path / "quarantine"
    assert quarantine_counts(spark, folder) == []
    assert quarantine_summary(spark, folder) == "none"

    def run_once() -> None:
        lines = LESSON_03.read_transactions(spark, tmp_path / "in")
        bad = quarantined(parse_json(lines, SCHEMA), "source_file")
        query = (
            bad.writeStream.format("json")
            .outputMode("append")
            .option("path", str(folder))
            .option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(availableNow=True)
            .queryName("test_quarantine")
            .start()
        )
        query.awaitTermination()
        assert query.exception() is None

    run_once()
    write_atomically(tmp_path / "in", "two.json", "not json at all\n")
    run_once()  # resumes from its checkpoint: only two.json is new

    assert quarantine_counts(spark, folder) == [("not a JSON object", 2), ("empty line", 1)]
    assert quarantine_summary(spark, folder) == "2 (not a JSON object), 1 (empty line)"
    rows = (
        spark.read.schema("reason STRING, raw_line STRING, source_file STRING")
        .json(str(folder))
        .collect()
    )
    assert sorted((row.source_file, row.raw_line) for row in rows) == [
        ("one.json", ""),
        ("one.json", "{broken"),
        ("two.json", "not json at all"),
    ]
