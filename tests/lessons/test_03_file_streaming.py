"""Lesson 03: a folder as a stream, read once per checkpoint; every bad line quarantined with its
reason."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from pyspark.sql import Row

from common import parsing
from common.schemas import TRANSACTION_SCHEMA
from conftest import at, iso_at, load_lesson, run_script
from infra import checkpoints
from infra.files import json_lines, write_atomically
from infra.runner import finish
from teaching import demos
from teaching.microbatch import collect_batches

lesson = load_lesson("03_file_streaming")


def transaction(
    number: int, user: str, amount: float, time_of_day: str, category: str = "Home"
) -> dict:
    """One transaction as simulate_file_data.py writes it."""
    return {
        "transaction_id": f"TXN-{number}",
        "user_id": user,
        "amount": amount,
        "category": category,
        "timestamp": iso_at(time_of_day),
    }


GOOD_A = transaction(1, "USER-1", 12.5, "10:30:00", "Books")
GOOD_B = transaction(2, "USER-2", 99.0, "10:30:05", "Sports")
GOOD_C = transaction(3, "USER-1", 5.25, "10:31:00")
CUT_LINE = '{"transaction_id":"TXN-9","user_id":"USER-9","amount":1'  # a writer crashed mid-line
WRONG_TYPE = (
    '{"transaction_id":"TXN-8","user_id":"USER-8","amount":"lots",'
    '"timestamp":"2025-01-15T10:31:00Z"}'
)
ONLY_ID = '{"transaction_id":"TXN-7"}'  # valid JSON, but the required fields are missing
INFINITE = (
    '{"transaction_id":"TXN-6","user_id":"USER-6","amount":1e400,'
    '"timestamp":"2025-01-15T10:31:00Z"}'
)
NOT_JSON = "not json at all"


def write_files(folder: Path, files: dict[str, str], first_mtime: float) -> None:
    """Write raw text files in the given order, one second apart (the file source reads by
    mtime)."""
    for number, (name, text) in enumerate(files.items()):
        path = write_atomically(folder, name, text)
        os.utime(path, (first_mtime + number, first_mtime + number))


@pytest.fixture
def transaction_files(tmp_path) -> Path:
    folder = tmp_path / "input_stream"
    write_files(
        folder,
        {
            "tx-1.json": json_lines([GOOD_A, GOOD_B]),
            "tx-2.json": "\n".join([CUT_LINE, json.dumps(GOOD_C), WRONG_TYPE, ONLY_ID, INFINITE])
            + "\n",
        },
        first_mtime=time.time() - 120,
    )
    return folder


def parsed(record: dict, source_file: str) -> Row:
    return Row(
        transaction_id=record["transaction_id"],
        user_id=record["user_id"],
        amount=record["amount"],
        category=record["category"],
        timestamp=at(record["timestamp"][11:19]),
        source_file=source_file,
    )


def test_good_lines_are_parsed_and_every_bad_line_gets_its_reason(
    spark, transaction_files, tmp_path
):
    transactions = lesson.parse_transactions(lesson.read_transactions(spark, transaction_files))
    good = parsing.valid_records(transactions, TRANSACTION_SCHEMA, "source_file")

    good_run = collect_batches(good, tmp_path / "good", sort_key=lambda row: row.transaction_id)
    bad_run = collect_batches(
        lesson.build_quarantined_lines(transactions),
        tmp_path / "bad",
        sort_key=lambda row: row.raw_line,
    )

    assert [batch.rows for batch in good_run.batches] == [
        [parsed(GOOD_A, "tx-1.json"), parsed(GOOD_B, "tx-1.json")],
        [parsed(GOOD_C, "tx-2.json")],
    ]
    assert [batch.rows for batch in bad_run.batches] == [
        [],
        sorted(
            [
                Row(source_file="tx-2.json", reason="not a JSON object", raw_line=CUT_LINE),
                Row(source_file="tx-2.json", reason="amount is not a number", raw_line=WRONG_TYPE),
                Row(source_file="tx-2.json", reason="missing user_id", raw_line=ONLY_ID),
                Row(
                    source_file="tx-2.json",
                    reason="amount is not a finite number",
                    raw_line=INFINITE,
                ),
            ],
            key=lambda row: row.raw_line,
        ),
    ]


def quarantine_on_disk(folder: Path) -> list[dict]:
    lines = [
        line
        for path in sorted(folder.glob("batch_id=*/*.json"))
        for line in path.read_text().splitlines()
    ]
    return sorted((json.loads(line) for line in lines), key=lambda record: record["raw_line"])


def process_available(spark, folder: Path, checkpoint: Path, quarantine: Path) -> dict:
    """One run of the lesson's query over the files there now, as --available-now runs it."""
    tally = {"files": [], "parsed": 0, "quarantined": 0}
    transactions = lesson.parse_transactions(lesson.read_transactions(spark, folder))
    finish(
        [
            lesson.start_transactions(
                transactions, checkpoint, {"availableNow": True}, quarantine, tally
            )
        ]
    )
    return tally


