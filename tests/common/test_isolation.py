"""The check that the test run leaves the learner's files alone (conftest.py, last section) can
fail.

The run compares snapshots of the learner's data/, checkpoints/, output/ and .runtime/ taken
before and after it; these tests show the comparison sees an added, a changed and a removed
file, and that a run which writes into the learner's folders really ends as failed.
"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import LEARNER_FOLDERS, ROOT, changed_paths, snapshot_tree

OLD = 1_700_000_000_000_000_000  # a fixed modification time (ns), long before any test runs


def write(path, text: str, mtime_ns: int = OLD) -> None:
    """A file with a chosen modification time, so no test depends on the clock's resolution."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def age_folders(root) -> None:
    """Give every folder under ``root`` the fixed old time: a later change inside is then always
    visible."""
    for folder in [path for path in root.rglob("*") if path.is_dir()]:
        os.utime(folder, ns=(OLD, OLD))


def test_an_untouched_tree_has_no_differences(tmp_path):
    write(tmp_path / "data" / "input" / "batch-1.json", "{}\n")
    write(tmp_path / "checkpoints" / "08" / "offsets" / "0", "v1\n")
    assert changed_paths(snapshot_tree(tmp_path), snapshot_tree(tmp_path)) == []


def test_the_diff_names_every_added_changed_and_removed_path(tmp_path):
    write(tmp_path / "data" / "input" / "batch-1.json", "{}\n")
    write(tmp_path / "data" / "input" / "batch-2.json", "{}\n")
    write(tmp_path / "checkpoints" / "08" / "offsets" / "0", "v1\n")
    write(tmp_path / ".runtime" / "kafka" / "broker.pid", "123")
    age_folders(tmp_path)
    before = snapshot_tree(tmp_path)
    assert sorted(before) == [
        ".runtime",
        ".runtime/kafka",
        ".runtime/kafka/broker.pid",
        "checkpoints",
        "checkpoints/08",
        "checkpoints/08/offsets",
        "checkpoints/08/offsets/0",
        "data",
        "data/input",
        "data/input/batch-1.json",
        "data/input/batch-2.json",
    ]

    write(
        tmp_path / "data" / "input" / "batch-1.json", "{}\n", mtime_ns=OLD + 1
    )  # same size, rewritten
    write(tmp_path / ".runtime" / "kafka" / "broker.pid", "12345")  # same time, new size
    (tmp_path / "checkpoints" / "08" / "offsets" / "0").unlink()
    write(tmp_path / "output" / "result.csv", "a,b\n")

    assert changed_paths(before, snapshot_tree(tmp_path)) == [
        "changed  .runtime/kafka/broker.pid",
        "changed  checkpoints/08/offsets",  # a file disappeared from it
        "removed  checkpoints/08/offsets/0",
        "changed  data/input/batch-1.json",
        "added    output",
        "added    output/result.csv",
    ]


def test_skipped_folders_and_other_folders_are_not_compared(tmp_path):
    write(tmp_path / ".runtime" / "kafka" / "data" / "events-0" / "00000.log", "x")
    write(tmp_path / "notebooks" / "mine.ipynb", "{}")
    skip = (".runtime/kafka/data",)
    before = snapshot_tree(tmp_path, skip=skip)
    write(tmp_path / ".runtime" / "kafka" / "data" / "events-0" / "00000.log", "xyz")
    write(tmp_path / "notebooks" / "mine.ipynb", "{ }")
    assert "notebooks" not in LEARNER_FOLDERS
    assert changed_paths(before, snapshot_tree(tmp_path, skip=skip)) == []


def test_a_run_that_changes_the_learners_files_fails_and_names_them(tmp_path):
    # An inner pytest run with the suite's conftest as a plugin, whose "learner's folder" is a
    # copy; its one test writes a file there, as a careless test would into the real one.
    learner = tmp_path / "learner"
    write(learner / "data" / "input" / "batch-1.json", "{}\n")
    age_folders(learner)
    inner = tmp_path / "inner"
    write(
        inner / "test_careless.py",
        "from conftest import LEARNER_ROOT\n\n\ndef test_careless():\n    (LEARNER_ROOT / 'data' / "
        "'left-by-a-test.txt').write_text('oops')\n",
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            f"--basetemp={tmp_path / 'tmp'}",
            f"--rootdir={inner}",
            str(inner / "test_careless.py"),
            "-q",
        ],
        cwd=inner,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT / "tests"),
            "STREAMING_COURSE_TESTS_LEARNER_ROOT": str(learner),
        },
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 passed" in result.stdout
    assert "FAILED: the test run changed the learner's files" in result.stdout
    assert "  added    data/left-by-a-test.txt\n" in result.stdout
    assert "  changed  data\n" in result.stdout
    assert (learner / "data" / "left-by-a-test.txt").read_text() == "oops"


def test_the_run_fails_when_the_spark_tests_did_not_share_one_worker(monkeypatch):
    import conftest

    config = type("Config", (), {"option": type("Option", (), {"dist": "loadgroup"})()})()
    monkeypatch.setattr(conftest, "jvm_test_workers", {"gw0"})
    assert conftest.grouping_problem(config) is None
    monkeypatch.setattr(conftest, "jvm_test_workers", {"gw0", "gw1"})
    assert "ran on 2 workers (gw0, gw1)" in conftest.grouping_problem(config)
