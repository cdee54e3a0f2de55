"""infra.checkpoints, the course's checkpoint model, on checkpoint folders written by hand the way
Spark 4.2 writes them (no Spark here): finding query checkpoints, the query id, the logs (offsets,
commits, a file source's and a file sink's log of files, compacted), state/, what a second run
says it resumes, and lesson 10's forgotten commit. tests/common/test_inspect_checkpoint.py reads
real checkpoints with it."""

from __future__ import annotations

import pytest

from common import paths
from infra import checkpoints
from infra.checkpoints import Unreadable

QUERY_ID = "a4f86b07-30c3-47bd-972c-eee264d8d73b"
SETTINGS = '{"batchWatermarkMs":0,"batchTimestampMs":1736937000000,"conf":{}}'


def write(file, text: str) -> None:
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)


def entry(*lines: str) -> str:
    """A log entry as Spark writes it: the version line, then the lines, no newline at the end."""
    return "\n".join(("v1", *lines))


def source_line(name: str, batch: int, folder: str = "/data/input stream") -> str:
    uri = f"file://{folder.replace(' ', '%20')}/{name.replace(' ', '%20')}"
    return f'{{"path":"{uri}","timestamp":1736937000000,"batchId":{batch}}}'


def sink_line(name: str, action: str = "add") -> str:
    return (
        f'{{"path":"file:///output/q/{name}","size":120,"isDir":false,"modificationTime":1,'
        f'"blockReplication":1,"blockSize":33554432,"action":"{action}"}}'
    )


def make_checkpoint(folder, offsets, commits):
    for name, ids in (("offsets", offsets), ("commits", commits)):
        (folder / name).mkdir(parents=True)
        for batch_id in ids:
            (folder / name / str(batch_id)).write_text("v1\n")
            (folder / name / f".{batch_id}.crc").write_text("")


# --- finding query checkpoints -----------------------------------------------------------------


def test_find_names_each_query_once_even_one_with_a_part_missing(tmp_path, monkeypatch):
    root = tmp_path / "06_windowing"
    make_checkpoint(root / "counts", [0, 1], [0, 1])
    write(root / "counts" / "metadata", f'{{"id":"{QUERY_ID}"}}')
    # A state store's own metadata file: part of the query's checkpoint, not another query.
    write(root / "counts" / "state" / "0" / "_metadata" / "metadata", "v1\n{}")
    write(root / "started" / "metadata", f'{{"id":"{QUERY_ID}"}}')  # no batch planned yet
    write(root / "damaged" / "sources" / "0" / "0", entry(source_line("a.json", 0)))
    write(root / "this-run" / "nested" / "commits" / "0", entry("{}"))
    write(root / "not-a-query" / "notes.txt", "offsets commits metadata")

    found = [root / "counts", root / "damaged", root / "started", root / "this-run" / "nested"]
    assert checkpoints.find(root) == found
    assert checkpoints.find(root / "counts") == [root / "counts"]  # a query's own folder
    assert checkpoints.find(root / "counts" / "state" / "0") == []
    assert checkpoints.find(tmp_path / "missing") == []
    assert [checkpoints.is_query_checkpoint(folder) for folder in found] == [True] * 4
    assert not checkpoints.is_query_checkpoint(root / "counts" / "state" / "0" / "_metadata")
    assert not checkpoints.is_query_checkpoint(root / "not-a-query")
    monkeypatch.setattr(paths, "is_remote", lambda path: True)
    assert checkpoints.find(root) == []  # out of Python's reach


def test_checkpoint_of_a_file_and_its_name_there(tmp_path):
    query = tmp_path / "checkpoints" / "03" / "transactions"
    make_checkpoint(query, [0], [0])
    write(query / "sources" / "0" / "0", entry(source_line("a.json", 0)))
    table_log = tmp_path / "output" / "03" / "table" / "_delta_log" / "00000000000000000002.json"
    write(table_log, "{}")

    assert checkpoints.checkpoint_of(query / "sources" / "0" / "0") == query
    assert checkpoints.checkpoint_of(query) == query
    assert checkpoints.checkpoint_of(table_log) is None
    assert checkpoints.name_in_checkpoint(query / "sources" / "0" / "0") == "sources/0/0"
    assert checkpoints.name_in_checkpoint(query / "offsets" / "0") == "offsets/0"
    assert checkpoints.name_in_checkpoint(table_log) == "_delta_log/00000000000000000002.json"


# --- metadata: the query id --------------------------------------------------------------------


def test_query_id_reads_metadata_as_spark_wrote_it(tmp_path):
    write(tmp_path / "query" / "metadata", f'{{"id":"{QUERY_ID}"}}')  # no newline: as Spark

    assert checkpoints.query_id(tmp_path / "query") == QUERY_ID
    assert checkpoints.query_id(tmp_path / "none") is None  # no metadata file: no id yet


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"id":"a4f86b07-30c3', "metadata unreadable (not the JSON Spark writes)"),
        (b"", "metadata unreadable (no query id)"),
        (b'{"name":"windows"}', "metadata unreadable (no query id)"),
        (b'{"id":7}', "metadata unreadable (no query id)"),
        (b"\xff\xfe", "metadata unreadable (UnicodeDecodeError)"),
    ],
    ids=["cut short", "empty", "no id", "id not text", "not text"],
)
def test_a_damaged_metadata_is_unreadable_and_says_why(tmp_path, content, message):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "metadata").write_bytes(content)

    with pytest.raises(Unreadable) as problem:
        checkpoints.query_id(tmp_path)

    assert str(problem.value) == message


