"""Lesson 03 writes out its parse and its quarantine reasons for TRANSACTION_SCHEMA; later lessons
reuse the schema-driven version in common/parsing.py. Both must give every line the same verdict.

Every line of the bad-input corpus (tests/hardening/corpus.py: as the file source splits a
file, and as Kafka messages) and every line the lesson's simulator writes goes through
``parse_transactions`` and ``parsing.parse_json(..., TRANSACTION_SCHEMA)`` as one batch
DataFrame: the reasons and the good rows must be equal, and where the corpus states the
verdict, both must give it.
"""

from __future__ import annotations

import sys

from pyspark.sql import functions as F

from common.parsing import REASON_COLUMN, parse_json
from common.schemas import TRANSACTION_SCHEMA
from conftest import ROOT, load_lesson
from data_generators.simulate_file_data import make_transactions, render_file

sys.path.insert(0, str(ROOT / "tests" / "hardening"))  # corpus.py sits beside the hardening tests
from corpus import NOT_JSON, TRANSACTIONS, corpus  # noqa: E402

lesson = load_lesson("03_file_streaming")
# The lines as bytes: a line that is not valid UTF-8 must reach the parse as it is, the way
# Spark's text source keeps its bytes (a cast from binary to string does not check them).
LINES_SCHEMA = "line_id string, number int, data binary"
SIMULATED = 30  # the simulator's transactions: three files' worth
MALFORMED_EVERY = 4  # as the lesson's simulator breaks them (--malformed-every 4)


def corpus_lines() -> tuple[list[tuple], dict[tuple, str | None]]:
    """Every line of the corpus for the transactions, as rows, and the verdict it states."""
    rows = []
    expected = {}
    for case in corpus(TRANSACTIONS):
        for way, lines in (("file", case.lines()), ("kafka", case.kafka_values())):
            for number, line in enumerate(lines):
                rows.append((f"{case.name} as {way}", number, line))
                expected[(f"{case.name} as {way}", number)] = case.outcomes[number]
    return rows, expected


def simulated_lines() -> tuple[list[tuple], dict[tuple, str | None]]:
    """The lines the lesson's simulator writes, every MALFORMED_EVERY-th cut in half."""
    text = render_file(make_transactions(SIMULATED), malformed_every=MALFORMED_EVERY)
    rows = []
    expected = {}
    for number, line in enumerate(text.splitlines()):
        rows.append(("simulator", number, line.encode()))
        broken = (number + 1) % MALFORMED_EVERY == 0
        expected[("simulator", number)] = NOT_JSON if broken else None
    return rows, expected


def verdicts(parsed) -> dict[tuple, str | None]:
    rows = parsed.select("line_id", "number", REASON_COLUMN).collect()
    return {(row.line_id, row.number): row[REASON_COLUMN] for row in rows}


def good_rows(parsed) -> list[tuple]:
    good = parsed.where(F.col(REASON_COLUMN).isNull())
    rows = good.select("line_id", "number", *TRANSACTION_SCHEMA.fieldNames()).collect()
    return sorted(tuple(row) for row in rows)


def test_lesson_03_and_parse_json_give_every_line_the_same_verdict(spark):
    corpus_rows, corpus_expected = corpus_lines()
    simulator_rows, simulator_expected = simulated_lines()
    raw = spark.createDataFrame(corpus_rows + simulator_rows, LINES_SCHEMA)
    lines = raw.withColumn("value", F.col("data").cast("string")).drop("data")

    by_lesson = lesson.parse_transactions(lines)
    by_parsing = parse_json(lines, TRANSACTION_SCHEMA)

    assert by_lesson.columns == by_parsing.columns
    lesson_verdicts = verdicts(by_lesson)
    assert lesson_verdicts == verdicts(by_parsing)
    assert lesson_verdicts == {**corpus_expected, **simulator_expected}
    assert good_rows(by_lesson) == good_rows(by_parsing)
    # Every reason lesson 03 writes out is among them (all but its last resort, "a field has
    # the wrong type", which no line of the corpus needs).
    assert set(lesson_verdicts.values()) >= {
        None,
        "empty line",
        "not valid UTF-8",
        "not a JSON object",
        "text after the JSON object",
        "nested more than 999 levels deep",
        "transaction_id appears twice",
        "user_id appears twice",
        "amount appears twice",
        "category appears twice",
        "timestamp appears twice",
        "missing transaction_id",
        "transaction_id is not a string",
        "missing user_id",
        "user_id is not a string",
        "missing amount",
        "amount is not a number",
        "amount is not a finite number",
        "amount below 0",
        "category is not a string",
        "missing timestamp",
        "timestamp is not a date and time",
    }
