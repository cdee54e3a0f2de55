"""Lesson 13 (triggers): each trigger on finite input with exact results, real-time mode against the
test run's real broker (every message transformed exactly once), the refusals, and the lesson as a
learner runs it. No latency figure is asserted: latency belongs to the lesson's report and the
benchmarks, not to a test.
"""

from __future__ import annotations

import functools
import json
import re

import lesson13_latency as latency
import pytest
from pyspark.sql import functions as F

from conftest import load_lesson, prose, run_script
from infra.kafka import consume_all, ensure_topics
from infra.runner import drain, is_real_time, stop_between_batches, wait_until
from teaching import progress
from teaching.demos import show_refusal
from teaching.microbatch import stream_batches, write_batches

lesson = load_lesson("13_triggers")
# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11
# deprecates.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]
WORDS = ["spark", "kafka", "delta", "flink", "arrow", "spark"]


def expected(ident: int, word: str, sent_ms: int | None = None) -> dict:
    """What the pipeline makes of one message, worked out here by hand."""
    kinds = dict(lesson.WORD_KINDS)
    return {
        "id": ident,
        "word": word.upper(),
        "kind": kinds[word],
        **({"sent_ms": sent_ms} if sent_ms else {}),
    }


@pytest.mark.kafka
def test_real_time_mode_transforms_every_message_exactly_once(
    spark, kafka_bootstrap, topic, tmp_path
):
    source, results = topic("rt-in"), topic("rt-out")
    ensure_topics(
        kafka_bootstrap, [source, results], partitions=1
    )  # one core per partition: 1 of our 2
    sent = latency.send_timed(
        kafka_bootstrap, source, [{"id": n, "word": WORDS[n % 6]} for n in range(12)]
    )

    tagged = lesson.build_tagged(
        lesson.read_messages(spark, kafka_bootstrap, source), lesson.read_kinds(spark)
    )
    query = lesson.start_kafka_sink(
        lesson.to_kafka_record(tagged), kafka_bootstrap, results, tmp_path / "rt", lesson.REALTIME
    )
    try:
        assert is_real_time(query)
        wait_until(
            lambda: latency.record_count(kafka_bootstrap, results) >= 12 or not query.isActive,
            "12 results",
            180,
        )
        assert query.exception() is None
    finally:
        stop_between_batches(query)

    written = [
        (record.key.decode(), json.loads(record.value))
        for record in consume_all(kafka_bootstrap, results)
    ]
    assert written == [
        (message["word"].upper(), expected(message["id"], message["word"], message["sent_ms"]))
        for message in sent
    ]


@pytest.mark.kafka
def test_available_now_reads_exactly_what_is_there_and_once_ignores_the_limit(
    spark, kafka_bootstrap, topic, tmp_path, monkeypatch
):
    words = topic("words")
    ensure_topics(kafka_bootstrap, [words], partitions=1)
    latency.send_timed(kafka_bootstrap, words, [{"id": n, "word": WORDS[n % 6]} for n in range(25)])
    monkeypatch.setattr(lesson, "WORDS_TOPIC", words)
    kinds = lesson.read_kinds(spark)

    backfill = lesson.start_and_run(
        spark, kafka_bootstrap, kinds, lesson.start_available_now, tmp_path / "now"
    )
    once = lesson.start_and_run(spark, kafka_bootstrap, kinds, lesson.start_once, tmp_path / "once")
    again = lesson.start_and_run(
        spark, kafka_bootstrap, kinds, lesson.start_available_now, tmp_path / "now"
    )

    assert [report["numInputRows"] for report in progress.batches_run(backfill)] == [10, 10, 5]
    assert [report["numInputRows"] for report in progress.batches_run(once)] == [
        25
    ]  # maxOffsetsPerTrigger ignored
    assert (
        progress.rows_read(progress.batches_run(again)) == 0
    )  # its checkpoint holds all 25 already


@pytest.mark.parametrize(
    "trigger", [{}, {"processingTime": "200 milliseconds"}], ids=["default", "processingTime"]
)
def test_default_and_processing_time_triggers_give_exact_rows(spark, tmp_path, trigger):
    write_batches(
        tmp_path / "in",
        [[{"id": 1, "word": "spark"}, {"id": 2, "word": "cobol"}], [{"id": 3, "word": "arrow"}]],
    )
    messages = stream_batches(spark, tmp_path / "in", "id INT, word STRING, sent_ms BIGINT")
    name = f"tagged_{len(trigger)}"
    writer = (
        lesson.build_tagged(messages, lesson.read_kinds(spark))
        .writeStream.format("memory")
        .queryName(name)
    )
    if trigger:  # no .trigger() call at all: the default
        writer = writer.trigger(**trigger)
    query = writer.start()

    drain([query])  # processAllAvailable, then a stop between batches

    rows = sorted(spark.table(name).collect(), key=lambda row: row.id)
    assert [row.asDict() for row in rows] == [
        {**expected(1, "spark"), "sent_ms": None},
        {**expected(3, "arrow"), "sent_ms": None},
    ]  # cobol: no kind
    assert not query.isActive


