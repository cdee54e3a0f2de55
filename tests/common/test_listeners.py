"""Lesson 14's listener (ProgressPrinter, in 14_monitoring.py) and its companion
lesson14_progress_tools: a progress report parsed into one line, the flags, the listener's
bookkeeping and the picture (no JVM: the events are hand-made objects shaped like pyspark's)."""

from __future__ import annotations

import json
import struct
import uuid
from types import SimpleNamespace

from lesson14_progress_tools import (
    COLUMNS,
    BatchLine,
    batch_line,
    format_columns,
    format_line,
    kafka_lag,
    lag_growing,
    offsets,
    plot_progress,
    save_progress_picture,
)

from conftest import load_lesson

lesson = load_lesson("14_monitoring")
ProgressPrinter = lesson.ProgressPrinter  # the lesson's listener
QUERY_ID = uuid.UUID("00000000-0000-0000-0000-000000000014")


def report(
    batch_id: int,
    *,
    rows: int = 16,
    lag: str | None = "35",
    ms: int = 700,
    state: int | None = 9,
    watermark: str = "2025-01-15T10:31:05.000Z",
) -> dict:
    """A progress report as Spark writes it (event.progress.json), Kafka metrics as strings."""
    source = {
        "description": "KafkaV2[Subscribe[t]]",
        "startOffset": {"t": {"0": 0}},
        "endOffset": {"t": {"0": 16}},
        "latestOffset": {"t": {"0": 51}},
        "numInputRows": rows,
        "metrics": {}
        if lag is None
        else {
            "avgOffsetsBehindLatest": "17.5",
            "maxOffsetsBehindLatest": lag,
            "minOffsetsBehindLatest": "0",
        },
    }
    return {
        "id": str(QUERY_ID),
        "name": "stats",
        "batchId": batch_id,
        "numInputRows": rows,
        "inputRowsPerSecond": 8.0,
        "processedRowsPerSecond": 22.857142857142858,
        "durationMs": {"addBatch": ms - 100, "latestOffset": 10, "triggerExecution": ms},
        "eventTime": {"watermark": watermark},
        "stateOperators": []
        if state is None
        else [{"numRowsTotal": state - 2}, {"numRowsTotal": 2}],
        "sources": [source],
    }


def test_a_report_becomes_one_line_with_the_figures_that_matter():
    assert batch_line(report(3), trigger_ms=2000) == BatchLine(
        query="stats",
        batch_id=3,
        rows=16,
        input_per_second=8.0,
        processed_per_second=22.857142857142858,
        batch_ms=700,
        state_rows=9,
        watermark="2025-01-15T10:31:05.000Z",
        lag=35,
        flags=(),
    )
    assert format_line(batch_line(report(3))) == (
        "stats",
        3,
        16,
        "8.0",
        "22.9",
        700,
        9,
        "10:31:05",
        35,
        "",
    )


def test_a_stateless_query_without_kafka_shows_dashes():
    line = batch_line(report(0, lag=None, state=None, watermark="1970-01-01T00:00:00.000Z"))
    assert (line.state_rows, line.lag) == (None, None)
    assert format_line(line)[6:9] == ("-", "-", "-")


def test_kafka_metrics_are_strings_and_offsets_json_text():
    assert kafka_lag({"metrics": {"maxOffsetsBehindLatest": "35"}}) == 35
    assert kafka_lag({"metrics": {}}) is None and kafka_lag({}) is None
    assert offsets('{"t": {"0": 120, "1": 7}}') == {"t": {"0": 120, "1": 7}}
    assert offsets({"t": {"0": 120}}) == {"t": {"0": 120}} and offsets(None) == {}


def test_a_batch_slower_than_its_trigger_is_flagged():
    assert batch_line(report(0, ms=2001), trigger_ms=2000).flags == (
        "SLOW: 2001 ms > trigger 2000 ms",
    )
    assert batch_line(report(0, ms=2000), trigger_ms=2000).flags == ()
    assert (
        batch_line(report(0, ms=9000)).flags == ()
    )  # no trigger interval given: nothing to compare with


def test_a_lag_is_flagged_when_it_grew_over_three_batches_and_still_grows():
    assert lag_growing([0, 20, 40, 60]) and lag_growing([5, 0, 20, 40, 60])
    assert lag_growing([0, 21, 36, 35, 52])  # one flat batch (36 -> 35) does not hide the trend
    assert not lag_growing([20, 40, 60])  # not three batches yet
    assert not lag_growing([0, 20, 40, 30])  # shrinking now
    assert not lag_growing([60, 20, 10, 15])  # growing again, but less than three batches ago
    assert batch_line(report(3, lag="60"), lags_before=[0, 20, 40]).flags == (
        "LAG GROWING for 3 batches",
    )


