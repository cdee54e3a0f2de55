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
windowing = load_lesson("06_windowing")
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


# ---------------------------------------------------------------- 06 windows


@pytest.fixture
def scenario_readings(spark, tmp_path):
    write_batches(tmp_path / "in", windowing.scenario_batches())
    return stream_batches(spark, tmp_path / "in", SENSOR_SCHEMA)


def window_rows(run) -> list[list[tuple]]:
    return [[tuple(row) for row in batch.rows] for batch in run.batches]


def test_tumbling_windows_use_event_time_and_start_inclusive(scenario_readings, tmp_path):
    windows = windowing.build_tumbling_windows(scenario_readings)

    run = collect_batches(windows, tmp_path / "chk", output_mode="update", sort_key=lambda r: r.window_start)

    assert window_rows(run) == [
        [(at(0), at(10), 3, 20.0, [1, 2, 3]),
         (at(10), at(20), 3, 21.33, [4, 5, 6])],  # r4 at exactly 10:30:10 opens the next window
        [(at(0), at(10), 5, 20.0, [1, 2, 3, 8, 9]),  # r8, r9 arrived last but happened first
         (at(20), at(30), 1, 23.0, [7])],
    ]


def test_sliding_windows_hold_every_reading_twice(scenario_readings, tmp_path):
    windows = windowing.build_sliding_windows(scenario_readings)

    run = collect_batches(windows, tmp_path / "chk", output_mode="update", sort_key=lambda r: r.window_start)

    assert window_rows(run) == [
        [(at(-10), at(10), 3, 20.0, [1, 2, 3]),
         (at(0), at(20), 6, 20.67, [1, 2, 3, 4, 5, 6]),
         (at(10), at(30), 3, 21.33, [4, 5, 6])],
        [(at(-10), at(10), 5, 20.0, [1, 2, 3, 8, 9]),
         (at(0), at(20), 8, 20.5, [1, 2, 3, 4, 5, 6, 8, 9]),
         (at(10), at(30), 4, 21.75, [4, 5, 6, 7]),
         (at(20), at(40), 1, 23.0, [7])],
    ]
    final = {row[0]: row[4] for row in run.batches[-1].rows}
    assert all(sum(rid in ids for ids in final.values()) == 2 for rid in range(1, 10))


def test_sessions_grow_per_sensor_and_merge_when_a_gap_is_filled(scenario_readings, tmp_path):
    sessions = windowing.build_sessions(scenario_readings)

    run = collect_batches(sessions, tmp_path / "chk", output_mode="complete",
                          sort_key=lambda r: (r.session_start, r.sensor_id))

    assert window_rows(run) == [
        [(at(2), at(15), "SENSOR-0", 3, 21.0, [1, 3, 4]),
         (at(5), at(10), "SENSOR-1", 1, 19.0, [2]),
         (at(12), at(17), "SENSOR-1", 1, 19.5, [5]),
         (at(19), at(24), "SENSOR-0", 1, 22.5, [6])],
        [(at(2), at(15), "SENSOR-0", 3, 21.0, [1, 3, 4]),
         (at(3), at(17), "SENSOR-1", 4, 19.63, [2, 5, 8, 9]),  # r9 bridged the gap: one session
         (at(19), at(26), "SENSOR-0", 2, 22.75, [6, 7])],
    ]


def test_session_windows_refuse_update_mode(scenario_readings, capsys):
    message = windowing.explain_session_update_failure(windowing.build_sessions(scenario_readings))

    assert "Invalid streaming output mode: update" in message and "session window" in message
    assert "Session windows in update mode fail with" in capsys.readouterr().out


@pytest.mark.smoke
def test_lesson_06_runs_by_itself(course_home):
    result = run_script("streaming_tutorial/06_windowing.py", home=course_home)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert re.search(r"\|2025-01-15 10:30:10\|2025-01-15 10:30:20\|3\s*\|21.33\s*\|\[4, 5, 6\]", out)
    assert "|[1, 2, 3, 8, 9]" in out and "|[2, 5, 8, 9]" in out
    assert "Invalid streaming output mode: update" in out
    assert "Started the sensors simulator for this run" in out
    assert "The live query read" in out