def test_a_run_quarantines_with_reasons_and_a_second_run_reads_only_the_new_files(
    spark, transaction_files, tmp_path, capsys
):
    checkpoint, quarantine = tmp_path / "checkpoint", tmp_path / "quarantine"

    first = process_available(spark, transaction_files, checkpoint, quarantine)

    assert first == {"files": ["tx-1.json", "tx-2.json"], "parsed": 3, "quarantined": 4}
    assert quarantine_on_disk(quarantine) == sorted(
        [
            {"source_file": "tx-2.json", "reason": "not a JSON object", "raw_line": CUT_LINE},
            {
                "source_file": "tx-2.json",
                "reason": "amount is not a number",
                "raw_line": WRONG_TYPE,
            },
            {"source_file": "tx-2.json", "reason": "missing user_id", "raw_line": ONLY_ID},
            {
                "source_file": "tx-2.json",
                "reason": "amount is not a finite number",
                "raw_line": INFINITE,
            },
        ],
        key=lambda record: record["raw_line"],
    )
    # Only the batch that had bad lines.
    assert [p.name for p in quarantine.iterdir()] == ["batch_id=1"]
    out = capsys.readouterr().out
    assert "\nBatch 0 · tx-1.json: 2 rows parsed, 0 lines quarantined\n" in out
    assert "\nBatch 1 · tx-2.json: 1 rows parsed, 4 lines quarantined\n" in out
    assert "  quarantined, amount is not a finite number: " + INFINITE in out
    assert checkpoints.source_files(checkpoint) == {"tx-1.json", "tx-2.json"}

    write_files(
        transaction_files,
        {"tx-3.json": json_lines([GOOD_A]) + NOT_JSON + "\n", "tx-4.json": ""},
        first_mtime=time.time(),
    )
    second = process_available(spark, transaction_files, checkpoint, quarantine)

    assert second == {"files": ["tx-3.json"], "parsed": 1, "quarantined": 1}
    assert checkpoints.source_files(checkpoint) == {
        "tx-1.json",
        "tx-2.json",
        "tx-3.json",
        "tx-4.json",
    }
    assert len(quarantine_on_disk(quarantine)) == 5
    out = capsys.readouterr().out
    assert "\nBatch 2 · tx-3.json: 1 rows parsed, 1 lines quarantined\n" in out
    # The empty file is a micro-batch of its own, with no lines: no blank file name.
    assert "\nBatch 3 · a file with no lines\n" in out
    assert "·  " not in out and "· :" not in out


def test_a_stream_without_a_schema_is_refused(spark, transaction_files):
    message = demos.show_refusal(lambda: spark.readStream.json(str(transaction_files)), "No schema")

    assert "Schema must be specified when creating a streaming source DataFrame" in message


@pytest.mark.smoke
def test_lesson_03_runs_by_itself_starting_its_simulator_on_the_storage_it_is_given(
    course_home, tmp_path
):
    # --storage: data, checkpoints and output go there, none under the course home.
    store = tmp_path / "store"
    result = run_script(
        "streaming_tutorial/03_file_streaming.py", "--storage", f"file://{store}", home=course_home
    )

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Reading a stream without .schema() fails:\n  Schema must be specified" in out
    assert "Started the transactions simulator for this run" in out
    # The simulator the lesson starts writes 3 files of 10 lines, every 4th line cut in half.
    assert (
        "Read in this run: 3 file(s): "
        "transactions-0001.json, transactions-0002.json, transactions-0003.json"
    ) in out
    assert "Old files read again: 0" in out
    assert "Rows parsed: 24; lines quarantined: 6 (with their reason" in out
    assert f"Checkpoints: none yet in {store}/checkpoints/03_file_streaming," in out
    folders = sorted((store / "output" / "03_file_streaming" / "quarantine").glob("batch_id=*"))
    assert [folder.name for folder in folders] == ["batch_id=0", "batch_id=1", "batch_id=2"]
    assert {
        json.loads(line)["reason"]
        for folder in folders
        for path in folder.glob("*.json")
        for line in path.read_text().splitlines()
    } == {"not a JSON object"}
    assert "StackOverflowError" not in result.stderr
    # The simulator the lesson started wrote there too (the storage reaches child processes).
    assert sorted(path.name for path in (store / "data" / "input_stream").glob("*.json")) == [
        "transactions-0001.json",
        "transactions-0002.json",
        "transactions-0003.json",
    ]
    assert checkpoints.source_files(
        store / "checkpoints" / "03_file_streaming" / "transactions"
    ) == {"transactions-0001.json", "transactions-0002.json", "transactions-0003.json"}
    # The course home holds only the simulator's PID file and log.
    assert sorted(path.name for path in course_home.iterdir()) == [".runtime"]
