"""Lesson 05: word count over a socket. Exact counts on hand-written lines, then over the real
text server; the lesson run as a learner runs it; a missing server explained, not a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from pyspark.sql.types import StringType, StructField, StructType

from common import config
from conftest import ROOT, free_port, load_lesson, prose, run_script
from infra import simulators
from infra.errors import CourseError
from infra.runner import wait_until
from teaching.microbatch import collect_batches, stream_batches, write_batches

lesson = load_lesson("05_socket_streaming")
LINES = StructType([StructField("value", StringType())])


def top_words(lines):
    return lesson.build_top_words(lesson.build_word_counts(lesson.parse_words(lines)))


def test_word_counts_accumulate_across_batches(spark, tmp_path):
    write_batches(
        tmp_path / "in",
        [
            [{"value": "Spark streaming is awesome"}, {"value": "   "}, {"value": "spark, SPARK!"}],
            [{"value": "streaming streaming streaming"}, {"value": "don't panic"}],
        ],
    )

    run = collect_batches(
        top_words(stream_batches(spark, tmp_path / "in", LINES)),
        tmp_path / "chk",
        output_mode="complete",
    )

    # Complete mode: the whole table after each batch, most frequent first, ties alphabetical.
    assert [[tuple(row) for row in batch.rows] for batch in run.batches] == [
        [("spark", 3), ("awesome", 1), ("is", 1), ("streaming", 1)],
        [("streaming", 4), ("spark", 3), ("awesome", 1), ("don't", 1), ("is", 1), ("panic", 1)],
    ]


def test_word_count_over_the_real_socket_server(spark, tmp_path):
    script = tmp_path / "lines.txt"
    script.write_text("the quick brown fox\nThe lazy dog\n\nthe end\n", encoding="utf-8")
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "data_generators" / "socket_server.py"),
            "--file",
            str(script),
            "--interval",
            "0",
            "--port",
            str(port),
        ],
        env={**os.environ, "STREAMING_COURSE_HOME": str(tmp_path / "home")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    query = None
    try:
        assert simulators.wait_for_port(
            config.SOCKET_HOST, port, 60, stop_if=lambda: server.poll() is not None
        )
        counts = top_words(lesson.read_lines(spark, config.SOCKET_HOST, port))
        query = (
            counts.writeStream.outputMode("complete")
            .format("memory")
            .queryName("socket_words")
            .start()
        )

        def all_words_counted() -> bool:
            query.processAllAvailable()
            return sum(row["count"] for row in spark.table("socket_words").collect()) == 9

        # The lines reach Spark's socket reader when they reach it: poll, bounded; the table is
        # the check.
        wait_until(all_words_counted, "Spark to count the 9 words the server sent", 60, poll=0.2)
        assert [tuple(row) for row in spark.table("socket_words").collect()] == [
            ("the", 3),
            ("brown", 1),
            ("dog", 1),
            ("end", 1),
            ("fox", 1),
            ("lazy", 1),
            ("quick", 1),
        ]
    finally:
        if query is not None:
            query.stop()
        simulators.stop_process(server)


def test_a_missing_server_is_explained_before_spark_starts(monkeypatch):
    monkeypatch.setattr(simulators, "SERVER_START_SECONDS", 0.3)
    port = free_port()

    with pytest.raises(
        CourseError, match=f"Nothing accepts connections on {config.SOCKET_HOST}:{port}"
    ):
        lesson.main(["--no-simulator", "--port", str(port)])


@pytest.mark.smoke
def test_lesson_05_runs_by_itself(course_home):
    port = free_port()
    result = run_script(
        "streaming_tutorial/05_socket_streaming.py",
        "--duration",
        "3",
        "--port",
        str(port),
        home=course_home,
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert (
        "Started the socket simulator for this run: "
        f"python data_generators/socket_server.py --demo --host {config.SOCKET_HOST} --port {port}"
    ) in out
    # The demo's first sentence is "spark streaming is awesome": it is in the first table.
    assert "|word     |count|" in out and re.search(r"\|spark\s*\|\d+\s*\|", out), out[-3000:]
    assert re.search(r"Stopped \(--duration 3\): \d+ lines counted", prose(out))
