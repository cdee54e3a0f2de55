"""A damaged checkpoint stops the lesson before Spark starts, with the safe way out; following
the safe advice loses and duplicates nothing.

One real run of lesson 03 (a file source, three micro-batches, one per file) makes a healthy
checkpoint. Each case copies the whole course folder, damages the copy's checkpoint the way a
crash, a copy or a tidy-up by hand would, and runs the lesson as a learner does: exit 1, the
advice naming the exact files, no traceback, and no JVM started (the run stops in
``lesson_session`` before ``get_spark``). For the safe repairs the test then removes or writes
exactly the files the advice names and runs the lesson again: it reads no file twice and misses
none (the three files of the healthy run, each once, across both runs). Lesson 11 (a file
source into Delta, and a stateful complete-mode query reading that Delta table) runs twice more:
its newest commit emptied and a stale .crc, repaired as advised, leave every table exactly as
the healthy run did (a new checkpoint instead would double the events table: 200 rows, 100 ids).
What Spark 4.2 does with each damage unchecked is in infra/checkpoint_health.py's docstring.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from common import paths
from conftest import prose, run_script
from infra import checkpoint_health, errors, runner

# The crash lane; one worker runs them all, on one healthy run.
pytestmark = [pytest.mark.crash, pytest.mark.xdist_group("damaged_checkpoints")]

LESSON = "streaming_tutorial/03_file_streaming.py"
QUERY = Path("checkpoints/03_file_streaming/transactions")
TRACEBACK = "Traceback (most recent call last)"
FILES = ["transactions-0001.json", "transactions-0002.json", "transactions-0003.json"]


@pytest.fixture(scope="module")
def pristine_home(tmp_path_factory) -> Path:
    """A copy of a course folder with sample data and lesson 03's checkpoint after one whole
    run. The run happened in the folder the tests use (``home``): a file source's log names
    its files by absolute path, so a checkpoint only resumes in the folder that wrote it."""
    base = tmp_path_factory.mktemp("damaged")
    home = base / "home"
    home.mkdir()
    setup = run_script("initial_setup.py", "--sample-data", home=home)
    assert setup.returncode == 0, setup.stderr[-2000:]
    first = run_script(LESSON, "--available-now", home=home)
    assert first.returncode == 0, first.stderr[-3000:]
    assert f"Read in this run: 3 file(s): {', '.join(FILES)}" in first.stdout
    shutil.copytree(home, base / "pristine")
    return base / "pristine"


@pytest.fixture
def home(pristine_home, monkeypatch) -> Path:
    """The course folder as the healthy run left it, in the place it ran; this process reads
    its record of query ids (in its .runtime/) like a lesson run there does."""
    folder = pristine_home.parent / "home"
    shutil.rmtree(folder)
    shutil.copytree(pristine_home, folder)
    monkeypatch.setattr(paths, "COURSE_HOME", folder)
    monkeypatch.setattr(paths, "RUNTIME_DIR", folder / ".runtime")
    return folder


def hadoop_crc(data: bytes) -> bytes:
    """Hadoop's .crc of ``data``: "crc\\0", the chunk size 512, a CRC-32 per 512 bytes."""
    chunks = [data[start : start + 512] for start in range(0, len(data), 512)]
    return (
        b"crc\x00"
        + struct.pack(">i", 512)
        + b"".join(struct.pack(">I", zlib.crc32(c)) for c in chunks)
    )