@pytest.mark.kafka
def test_real_time_mode_refuses_append_state_the_rate_source_and_the_memory_sink(
    spark, kafka_bootstrap, topic, monkeypatch, capsys
):
    source = topic("refused")
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    monkeypatch.setattr(lesson, "LATENCY_TOPIC", source)
    kinds = lesson.read_kinds(spark)
    conditions = {}
    for start in (
        lesson.start_realtime_append,
        lesson.start_realtime_deduplicated,
        lesson.start_realtime_rate,
        lesson.start_realtime_memory,
    ):
        what = start.__doc__.split("\n\n")[0]
        conditions[start.__name__] = show_refusal(
            functools.partial(start, spark, kafka_bootstrap, kinds), what
        )
    # A Python UDF, which the lesson's texts list among the refused operators.
    shout = F.udf(lambda word: word.upper(), "string")
    conditions["udf"] = show_refusal(
        lambda: (
            lesson.read_messages(spark, kafka_bootstrap, lesson.LATENCY_TOPIC)
            .select(shout("word").alias("word"))
            .writeStream.format("console")
            .outputMode("update")
            .trigger(**lesson.REALTIME)
            .start()
        ),
        "Real-time mode with a Python UDF",
    )

    assert (
        "STREAMING_REAL_TIME_MODE.OUTPUT_MODE_NOT_SUPPORTED" in conditions["start_realtime_append"]
    )
    assert "OPERATOR_OR_SINK_NOT_IN_ALLOWLIST" in conditions["start_realtime_deduplicated"]
    assert "OPERATOR_OR_SINK_NOT_IN_ALLOWLIST" in conditions["udf"]
    assert "EvalPython" in conditions["udf"], conditions["udf"]
    assert (
        "STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED" in conditions["start_realtime_rate"]
    )
    assert "MemorySink is not in the sink allowlist" in conditions["start_realtime_memory"]
    out = capsys.readouterr().out
    # The rate source and dropDuplicates pass start() and fail once the query runs.
    assert (
        "Real-time mode on the rate source starts, then fails (query.exception()):\n"
        "  [STREAMING_REAL_TIME" in out
    )
    assert "Real-time mode with dropDuplicates starts, then fails" in out


@pytest.mark.kafka
def test_continuous_mode_refuses_the_pipelines_static_table(
    spark, kafka_bootstrap, topic, monkeypatch
):
    source = topic("continuous")
    ensure_topics(kafka_bootstrap, [source], partitions=1)
    monkeypatch.setattr(lesson, "WORDS_TOPIC", source)

    message = show_refusal(
        lambda: lesson.start_continuous(spark, kafka_bootstrap, lesson.read_kinds(spark)),
        "continuous",
    )

    assert "Continuous processing does not support LocalRelation operations" in message


@pytest.mark.kafka
@pytest.mark.smoke
def test_lesson_13_shows_every_trigger_and_measures_both_latencies(kafka_bootstrap, course_home):
    result = run_script(
        "streaming_tutorial/13_triggers.py", "--duration", "3", home=course_home, timeout=300
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    for row in (
        r"default \(no \.trigger\(\)\)\s+4\s+10\+10\+10\+10\s+[\d.]+ s\s+no",
        r"processingTime='2 seconds'\s+4\s+10\+10\+10\+10\s+[\d.]+ s\s+no",
        r"availableNow=True\s+4\s+10\+10\+10\+10\s+[\d.]+ s\s+yes",
        r"once=True \(deprecated\)\s+1\s+40\s+-\s+yes",
    ):
        assert re.search(row, out), row
    assert "This pipeline in continuous mode fails:" in out
    assert out.count("[STREAMING_REAL_TIME_MODE.") == 4
    assert re.search(r"realTime='5 seconds'\s+60\s+\d+ ms\s+\d+ ms", out), out[-2000:]
    assert re.search(r"processingTime='0 seconds'\s+60\s+\d+ ms\s+\d+ ms", out)
    assert "Both queries read the same 60 messages" in prose(out)