# --- the logs ------------------------------------------------------------------------------------


def test_entries_are_the_files_named_by_a_batch_id_in_number_order(tmp_path):
    log = tmp_path / "query" / "sources" / "0"
    for name in ("0", "2", "10", "9.compact", ".2.crc", ".11.3f9a.tmp", "notes"):
        write(log / name, entry())
    (log / "11").mkdir()  # a folder is no entry

    assert list(checkpoints.entries(log)) == [0, 2, 9, 10]
    assert checkpoints.entries(log)[9] == log / "9.compact"
    assert checkpoints.batch_ids(log) == [0, 2, 9, 10]
    assert checkpoints.batch_ids(tmp_path / "missing") == []
    assert checkpoints.last_commit(tmp_path / "query") is None


def test_an_offsets_entry_its_settings_and_each_sources_offset(tmp_path):
    offsets = tmp_path / "offsets"
    write(offsets / "3", entry(SETTINGS, '{"logOffset":3}', '{"events":{"0":12,"1":9}}', "-"))

    read = checkpoints.read_offsets(offsets / "3")

    assert read.settings == {"batchWatermarkMs": 0, "batchTimestampMs": 1736937000000, "conf": {}}
    assert read.sources == ['{"logOffset":3}', '{"events":{"0":12,"1":9}}', "-"]
    assert [checkpoints.file_source_offset(line) for line in read.sources] == [3, None, None]
    assert checkpoints.file_source_offset('{"reservoirVersion":2,"index":-1}') is None
    assert checkpoints.log_version(offsets / "3") == 1
    # Kafka's starting offsets: a NUL byte before the version line.
    (tmp_path / "kafka").write_bytes(b'\x00v1\n{"events":{"0":0}}')
    assert checkpoints.log_version(tmp_path / "kafka") == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "offsets/3 unreadable (no version line: cut short or empty)"),
        ('{"batchWatermarkMs":0}', "offsets/3 unreadable (no version line: cut short or empty)"),
        ("v1", "offsets/3 unreadable (no settings line: cut short)"),
        ('v1\n{"batchWatermarkMs', "offsets/3 unreadable (not the JSON Spark writes)"),
        (
            'v1\n[1, 2]\n{"logOffset":3}',
            "offsets/3 unreadable (its settings line is not an object)",
        ),
    ],
    ids=["empty", "no version line", "version only", "cut in its settings", "settings a list"],
)
def test_a_damaged_offsets_entry_is_unreadable_and_says_why(tmp_path, content, message):
    make_checkpoint(tmp_path / "query", [], [])
    write(tmp_path / "query" / "offsets" / "3", content)

    with pytest.raises(Unreadable) as problem:
        checkpoints.read_offsets(tmp_path / "query" / "offsets" / "3")

    assert str(problem.value) == message


def test_a_file_sources_log_by_batch_with_its_compacted_entry(tmp_path):
    log = tmp_path / "query" / "sources" / "0"
    write(log / "8", entry(source_line("tx-8.json", 8)))
    # Every tenth entry repeats the ones before it, each line with its own batch id.
    write(log / "9.compact", entry(source_line("tx-1.json", 0), source_line("tx-8.json", 8)))
    write(log / "10", entry(source_line("tx 10.json", 10), source_line("tx-11.json", 10)))

    logged = checkpoints.logged_files(log)

    assert list(logged) == [0, 8, 10]
    assert logged[8] == ["file:///data/input%20stream/tx-8.json"]  # once, though logged twice
    assert [checkpoints.file_name(uri) for uri in logged[10]] == ["tx 10.json", "tx-11.json"]
    assert str(checkpoints.local_path(logged[0][0])) == "/data/input stream/tx-1.json"
    assert checkpoints.local_path("hdfs://namenode:8020/data/tx-1.json") is None


def test_a_file_sinks_log_counts_compacted_files_under_the_compact_entry(tmp_path):
    log = tmp_path / "output" / "q" / checkpoints.SINK_LOG
    write(log / "0", entry(sink_line("part-0.json")))
    write(log / "1", entry())  # a batch that wrote no file
    write(log / "9.compact", entry(sink_line("part-0.json"), sink_line("part-9.json")))
    write(log / "10", entry(sink_line("part-10.json"), sink_line("part-0.json", action="delete")))

    logged = checkpoints.logged_files(log)

    assert {
        batch: [checkpoints.file_name(uri) for uri in uris] for batch, uris in logged.items()
    } == {
        0: ["part-0.json"],
        9: ["part-0.json", "part-9.json"],
        10: ["part-10.json"],
    }