def cut_short(file: Path) -> None:
    text = file.read_bytes()
    file.write_bytes(text[: len(text) // 2])


def remove(checkpoint: Path, *names: str) -> None:
    for name in names:
        target = checkpoint / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()


# Each damage: what it does to the checkpoint, then (kind, damaged path, safe) that diagnose says.
def newest_batch_cut_before_its_commit(checkpoint: Path) -> None:
    remove(checkpoint, "commits/2", "commits/.2.crc")  # a crash after planning batch 2
    cut_short(checkpoint / "offsets/2")  # ... on a disk that does not rename atomically


def newest_committed_batch_cut(checkpoint: Path) -> None:
    cut_short(checkpoint / "offsets/2")


def newest_file_list_cut_before_its_commit(checkpoint: Path) -> None:
    remove(checkpoint, "commits/2", "commits/.2.crc")
    cut_short(checkpoint / "sources/0/2")


def file_list_cut_before_its_batch_was_planned(checkpoint: Path) -> None:
    # A stop after the file source logged batch 2's files, before offsets/2 was written.
    remove(checkpoint, "commits/2", "commits/.2.crc", "offsets/2", "offsets/.2.crc")
    cut_short(checkpoint / "sources/0/2")


def committed_batch_offsets_removed(checkpoint: Path) -> None:
    remove(checkpoint, "offsets/2", "offsets/.2.crc")


def old_offsets_cut(checkpoint: Path) -> None:
    cut_short(checkpoint / "offsets/0")


def newest_commit_emptied(checkpoint: Path) -> None:
    (checkpoint / "commits/2").write_bytes(b"")


def file_log_not_spark(checkpoint: Path) -> None:
    (checkpoint / "sources/0/0").write_text("my notes\n")


def metadata_removed(checkpoint: Path) -> None:
    remove(checkpoint, "metadata", ".metadata.crc")


def offsets_removed(checkpoint: Path) -> None:
    remove(checkpoint, "offsets")


def commits_removed(checkpoint: Path) -> None:
    remove(checkpoint, "commits")


def sources_removed(checkpoint: Path) -> None:
    remove(checkpoint, "sources")


def crc_out_of_step(checkpoint: Path) -> None:
    crc = checkpoint / "offsets/.2.crc"
    stored = bytearray(crc.read_bytes())
    stored[-1] ^= 1  # one bit of the last checksum: the file itself is intact
    crc.write_bytes(bytes(stored))


def newer_spark_version(checkpoint: Path) -> None:
    """Simulated: only the version line says v99 (its .crc rewritten to match), as a newer Spark
    would write it; no real newer Spark made this file."""
    file = checkpoint / "commits/2"
    data = b"v99" + file.read_bytes()[2:]
    file.write_bytes(data)
    (checkpoint / "commits/.2.crc").write_bytes(hadoop_crc(data))


CASES = {
    "newest batch cut before its commit": (
        newest_batch_cut_before_its_commit,
        (checkpoint_health.UNREADABLE, "offsets/2", True),
        "Safe fix: Batch 2 was planned but never committed. Remove offsets/2 and offsets/.2.crc",
    ),
    "newest committed batch cut": (
        newest_committed_batch_cut,
        (checkpoint_health.UNREADABLE, "offsets/2", False),
        "Restore offsets/2 from a backup of this checkpoint if you have one (all of it, as it "
        "was). Batch 2 was committed, and Spark needs this entry to know where that batch "
        "ended: removing it is not safe.",
    ),
    "newest file list cut before its commit": (
        newest_file_list_cut_before_its_commit,
        (checkpoint_health.UNREADABLE, "sources/0/2", True),
        "Safe fix: Batch 2 was planned but never committed. Remove offsets/2, offsets/.2.crc, "
        "sources/0/2 and sources/0/.2.crc: Spark plans batch 2 again",
    ),
    "file list cut before its batch was planned": (
        file_list_cut_before_its_batch_was_planned,
        (checkpoint_health.UNREADABLE, "sources/0/2", True),
        "Safe fix: The file source logged the files of batch 2, but the batch was never planned "
        "(offsets/ has no entry 2). Remove sources/0/2 and sources/0/.2.crc",
    ),
    "committed batch's offsets removed": (
        committed_batch_offsets_removed,
        (checkpoint_health.MISSING, "offsets/2", False),
        "commits/ records batch 2 as done but offsets/2 is gone, so Spark stops with "
        "CONCURRENT_STREAM_LOG_UPDATE (it is not another run).",
    ),
    "old offsets entry cut": (
        old_offsets_cut,
        (checkpoint_health.UNREADABLE, "offsets/0", True),
        "Safe fix: Spark reads only the newest two entries of offsets/, and deletes old ones "
        "itself. Remove offsets/0 and offsets/.0.crc. Nothing is lost.",
    ),
    "newest commit emptied": (
        newest_commit_emptied,
        (checkpoint_health.UNREADABLE, "commits/2", False),
        "Remove commits/2 and commits/.2.crc: batch 2 then runs again with the same input",
    ),
    "file source log not what Spark wrote": (
        file_log_not_spark,
        (checkpoint_health.UNREADABLE, "sources/0/0", False),
        "Restore sources/0/0 from a backup",
    ),
    "metadata missing": (
        metadata_removed,
        (checkpoint_health.MISSING, "metadata", True),
        "Safe fix: Write the query id the course recorded for this place back into metadata "
        '(exactly this line: {"id":"',
    ),
    "offsets missing": (
        offsets_removed,
        (checkpoint_health.MISSING, "offsets", False),
        "Restore offsets/ from a backup",
    ),
    "commits missing": (
        commits_removed,
        (checkpoint_health.MISSING, "commits", False),
        "Spark would silently run batch 2 again.",
    ),
    "sources missing": (
        sources_removed,
        (checkpoint_health.MISSING, "sources/0", False),
        "Restore sources/0 from a backup",
    ),
    "crc out of step": (
        crc_out_of_step,
        (checkpoint_health.STALE_CRC, "offsets/.2.crc", True),
        "Safe fix: Remove offsets/.2.crc only: Spark then reads offsets/2 as it is. Nothing is "
        "lost.",
    ),
    "newer Spark version": (
        newer_spark_version,
        (checkpoint_health.OTHER_VERSION, "commits/2", False),
        "commits/2 was written by another Spark version (log version v99; this Spark reads up "
        "to v3)",
    ),
}


def stopped_with_advice(home: Path) -> str:
    """Run the lesson on a damaged checkpoint: exit 1, advice, no traceback, no JVM started."""
    result = run_script(LESSON, "--available-now", home=home)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-3000:]
    assert TRACEBACK not in result.stderr and "\tat " not in result.stderr, result.stderr[-3000:]
    assert "Checkpoints in" not in result.stdout  # stopped before it described or started
    assert prose(result.stderr).startswith(
        "The lesson stopped before Spark started. A checkpoint is damaged; nothing was changed."
    ), result.stderr
    return prose(result.stderr)


def what_it_read(home: Path) -> tuple[str, str, str]:
    """Run the lesson again: its lines on what earlier runs and this one read."""
    result = run_script(LESSON, "--available-now", home=home)
    assert result.returncode == 0, result.stderr[-3000:]
    before = re.search(r"^Already read by earlier runs.*$", result.stdout, re.MULTILINE).group(0)
    now = re.search(r"^Read in this run.*$", result.stdout, re.MULTILINE).group(0)
    again = re.search(r"^Old files read again.*$", result.stdout, re.MULTILINE).group(0)
    return before, now, again


def test_the_healthy_checkpoint_has_no_damage(home):
    assert checkpoint_health.diagnose(home / QUERY) == []
    assert checkpoint_health.diagnose_all(home / "checkpoints") == []


@pytest.mark.parametrize("case", CASES)
def test_diagnose_names_the_damage(home, case):
    damage, (kind, path, safe), _ = CASES[case]
    checkpoint = home / QUERY
    damage(checkpoint)

    found = checkpoint_health.diagnose(checkpoint)

    assert [(d.kind, d.path.relative_to(checkpoint).as_posix(), d.safe) for d in found] == [
        (kind, path, safe)
    ]


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_checkpoint_stops_the_lesson_with_the_safe_way_out(home, case):
    damage, _, expected = CASES[case]
    damage(home / QUERY)

    advice = stopped_with_advice(home)

    assert expected in advice
    if "not safe" in expected or "Restore" in expected:
        assert (
            "Starting over (--reset, or a new --checkpoint-dir) reads all of the input again"
            in (advice)
        )


def test_an_uncommitted_cut_batch_removed_as_advised_is_read_once(home):
    newest_batch_cut_before_its_commit(home / QUERY)
    stopped_with_advice(home)

    remove(home / QUERY, "offsets/2", "offsets/.2.crc")  # exactly what the advice names

    assert what_it_read(home) == (
        "Already read by earlier runs (the checkpoint's list): 2 file(s)",
        "Read in this run: 1 file(s): transactions-0003.json",
        "Old files read again: 0",
    )


def test_a_file_list_logged_before_its_batch_was_planned_removed_as_advised_is_read_once(home):
    file_list_cut_before_its_batch_was_planned(home / QUERY)
    stopped_with_advice(home)

    remove(home / QUERY, "sources/0/2", "sources/0/.2.crc")  # exactly what the advice names

    assert what_it_read(home) == (
        "Already read by earlier runs (the checkpoint's list): 2 file(s)",
        "Read in this run: 1 file(s): transactions-0003.json",
        "Old files read again: 0",
    )


def test_a_stop_before_the_first_offsets_entry_is_no_damage_and_reads_each_file_once(home):
    # A stop after the file source logged batch 0's files, before offsets/0 was written: what a
    # Ctrl-C in a lesson's first seconds leaves (a Kafka source's starting offsets in
    # sources/0/0 likewise). Nothing to repair: the next run plans batch 0 from that list.
    checkpoint = home / QUERY
    for batch in (1, 2):
        remove(checkpoint, f"sources/0/{batch}", f"sources/0/.{batch}.crc")
    for batch in (0, 1, 2):
        remove(checkpoint, f"offsets/{batch}", f"offsets/.{batch}.crc")
        remove(checkpoint, f"commits/{batch}", f"commits/.{batch}.crc")

    assert checkpoint_health.diagnose(checkpoint) == []
    result = run_script(LESSON, "--available-now", home=home)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Read in this run: 3 file(s): {', '.join(FILES)}" in result.stdout
    assert "Old files read again: 0" in result.stdout


def test_a_cut_file_list_and_its_plan_removed_as_advised_are_read_once(home):
    newest_file_list_cut_before_its_commit(home / QUERY)
    stopped_with_advice(home)

    # exactly what the advice names
    remove(home / QUERY, "offsets/2", "offsets/.2.crc", "sources/0/2", "sources/0/.2.crc")

    assert what_it_read(home) == (
        "Already read by earlier runs (the checkpoint's list): 2 file(s)",
        "Read in this run: 1 file(s): transactions-0003.json",
        "Old files read again: 0",
    )


def test_an_old_offsets_entry_removed_as_advised_reads_nothing_again(home):
    old_offsets_cut(home / QUERY)
    stopped_with_advice(home)

    remove(home / QUERY, "offsets/0", "offsets/.0.crc")

    assert what_it_read(home) == (
        "Already read by earlier runs (the checkpoint's list): 3 file(s)",
        "Read in this run: 0 file(s)",
        "Old files read again: 0",
    )


def test_missing_commits_made_empty_as_advised_runs_only_the_newest_batch_again(home):
    commits_removed(home / QUERY)
    stopped_with_advice(home)

    (home / QUERY / "commits").mkdir()  # the advice's way out without a backup

    result = run_script(LESSON, "--available-now", home=home)
    assert result.returncode == 0, result.stderr[-3000:]
    # Only batch 2 (transactions-0003.json) runs again, the cost the advice states.
    batches = re.findall(r"^Batch (\d+) · (\S+):", result.stdout, re.MULTILINE)
    assert batches == [("2", "transactions-0003.json")]


def test_a_stale_crc_removed_as_advised_reads_nothing_again(home):
    crc_out_of_step(home / QUERY)
    stopped_with_advice(home)

    remove(home / QUERY, "offsets/.2.crc")

    assert what_it_read(home) == (
        "Already read by earlier runs (the checkpoint's list): 3 file(s)",
        "Read in this run: 0 file(s)",
        "Old files read again: 0",
    )


def test_missing_metadata_written_back_as_advised_reads_nothing_again(home, pristine_home):
    metadata_removed(home / QUERY)
    advice = stopped_with_advice(home)
    line = re.search(r'exactly this line: (\{"id":"[0-9a-f-]+"\})', advice).group(1)

    (home / QUERY / "metadata").write_text(line)

    assert json.loads(line) == json.loads((pristine_home / QUERY / "metadata").read_text())
    assert what_it_read(home) == (
        "Already read by earlier runs (the checkpoint's list): 3 file(s)",
        "Read in this run: 0 file(s)",
        "Old files read again: 0",
    )


def test_another_lessons_checkpoint_in_a_querys_place_is_named(home):
    # Tidying by hand: lesson 03's checkpoint copied into lesson 11's events place.
    shutil.copytree(home / QUERY, home / "checkpoints/11_delta_lake/events")

    result = run_script("streaming_tutorial/11_delta_lake.py", "--available-now", home=home)

    assert result.returncode == 1, result.stderr[-3000:]
    assert TRACEBACK not in result.stderr
    advice = prose(result.stderr)
    owner = "checkpoints/03_file_streaming/transactions"
    assert f"This folder holds the checkpoint of another query ({owner}, query id" in advice
    assert f"Move this folder back to {owner} if that place is now missing" in advice


def test_a_copied_course_folder_is_named_with_the_folder_that_wrote_it(home, tmp_path):
    """Spark 4.2 would stop with "Wrong basePath ... for the root path": the file source's log
    names the files of the course folder it ran in."""
    copy = tmp_path / "copy"
    shutil.copytree(home, copy)

    result = run_script(LESSON, "--available-now", home=copy)

    assert result.returncode == 1, result.stderr[-3000:]
    assert TRACEBACK not in result.stderr
    advice = prose(result.stderr)
    assert f"sources/0 lists files of the course folder {home}, not of this one ({copy})" in advice
    assert f"Safe fix: Work in {home} (move this course folder back there" in advice


def test_a_checkpoint_error_spark_raises_mid_run_gets_the_diagnosis(home):
    """The fallback in errors.explain: Spark's own words name the file; the course diagnoses it."""
    newest_committed_batch_cut(home / QUERY)
    file = f"file:{home / QUERY}/offsets/2"
    failure = RuntimeError(
        "[STREAM_FAILED] Query [id = x, runId = y] terminated with exception: "
        f"Checksum error: {file} at 512 exp: 131267608 got: -1132714205 SQLSTATE: XXKST"
    )

    advice = errors.explain(failure)

    assert advice.startswith("A checkpoint is damaged; nothing was changed.")
    assert "offsets/2 is not what Spark wrote" in prose(advice)
    assert "Spark said:\n  [STREAM_FAILED]" in advice


def test_a_checkpoint_error_on_a_whole_checkpoint_names_the_file_and_repairs_nothing(home):
    file = home / QUERY / "offsets/2"
    failure = RuntimeError(f"Failed to read log file file:{file}. Incomplete log file")

    advice = prose(errors.explain(failure))

    assert advice.startswith(
        f"Spark could not read {file}, a file of a query's checkpoint. Nothing was changed."
    )
    assert checkpoint_health.diagnose(home / QUERY) == []


def test_a_failure_spark_explains_without_a_file_name_is_diagnosed_by_the_runner(home, monkeypatch):
    """run_lesson's fallback: Spark's JSON error names no file ("Unexpected end-of-input in field
    name", measured for an offsets entry cut short with no .crc); the lesson's checkpoint folder,
    checked when it started, is diagnosed again."""
    monkeypatch.setattr(runner, "CHECKED_ROOTS", [home / "checkpoints/03_file_streaming"])
    assert runner.damaged_checkpoint_advice() is None
    newest_committed_batch_cut(home / QUERY)
    remove(home / QUERY, "offsets/.2.crc")

    advice = runner.damaged_checkpoint_advice()

    assert "offsets/2 is not what Spark wrote: a line of it is not whole JSON" in prose(advice)


# --- lesson 11: a Delta sink replays a batch without writing it twice; a stateful query resumes --

LESSON_11 = "streaming_tutorial/11_delta_lake.py"
DELTA_QUERIES = Path("checkpoints/11_delta_lake")
# What lesson 11 prints of its tables: the events table's size, its history, the stateful totals
# (not its "a batch read sees ..." lines: how many it prints depends on the pace of the run).
TABLE_LINE_PATTERNS = (
    r"  before the restart: .*",
    r"\|\d+ +\|[A-Z ]+\|.*",  # a row of the events table's history
    r"\|[A-Z][a-z]+ *\|\d+ .*",  # a row of the totals by category
    r"\d+ users in .*",
)
TABLE_LINES = re.compile("^(" + "|".join(TABLE_LINE_PATTERNS) + ")$", re.MULTILINE)


def table_lines(output: str) -> list[str]:
    return TABLE_LINES.findall(output)


def test_lesson_11_follows_the_advice_with_its_delta_sink_and_stateful_query_exact(tmp_path):
    """The newest commit of the events query (file source -> Delta) emptied, and a stale .crc in
    the stateful totals query (Delta source -> complete-mode Delta): the advice says batch 0 of
    the events runs again and that Delta writes nothing twice. Followed, the tables, the events
    table's history (no new version) and the totals are exactly those of the healthy run."""
    home = tmp_path / "home"
    home.mkdir()
    assert run_script("initial_setup.py", "--sample-data", home=home).returncode == 0
    healthy = run_script(LESSON_11, "--available-now", home=home, timeout=600)
    assert healthy.returncode == 0, healthy.stderr[-3000:]
    events = home / DELTA_QUERIES / "events"
    totals = home / DELTA_QUERIES / "sales_by_category"
    newest_commit_emptied_at(events, 0)
    crc = totals / "offsets/.0.crc"
    stored = bytearray(crc.read_bytes())
    stored[-1] ^= 1
    crc.write_bytes(bytes(stored))

    result = run_script(LESSON_11, "--available-now", home=home)

    assert result.returncode == 1, result.stderr[-3000:]
    assert TRACEBACK not in result.stderr
    advice = prose(result.stderr)
    assert (
        "Remove commits/0 and commits/.0.crc: batch 0 then runs again with the same input (its "
        "offsets are kept). A sink that recognises a replayed batch (Delta, the file sink, a "
        "foreachBatch write keyed by batch id) writes nothing twice" in advice
    )
    assert "Safe fix: Remove offsets/.0.crc only" in advice

    remove(events, "commits/0", "commits/.0.crc")
    remove(totals, "offsets/.0.crc")
    repaired = run_script(LESSON_11, "--available-now", home=home, timeout=600)

    assert repaired.returncode == 0, repaired.stderr[-3000:]
    assert table_lines(repaired.stdout) == table_lines(healthy.stdout)
    assert (
        "  before the restart: 100 rows (100 distinct event ids); after it: 0 new rows -> 100 rows "
        "(100 distinct event ids)" in table_lines(healthy.stdout)
    )
    assert "|1      |STREAMING UPDATE|Append    |0      |100          |" in healthy.stdout


def newest_commit_emptied_at(checkpoint: Path, batch: int) -> None:
    (checkpoint / "commits" / str(batch)).write_bytes(b"")
