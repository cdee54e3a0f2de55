"""teaching.checkpoints: what a second run says it resumes."""

from __future__ import annotations

from teaching import checkpoints


def make_checkpoint(folder, offsets, commits):
    for name, ids in (("offsets", offsets), ("commits", commits)):
        (folder / name).mkdir(parents=True)
        for batch_id in ids:
            (folder / name / str(batch_id)).write_text("v1\n")
            (folder / name / f".{batch_id}.crc").write_text("")


def test_describe_names_every_query_and_its_last_commit(tmp_path):
    root = tmp_path / "04_multiple_sinks"
    make_checkpoint(root / "console", [0, 1, 2], [0, 1, 2])
    make_checkpoint(root / "parquet", [0, 1, 2, 10], [0, 1, 2, 10])
    make_checkpoint(root / "memory", [0], [])  # crashed before its first commit

    text = checkpoints.describe(root)

    assert text.endswith(
        "resuming console after batch 2, memory (no batch committed), parquet after batch 10."
    )
    assert checkpoints.last_commit(root / "parquet") == 10  # numbers, not names: 10 > 2


def test_describe_says_when_there_is_nothing_to_resume(tmp_path):
    assert "none yet" in checkpoints.describe(tmp_path / "missing")
    assert checkpoints.query_checkpoints(tmp_path / "missing") == []


def test_forget_last_commit_leaves_the_batch_to_run_again(tmp_path):
    make_checkpoint(tmp_path / "query", [0, 1, 2], [0, 1, 2])

    assert checkpoints.forget_last_commit(tmp_path / "query") == 2

    assert checkpoints.last_commit(tmp_path / "query") == 1
    assert sorted(path.name for path in (tmp_path / "query" / "commits").iterdir()) == [
        ".0.crc",
        ".1.crc",
        "0",
        "1",
    ]
    assert checkpoints.batch_ids(tmp_path / "query" / "offsets") == [
        0,
        1,
        2,
    ]  # batch 2's input is still known
    assert checkpoints.forget_last_commit(tmp_path / "empty") is None


def test_source_files_are_the_names_the_file_source_logged(tmp_path):
    log = tmp_path / "query" / "sources" / "0"
    log.mkdir(parents=True)
    entry = '{{"path":"file:///data/input%20stream/{}","timestamp":1736937000000,"batchId":{}}}'
    (log / "0").write_text("v1\n" + entry.format("tx-1.json", 0) + "\n")
    (log / "1").write_text(
        "v1\n" + entry.format("tx-2.json", 1) + "\n" + entry.format("tx%203.json", 1) + "\n"
    )
    (log / "9.compact").write_text(
        "v1\n" + entry.format("tx-1.json", 0) + "\n"
    )  # repeats what came before
    (log / ".1.crc").write_bytes(b"\x00\x01")

    assert checkpoints.source_files(tmp_path / "query") == {"tx-1.json", "tx-2.json", "tx 3.json"}
    assert checkpoints.source_files(tmp_path / "missing") == set()

    # Committed batches only: batch 1 was planned (its files logged) but never committed.
    (tmp_path / "query" / "commits").mkdir()
    assert checkpoints.source_files(tmp_path / "query", committed_only=True) == set()
    (tmp_path / "query" / "commits" / "0").write_text("v1\n{}\n")
    assert checkpoints.source_files(tmp_path / "query", committed_only=True) == {"tx-1.json"}


def test_committed_files_follow_the_log_offset_the_committed_batch_read_to(tmp_path):
    # A run started on a log entry written before a stop (sources/0/0, no offsets/0): its batch 0
    # read log entries 0 and 1 (offsets/0 says logOffset 1), its batch 1 entry 2.
    query = tmp_path / "query"
    log = query / "sources" / "0"
    log.mkdir(parents=True)
    for entry, name in enumerate(["tx-1.json", "tx-3.json", "tx-2.json"]):
        path = f'{{"path":"file:///in/{name}","timestamp":1,"batchId":{entry}}}'
        (log / str(entry)).write_text(f"v1\n{path}\n")
    (query / "offsets").mkdir()
    # As Spark writes it: no newline after the last line.
    (query / "offsets" / "0").write_text(
        'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"logOffset":1}'
    )
    (query / "commits").mkdir()
    (query / "commits" / "0").write_text("v1\n{}\n")

    assert checkpoints.source_files(query, committed_only=True) == {"tx-1.json", "tx-3.json"}
    # Without a readable offsets entry: the batch id, as before.
    (query / "offsets" / "0").write_text("v1\n")
    assert checkpoints.source_files(query, committed_only=True) == {"tx-1.json"}
