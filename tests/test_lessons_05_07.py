"""Lessons 05-06: word count over a socket, windows on event time (07 is in tests/lessons/).

Every result is checked row by row on finite, hand-written input; the only waiting is
for a real socket server's lines to reach Spark, bounded and checked on the sink.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta

import pytest
from pyspark.sql import Row
from pyspark.sql.types import StringType, StructField, StructType

from common import config, simulators
from common.microbatch import collect_batches, stream_batches, write_batches
from common.schemas import SENSOR_SCHEMA
from conftest import ROOT, load_lesson, run_script
from data_generators.socket_server import DEMO_SENTENCES

socket_lesson = load_lesson("05_socket_streaming")
LINES = StructType([StructField("value", StringType())])


def at(second: float) -> datetime:
    """10:30:00 + ``second`` as Spark returns it: a naive datetime in the local time zone."""
    return datetime.fromtimestamp((config.BASE_EVENT_TIME + timedelta(seconds=second)).timestamp())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((config.SOCKET_HOST, 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------- 05 socket word count


def test_word_counts_accumulate_across_batches(spark, tmp_path):
    write_batches(tmp_path / "in", [
        [{"value": "Spark streaming is awesome"}, {"value": "   "}, {"value": "spark, SPARK!"}],
        [{"value": "streaming streaming streaming"}, {"value": "don't panic"}],
    ])
    lines = stream_batches(spark, tmp_path / "in", LINES)

    run = collect_batches(socket_lesson.build_word_counts(lines), tmp_path / "chk", output_mode="complete")

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
        [sys.executable, str(ROOT / "data_generators" / "socket_server.py"), "--file", str(script),
         "--interval", "0", "--port", str(port)],
        env={**os.environ, "STREAMING_COURSE_HOME": str(tmp_path / "home")},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    query = None
    try:
        wait_until(lambda: simulators.port_open(config.SOCKET_HOST, port), "the server to listen")
        counts = socket_lesson.build_word_counts(socket_lesson.read_lines(spark, config.SOCKET_HOST, port))
        query = counts.writeStream.outputMode("complete").format("memory").queryName("socket_words").start()

        def all_words_counted() -> bool:
            query.processAllAvailable()
            return sum(row["count"] for row in spark.table("socket_words").collect()) == 9

        wait_until(all_words_counted, "Spark to count the 9 words the server sent")
        assert [tuple(row) for row in spark.table("socket_words").collect()] == [
            ("the", 3), ("brown", 1), ("dog", 1), ("end", 1), ("fox", 1), ("lazy", 1), ("quick", 1),
        ]
    finally:
        if query is not None:
            query.stop()
        simulators.stop_process(server)


def wait_until(condition, what: str, timeout: float = 60) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout`` seconds. Never an oracle:
    the assertion that follows checks the exact result."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what} after {timeout} s")
        pause.wait(0.2)


@pytest.mark.smoke
def test_lesson_05_runs_by_itself(course_home):
    result = run_script("streaming_tutorial/05_socket_streaming.py", home=course_home,
                        env={"SOCKET_PORT": str(free_port())})

    assert result.returncode == 0, result.stderr[-3000:]
    assert "Started the socket simulator for this run: python data_generators/socket_server.py --demo" in result.stdout
    streaming = sum(sentence.split().count("streaming") for sentence in DEMO_SENTENCES)
    assert re.search(rf"\|streaming\s*\|{streaming}\s*\|", result.stdout), result.stdout[-3000:]
    assert "of counting" in result.stdout


def test_lesson_05_explains_a_missing_server(course_home):
    port = free_port()
    result = run_script("streaming_tutorial/05_socket_streaming.py", "--no-simulator", "--duration", "1",
                        "--port", str(port), home=course_home)

    assert result.returncode == 1
    assert f"Nothing accepts connections on {config.SOCKET_HOST}:{port}" in result.stderr
    assert "Traceback" not in result.stderr
