"""Bad input through the course's sources: every line of the corpus (corpus.py) is either a good
row, exactly as Python's own json reads it, or quarantined with its exact reason; good + quarantined
= lines in; nothing crashes.

One streaming query over a folder holding every file case, parsed by lesson 03's own
parse_transactions (the transactions); one over a Kafka topic holding the same lines as messages,
parsed by lesson 08's parse_events (the shop events, through common.parsing.parse_json); and the
field rules of every schema a lesson streams on a static DataFrame. The corpus itself is checked
in pure Python first.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from corpus import (
    BIG_LINE_BYTES,
    EVERY_DATASET,
    ISSUE_KINDS,
    NOT_UTF8,
    SHOP_EVENTS,
    TRANSACTIONS,
    Case,
    corpus,
    field_cases,
)
from pyspark.sql import functions as F

from common.parsing import parse_json, quarantined, valid_records
from conftest import load_lesson
from infra.kafka import ensure_topics, security_options
from infra.runner import finish, foreach_batch

LESSON_03 = load_lesson("03_file_streaming")
LESSON_08 = load_lesson("08_kafka_streaming")

# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11
# deprecates.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]
# Room for the 5 MB line: a topic's default max.message.bytes (and a producer's max_request_size) is
# 1 MB.
BIG_MESSAGES = 8 * 1024 * 1024
MIN_KINDS = 25  # the issue asks for at least 25 kinds of input, each with its verdict


# --- The corpus, in pure Python
# --------------------------------------------------------------------


@pytest.mark.parametrize("data", [TRANSACTIONS, SHOP_EVENTS], ids=lambda data: data.name)
def test_the_corpus_covers_every_kind_the_issue_lists(data):
    cases = corpus(data)
    assert set(ISSUE_KINDS) <= {case.kind for case in cases}
    assert len({case.name for case in cases}) == len(cases)  # one file, one Kafka key per case
    for case in cases:
        assert len(case.outcomes) == len(case.lines()) == len(case.kafka_values()), case.name
    assert len({case.kind for case in cases}) >= MIN_KINDS
    assert sum(outcome is None for case in cases for outcome in case.outcomes) >= 10
    assert len({outcome for case in cases for outcome in case.outcomes}) >= 12


def test_the_line_model_splits_like_spark_text_source():
    def lines(data: bytes, name: str = "f.json") -> list[bytes]:
        return Case("", name, data, (), "").lines()

    assert lines(b"a\nb\n") == [b"a", b"b"]  # a final line end adds no line
    assert lines(b"a\r\nb\rc") == [
        b"a",
        b"b",
        b"c",
    ]  # \r\n and a lone \r end lines; a last line needs none
    assert lines(b"\xef\xbb\xbfa\n\xef\xbb\xbfb\n") == [
        b"a",
        b"\xef\xbb\xbfb",
    ]  # a BOM is skipped at the start only
    assert lines(b"\n\n") == [b"", b""]
    assert lines(b"") == []


def test_the_schemas_state_the_obvious_ranges():
    ranges = {
        (data.name, spec.name): dict(spec.metadata)
        for data in EVERY_DATASET
        for spec in data.schema.fields
        if spec.metadata
    }
    assert ranges == {
        ("transactions", "amount"): {"min": 0},
        ("shop events", "price"): {"min": 0},
        ("shop events", "quantity"): {"min": 0},
        ("sensor readings", "humidity"): {"min": 0, "max": 100},
    }


# --- Every schema's field rules, on a static DataFrame
# ---------------------------------------------


@pytest.mark.parametrize("data", EVERY_DATASET, ids=lambda data: data.name)
def test_every_schema_quarantines_by_its_own_rules(spark, data):
    cases = field_cases(data)
    rows = [
        (case.name, number, line.decode())
        for case in cases
        for number, line in enumerate(case.lines())
    ]
    parsed = parse_json(
        spark.createDataFrame(rows, "case string, number int, value string"), data.schema
    )

    outcomes = {(row.case, row.number): row.quarantine_reason for row in parsed.collect()}

    assert outcomes == {
        (case.name, number): outcome
        for case in cases
        for number, outcome in enumerate(case.outcomes)
    }


# --- The sources, streaming
# ------------------------------------------------------------------------


def run_through_the_source(
    spark, parsed, schema, checkpoint, *, source: str
) -> tuple[dict, dict, int]:
    """One availableNow query: a lesson's parse -> valid_records | quarantined, both collected in
    each micro-batch. Returns ({source: good rows}, {source: [(reason, raw_line)]}, lines Spark
    read)."""
    good, bad = defaultdict(list), defaultdict(list)

    def collect(batch, batch_id: int) -> None:
        batch.persist()
        for row in valid_records(batch, schema, source).collect():
            good[row[source]].append(row.asDict())
        for row in quarantined(batch, source).collect():
            bad[row[source]].append((row.reason, row.raw_line))
        batch.unpersist()

    query = (
        parsed.writeStream.foreachBatch(foreach_batch(collect))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    finish([query])
    lines_read = sum(progress["numInputRows"] for progress in query.recentProgress)
    return good, bad, lines_read


def expected_bad(case: Case, lines: list[bytes]) -> list[tuple[str, str]]:
    """(reason, raw line) as they reach Python: bytes that are not UTF-8 become U+FFFD on the
    way."""
    return [(reason, line.decode("utf-8", errors="replace")) for reason, line in case.bad(lines)]


def check_every_case(
    cases: list[Case], lines_of, good: dict, bad: dict, lines_read: int, source: str
) -> None:
    """Each case's good rows and (reason, raw line)s exactly, in order; and good + quarantined =
    lines in."""
    schema = TRANSACTIONS.schema if source == "source_file" else SHOP_EVENTS.schema
    for case in cases:
        rows = [
            {name: value for name, value in row.items() if name != source}
            for row in good.get(case.name, [])
        ]
        assert rows == case.good(lines_of(case), schema), case.name
        assert bad.get(case.name, []) == expected_bad(case, lines_of(case)), case.name
    assert set(good) | set(bad) <= {case.name for case in cases}
    lines_in = sum(len(lines_of(case)) for case in cases)
    counts = (sum(len(rows) for rows in good.values()), sum(len(found) for found in bad.values()))
    assert counts == (
        sum(case.outcomes.count(None) for case in cases),
        lines_in - sum(case.outcomes.count(None) for case in cases),
    )
    assert sum(counts) == lines_read == lines_in
    print(f"{source}: {counts[0]} good + {counts[1]} quarantined = {lines_read} lines in")


def test_every_file_case_is_a_good_row_or_quarantined_with_its_reason(spark, tmp_path):
    cases = corpus(TRANSACTIONS)
    folder = tmp_path / "input"
    folder.mkdir()
    for case in cases:  # all there before the query starts: no half-written file is listed
        (folder / case.name).write_bytes(case.data)

    # Lesson 03's source, with no limit on the files per batch: one batch holds every case.
    lines = (
        spark.readStream.format("text")
        .load(str(folder))
        .withColumn("source_file", F.col("_metadata.file_name"))
    )
    good, bad, lines_read = run_through_the_source(
        spark,
        LESSON_03.parse_transactions(lines),
        TRANSACTIONS.schema,
        tmp_path / "checkpoint",
        source="source_file",
    )

    check_every_case(cases, Case.lines, good, bad, lines_read, "source_file")
    assert not any(
        "\r" in str(value) for rows in good.values() for row in rows for value in row.values()
    )
    assert not any("\r" in (raw or "") for found in bad.values() for _, raw in found)
    assert all(
        "\ufffd" in raw for found in bad.values() for reason, raw in found if reason == NOT_UTF8
    )
    assert (
        len(good["big.json"]) == 1
        and len(next(c for c in cases if c.name == "big.json").data) > BIG_LINE_BYTES
    )


@pytest.mark.kafka
def test_every_kafka_message_is_a_good_row_or_quarantined_with_its_reason(
    spark, kafka_bootstrap, topic, tmp_path
):
    from kafka import KafkaProducer
    from kafka.errors import MessageSizeTooLargeError

    cases, name = corpus(SHOP_EVENTS), topic("bad-input")
    ensure_topics(kafka_bootstrap, [name], configs={"max.message.bytes": str(BIG_MESSAGES)})
    producer = KafkaProducer(
        bootstrap_servers=kafka_bootstrap, max_request_size=BIG_MESSAGES, acks="all"
    )
    try:
        for case in cases:
            for value in case.kafka_values():
                producer.send(name, key=case.name.encode(), value=value)
        producer.flush()
    finally:
        producer.close()

    # Lesson 08's source, with no limit on the offsets per batch, and its parse (key and value
    # as text, where each message came from, parse_json).
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .options(**security_options(kafka_bootstrap))
        .option("subscribe", name)
        .option("startingOffsets", "earliest")
        .load()
    )
    good, bad, lines_read = run_through_the_source(
        spark,
        LESSON_08.parse_events(raw),
        SHOP_EVENTS.schema,
        tmp_path / "checkpoint",
        source="key",
    )

    check_every_case(cases, Case.kafka_values, good, bad, lines_read, "key")
    assert not any(
        "\r" in str(value) for rows in good.values() for row in rows for value in row.values()
    )

    # A producer left at its defaults refuses the 5 MB line itself, and says which setting to raise.
    big = next(case for case in cases if case.name == "big.json").kafka_values()[0]
    default = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    try:
        with pytest.raises(MessageSizeTooLargeError, match="max_request_size"):
            default.send(name, value=big)
    finally:
        default.close()
