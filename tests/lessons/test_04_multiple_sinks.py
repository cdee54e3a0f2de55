"""Lesson 04: one stream of shop events into memory, Parquet and a quarantine, exactly; complete
mode refused on a file sink; a second run resumes the durable sinks instead of failing."""

from __future__ import annotations

import re
from datetime import date

import pytest

from common.parsing import quarantine_counts
from conftest import load_lesson, run_script, shop_event
from infra.files import write_atomically
from teaching import demos
from teaching.microbatch import write_batches

lesson = load_lesson("04_multiple_sinks")
SHOP_BATCHES = [
    [
        shop_event(1, "USER-1", "view", "10:30:01", price=89.99),
        shop_event(2, "USER-1", "cart", "10:30:02", price=89.99, quantity=2),
    ],
    [
        shop_event(3, "USER-1", "purchase", "10:30:03", price=89.99, quantity=2),
        # The next day: a second partition folder.
        {
            **shop_event(4, "USER-2", "view", "10:30:04", price=29.99),
            "timestamp": "2025-01-16T09:00:00.000Z",
        },
    ],
]
CUT_LINE = '{"event_id":"EVT-000005","user_id":"USER-2","event_'  # a writer crashed mid-line


def write_input(folder) -> None:
    """Two files of good events, then a third file (newer) with one cut-off line."""
    write_batches(folder, SHOP_BATCHES)
    write_atomically(folder, "batch-0002.json", CUT_LINE + "\n")


def test_one_stream_reaches_memory_parquet_and_the_quarantine_exactly(spark, tmp_path):
    write_input(tmp_path / "in")
    lines = lesson.read_events(spark, tmp_path / "in")
    events = lesson.build_events(lines)
    once = {"availableNow": True}

    queries = [
        lesson.start_memory(events, once),
        lesson.start_parquet(events, tmp_path / "parquet", tmp_path / "chk" / "parquet", once),
        lesson.start_quarantine(
            lesson.build_quarantine(lines),
            tmp_path / "quarantine",
            tmp_path / "chk" / "quarantine",
            once,
        ),
    ]
    for query in queries:
        assert query.awaitTermination(120), f"{query.name} did not finish its input"
        assert query.exception() is None

    expected = [
        ("EVT-000001", "view", 1, date(2025, 1, 15)),
        ("EVT-000002", "cart", 2, date(2025, 1, 15)),
        ("EVT-000003", "purchase", 2, date(2025, 1, 15)),
        ("EVT-000004", "view", 1, date(2025, 1, 16)),
    ]
    columns = ("event_id", "event_type", "quantity", "date")
    assert (
        sorted(tuple(row) for row in spark.table(lesson.MEMORY_TABLE).select(*columns).collect())
        == expected
    )
    assert (
        sorted(
            tuple(row)
            for row in spark.read.parquet(str(tmp_path / "parquet")).select(*columns).collect()
        )
        == expected
    )
    assert sorted(p.name for p in (tmp_path / "parquet").glob("date=*")) == [
        "date=2025-01-15",
        "date=2025-01-16",
    ]
    assert quarantine_counts(spark, tmp_path / "quarantine") == [("not a JSON object", 1)]
    # Only the durable sinks have a checkpoint; the memory sink's is temporary.
    assert sorted(p.name for p in (tmp_path / "chk").iterdir()) == ["parquet", "quarantine"]
    assert [tuple(row) for row in spark.sql(lesson.FUNNEL_SQL).collect()] == [
        ("cart", 1, 179.98),
        ("purchase", 1, 179.98),
        ("view", 2, 119.98),
    ]


def test_complete_mode_on_a_file_sink_is_refused(spark, tmp_path, capsys):
    write_input(tmp_path / "in")
    events = lesson.build_events(lesson.read_events(spark, tmp_path / "in"))

    message = demos.show_refusal(
        lambda: lesson.start_complete_to_files(events, tmp_path / "demo"),
        "Complete mode on a file sink",
    )

    assert "STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE" in message and "parquet" in message
    assert (
        "Complete mode on a file sink fails:\n  [STREAMING_OUTPUT_MODE" in capsys.readouterr().out
    )
    assert not (tmp_path / "demo").exists()


def funnel_at_the_end(out: str) -> list[list[str]]:
    table = out.split("spark.sql on the memory table at the end:\n", 1)[1].split(
        "\nLines each query read", 1
    )[0]
    return [line.split() for line in table.splitlines()]


@pytest.mark.smoke
def test_a_second_run_resumes_the_durable_sinks_instead_of_failing(course_home):
    write_input(course_home / "data" / "ecommerce_events")

    first = run_script("streaming_tutorial/04_multiple_sinks.py", home=course_home)
    # The same command again, as a learner would (it used to die on the memory sink's checkpoint).
    second = run_script(
        "streaming_tutorial/04_multiple_sinks.py", "--duration", "20", home=course_home
    )

    assert first.returncode == 0, first.stderr[-3000:]
    assert second.returncode == 0, second.stderr[-3000:]
    out = first.stdout
    assert "Checkpoints: none yet" in out
    assert (
        "Complete mode on a file sink fails:\n  [STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE]"
        in out
    )
    assert (
        "Batch: 0" in out
        and "|event_id  |event_type|product_name|price|quantity|timestamp          |" in out
    )
    funnel = [
        ["event_type", "events", "value"],
        ["cart", "1", "179.98"],
        ["purchase", "1", "179.98"],
        ["view", "2", "119.98"],
    ]
    assert funnel_at_the_end(out) == funnel
    assert (
        "Lines each query read this run: "
        "shop_events_console 5, shop_events 5, shop_events_parquet 5,"
    ) in out
    assert re.search(r"Quarantined lines in \S*quarantine: 1 \(not a JSON object\)", out)
    assert re.search(r"\|2025-01-15\|3\s*\|2\s*\|\n\|2025-01-16\|1\s*\|1\s*\|", out)

    again = second.stdout
    assert "resuming parquet after batch 2, quarantine after batch 2" in again
    # The memory sink read the folder from its start again.
    assert funnel_at_the_end(again) == funnel
    assert "shop_events 5, shop_events_parquet 0, shop_events_quarantine 0" in again
    # Nothing twice.
    assert re.search(r"\|2025-01-15\|3\s*\|2\s*\|\n\|2025-01-16\|1\s*\|1\s*\|", again)
