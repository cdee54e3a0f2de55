"""infra.class_archive: a JVM only ever maps a whole archive, written by a JVM that has exited."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from infra import class_archive
from infra.environment import java_executable


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder of the course's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(class_archive.SWITCH, raising=False)
    return tmp_path


@pytest.fixture(scope="module")
def small_archive(tmp_path_factory) -> bytes:
    """A real (small) dynamic archive, written by a JVM as it exits."""
    path = tmp_path_factory.mktemp("jsa") / "small.jsa"
    subprocess.run(
        [java_executable(), f"-XX:ArchiveClassesAtExit={path}", *class_archive.QUIET, "-version"],
        check=True,
        capture_output=True,
        cwd=path.parent,
    )
    return path.read_bytes()


def exited_pid() -> int:
    """The pid of a process that has exited."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(child.stdout)


def pending_from(archive, content: bytes, writer_pid: int):
    pending = archive.with_name(f"{archive.stem}.1-2.pending")
    pending.parent.mkdir(parents=True, exist_ok=True)
    pending.write_bytes(content)
    class_archive.record_writer(pending, writer_pid)
    return pending


def test_without_an_archive_the_jvm_writes_a_pending_one_and_then_maps_the_archive(cache):
    options, pending = class_archive.java_options()
    archive = class_archive.archive_path()

    assert options[0] == f"-XX:ArchiveClassesAtExit={pending}"
    assert pending.parent == archive.parent and pending.name.endswith(".pending")
    archive.write_bytes(b"")
    assert class_archive.java_options() == (
        [f"-XX:SharedArchiveFile={archive}", *class_archive.QUIET],
        None,
    )


def test_the_switch_turns_it_off(cache, monkeypatch):
    monkeypatch.setenv(class_archive.SWITCH, "off")

    assert class_archive.java_options() == ([], None)


def test_a_whole_archive_from_an_exited_jvm_is_promoted(cache, small_archive):
    archive = class_archive.archive_path()
    pending = pending_from(archive, small_archive, exited_pid())

    class_archive.java_options()

    assert archive.read_bytes() == small_archive
    assert list(archive.parent.iterdir()) == [archive]  # pending and writer files cleared away
    assert not pending.exists()


def test_a_truncated_archive_is_removed_never_mapped(cache, small_archive):
    archive = class_archive.archive_path()
    pending_from(archive, small_archive[: len(small_archive) - 4096], exited_pid())

    assert not class_archive.complete(archive.with_name(f"{archive.stem}.1-2.pending"))
    options, _ = class_archive.java_options()

    assert not archive.exists()
    assert options[0].startswith("-XX:ArchiveClassesAtExit=")
    assert list(archive.parent.iterdir()) == []


def test_checking_an_archive_leaves_no_crash_report_behind(
    cache, small_archive, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    truncated = tmp_path / "truncated.jsa"
    truncated.write_bytes(small_archive[:4096])

    assert not class_archive.complete(truncated)  # the JVM died mapping it
    assert sorted(path.name for path in tmp_path.iterdir()) == ["truncated.jsa"]


def test_an_archive_still_being_written_is_left_alone(cache, small_archive):
    archive = class_archive.archive_path()
    pending = pending_from(archive, small_archive, os.getpid())  # its writer still runs

    class_archive.java_options()

    assert pending.exists() and not archive.exists()


def test_a_file_without_the_magic_number_is_not_an_archive(cache, small_archive, tmp_path):
    junk = tmp_path / "junk.jsa"
    junk.write_bytes(b"\0" * len(small_archive))

    assert not class_archive.complete(junk)
    assert class_archive.complete(tmp_path / "small.jsa") is False  # missing


def test_the_write_switch_makes_the_jvm_write_there_even_beside_an_archive(
    cache, monkeypatch, tmp_path
):
    archive = class_archive.archive_path()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    monkeypatch.setenv(class_archive.SWITCH, f"write:{tmp_path / 'new.jsa'}")

    assert class_archive.java_options() == (
        [f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}", *class_archive.QUIET],
        None,
    )


TINY_WORKLOAD = """
import sys
sys.path.insert(0, {lessons!r})
from common.session import get_spark
spark = get_spark("tiny-training", ui=False)
print(f"jvm-pid: {{spark._jvm.java.lang.ProcessHandle.current().pid()}}", flush=True)
assert spark.range(3).count() == 3
spark.stop()
"""


def test_training_replaces_an_archive_written_by_chance_and_happens_once(
    cache, small_archive, tmp_path
):
    from common import paths

    archive = class_archive.archive_path()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(small_archive)  # what the first JVM of all happened to load
    workload = tmp_path / "workload.py"
    workload.write_text(TINY_WORKLOAD.format(lessons=str(paths.LESSONS_DIR)))

    assert class_archive.train((str(workload),)) is None

    trained = archive.read_bytes()
    assert trained != small_archive and len(trained) > 10 * len(
        small_archive
    )  # a Spark driver's classes
    assert class_archive.complete(archive)  # a JVM maps it
    assert class_archive.trained_marker(archive).exists()
    assert sorted(path.name for path in archive.parent.iterdir()) == sorted(
        [archive.name, class_archive.trained_marker(archive).name]
    )
    said = []
    class_archive.ensure_trained(say=said.append)  # trained already: nothing to do
    assert said == []


def test_a_failed_training_says_why_and_keeps_the_archive_there(cache, small_archive, tmp_path):
    archive = class_archive.archive_path()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(small_archive)
    workload = tmp_path / "broken.py"
    workload.write_text("raise SystemExit('no Spark today')\n")

    assert class_archive.train((str(workload),)) == "the training run failed: no Spark today"
    assert (
        archive.read_bytes() == small_archive and not class_archive.trained_marker(archive).exists()
    )