def test_a_log_of_files_with_a_line_that_names_no_file_is_unreadable(tmp_path):
    query = tmp_path / "query"
    make_checkpoint(query, [], [])
    write(query / "sources" / "0" / "0", entry('{"timestamp":1,"batchId":0}'))

    with pytest.raises(Unreadable) as problem:
        checkpoints.logged_files(query / "sources" / "0")

    assert str(problem.value) == "sources/0/0 unreadable (an entry without a path)"


def test_source_files_are_the_names_the_file_source_logged(tmp_path):
    log = tmp_path / "query" / "sources" / "0"
    write(log / "0", entry(source_line("tx-1.json", 0)) + "\n")
    write(log / "1", entry(source_line("tx-2.json", 1), source_line("tx 3.json", 1)))
    write(log / "9.compact", entry(source_line("tx-1.json", 0)))  # repeats what came before
    (log / ".1.crc").write_bytes(b"\x00\x01")

    assert checkpoints.source_files(tmp_path / "query") == {"tx-1.json", "tx-2.json", "tx 3.json"}
    assert checkpoints.source_files(tmp_path / "missing") == set()

    # Committed batches only: batch 1 was planned (its files logged) but never committed.
    (tmp_path / "query" / "commits").mkdir()
    assert checkpoints.source_files(tmp_path / "query", committed_only=True) == set()
    write(tmp_path / "query" / "commits" / "0", "v1\n{}\n")
    assert checkpoints.source_files(tmp_path / "query", committed_only=True) == {"tx-1.json"}


def test_committed_files_follow_the_log_offset_the_committed_batch_read_to(tmp_path):
    # A run started on a log entry written before a stop (sources/0/0, no offsets/0): its batch 0
    # read log entries 0 and 1 (offsets/0 says logOffset 1), its batch 1 entry 2.
    query = tmp_path / "query"
    for number, name in enumerate(["tx-1.json", "tx-3.json", "tx-2.json"]):
        write(query / "sources" / "0" / str(number), entry(source_line(name, number, "/in")))
    write(query / "offsets" / "0", entry(SETTINGS, '{"logOffset":1}'))
    write(query / "commits" / "0", "v1\n{}\n")

    assert checkpoints.source_files(query, committed_only=True) == {"tx-1.json", "tx-3.json"}
    # Without a readable offsets entry: the batch id, as before.
    (query / "offsets" / "0").write_text("v1\n")
    assert checkpoints.source_files(query, committed_only=True) == {"tx-1.json"}


def test_source_files_leave_out_a_kafka_sources_starting_offsets(tmp_path):
    query = tmp_path / "query"
    write(query / "offsets" / "0", entry(SETTINGS, '{"logOffset":0}', '{"events":{"0":3}}'))
    write(query / "sources" / "0" / "0", entry(source_line("a.json", 0)))
    (query / "sources" / "1").mkdir()
    (query / "sources" / "1" / "0").write_bytes(b'\x00v1\n{"events":{"0":0}}')

    assert checkpoints.source_logs(query) == [query / "sources" / "0", query / "sources" / "1"]
    assert checkpoints.source_files(query) == {"a.json"}
    # Without an offsets entry, the NUL byte Kafka's log starts with says it.
    (query / "offsets" / "0").unlink()
    assert checkpoints.source_files(query) == {"a.json"}


# --- state/ ---------------------------------------------------------------------------------------


def test_state_operators_and_a_partitions_files_in_version_order(tmp_path):
    folder = tmp_path / "state" / "0" / "0"
    folder.mkdir(parents=True)
    for name in ("10.changelog", "2.changelog", "1.zip", ".1.zip.crc", "1.changelog"):
        (folder / name).write_text("")
    (folder / "SSTs").mkdir()
    write(tmp_path / "state" / "0" / "_metadata" / "metadata", "v1\n{}")
    (tmp_path / "state" / "10").mkdir()

    assert checkpoints.state_files(tmp_path) == [
        "1.changelog",
        "1.zip",
        "2.changelog",
        "10.changelog",
    ]
    assert checkpoints.state_operators(tmp_path) == [0, 10]
    assert checkpoints.state_operators(tmp_path / "stateless") == []


# --- what a second run says it resumes; lesson 10's forgotten commit ------------------------------


def test_describe_names_every_query_and_its_last_commit(tmp_path):
    root = tmp_path / "04_multiple_sinks"
    make_checkpoint(root / "console", [0, 1, 2], [0, 1, 2])
    make_checkpoint(root / "parquet", [0, 1, 2, 10], [0, 1, 2, 10])
    make_checkpoint(root / "memory", [0], [])  # crashed before its first commit

    text = checkpoints.describe(root)

    assert text.endswith(
        "resuming console after batch 2, memory (no batch committed), parquet after batch 10."
    )
    assert checkpoints.describe(root, [root / "parquet"]).endswith(
        "resuming parquet after batch 10."
    )
    assert checkpoints.last_commit(root / "parquet") == 10  # numbers, not names: 10 > 2


def test_describe_says_when_there_is_nothing_to_resume(tmp_path):
    assert "none yet" in checkpoints.describe(tmp_path / "missing")


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