def test_the_live_lines_line_up_under_the_header():
    header, line = format_columns(COLUMNS), format_columns(format_line(batch_line(report(12))))
    assert header.index("batch ms") == line.index("700")
    assert header.index("lag") == line.index("35")


class Events:
    """Listener events shaped like pyspark's (the attributes the listener reads)."""

    @staticmethod
    def started(name: str):
        return SimpleNamespace(id=QUERY_ID, name=name, timestamp="2025-01-15T10:30:00.000Z")

    @staticmethod
    def progress(body: dict):
        return SimpleNamespace(progress=SimpleNamespace(json=json.dumps(body)))

    @staticmethod
    def idle():
        return SimpleNamespace(id=QUERY_ID, timestamp="2025-01-15T10:30:09.000Z")

    @staticmethod
    def terminated(error: str | None, error_class: str | None):
        return SimpleNamespace(id=QUERY_ID, exception=error, errorClassOnException=error_class)


def test_the_listener_prints_a_line_per_batch_and_keeps_every_event():
    printed = []
    listener = ProgressPrinter(trigger_ms=2000, out=printed.append)
    listener.onQueryStarted(Events.started("stats"))
    for batch, lag in enumerate(["0", "20", "40", "60"]):
        listener.onQueryProgress(Events.progress(report(batch, lag=lag)))
    listener.onQueryIdle(Events.idle())
    listener.onQueryTerminated(
        Events.terminated("java.lang.RuntimeException: boom\n\tat x", "BOOM")
    )

    assert [line.lag for line in listener.batches_of("stats")] == [0, 20, 40, 60]
    assert [line.flags for line in listener.lines] == [(), (), (), ("LAG GROWING for 3 batches",)]
    assert listener.idle == [("stats", "2025-01-15T10:30:09.000Z")]
    assert [(t.query, t.error_class) for t in listener.terminated] == [("stats", "BOOM")]
    assert printed[
        0
    ] == "[listener] onQueryStarted: stats at 2025-01-15T10:30:00.000Z\n" + format_columns(COLUMNS)
    assert printed[4].rstrip().endswith("60     LAG GROWING for 3 batches")
    assert printed[5:] == [
        "[listener] onQueryIdle: stats found no new data (trigger at 2025-01-15T10:30:09.000Z)",
        "[listener] onQueryTerminated: stats failed",
    ]


def test_the_listener_prints_only_the_watched_queries_but_keeps_all():
    printed = []
    listener = ProgressPrinter(watch={"other"}, out=printed.append)
    listener.onQueryStarted(Events.started("stats"))
    listener.onQueryProgress(Events.progress(report(0)))
    assert printed == [] and len(listener.lines) == 1


def test_wait_for_is_bounded_and_wakes_on_an_event(capsys):
    listener = ProgressPrinter(out=lambda text: None)
    assert listener.wait_for(lambda: listener.terminated, timeout=0.05) is False
    listener.onQueryStarted(Events.started("stats"))
    listener.onQueryTerminated(Events.terminated(None, None))
    assert listener.wait_for(lambda: listener.terminated, timeout=5) is True
    listener.print_terminated("stats")
    assert capsys.readouterr().out == (
        "onQueryTerminated received: exception None (stopped, not failed)\n"
        "  errorClassOnException None\n"
    )


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    return struct.unpack(">II", data[16:24])


def test_the_picture_is_drawn_from_recorded_lines(tmp_path):
    lines = [
        batch_line(report(n, lag=str(lag), ms=ms), trigger_ms=2000)
        for n, (lag, ms) in enumerate([(0, 4700), (20, 900), (40, 650), (10, 600)])
    ]
    saved = plot_progress(lines, tmp_path / "out" / "progress.png", title="t", trigger_ms=2000)
    assert saved == tmp_path / "out" / "progress.png" and png_size(saved) == (900, 700)
    without_kafka = [batch_line(report(n, lag=None)) for n in range(2)]
    assert png_size(plot_progress(without_kafka, tmp_path / "plain.png", title="t")) == (900, 700)


def test_no_batch_no_picture(tmp_path, capsys):
    listener = ProgressPrinter(out=lambda text: None)
    save_progress_picture(listener.batches_of("stats"), "stats", tmp_path / "p.png")
    assert (
        "No micro-batch of stats ran" in capsys.readouterr().out
        and not (tmp_path / "p.png").exists()
    )
