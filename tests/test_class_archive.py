"""tools.class_archive and infra.jvm: a JVM only ever maps a whole archive, trained by a JVM
that has exited; a session without one starts as usual and never waits for it."""

from __future__ import annotations

import subprocess

import pytest

from infra import jvm
from infra.environment import java_executable
from tools import class_archive


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder of the course's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(jvm.SWITCH, raising=False)
    return tmp_path


@pytest.fixture(scope="module")
def small_archive(tmp_path_factory) -> bytes:
    """A real (small) dynamic archive, written by a JVM as it exits."""
    path = tmp_path_factory.mktemp("jsa") / "small.jsa"
    subprocess.run(
        [java_executable(), f"-XX:ArchiveClassesAtExit={path}", *jvm.QUIET, "-version"],
        check=True,
        capture_output=True,
        cwd=path.parent,
    )
    return path.read_bytes()


def test_without_an_archive_a_session_starts_as_usual_and_with_one_maps_it(cache):
    archive = jvm.archive_path()

    assert jvm.class_archive_options() == []  # nothing trained yet: no option, no waiting
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    assert jvm.class_archive_options() == [f"-XX:SharedArchiveFile={archive}", *jvm.QUIET]


def test_the_switch_turns_it_off(cache, monkeypatch):
    archive = jvm.archive_path()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    monkeypatch.setenv(jvm.SWITCH, "off")

    assert jvm.class_archive_options() == []


def test_checking_an_archive_leaves_no_crash_report_behind(
    cache, small_archive, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    truncated = tmp_path / "truncated.jsa"
    truncated.write_bytes(small_archive[:4096])

    assert not class_archive.complete(truncated)  # the JVM died mapping it
    assert sorted(path.name for path in tmp_path.iterdir()) == ["truncated.jsa"]


def test_a_file_without_the_magic_number_is_not_an_archive(cache, small_archive, tmp_path):
    junk = tmp_path / "junk.jsa"
    junk.write_bytes(b"\0" * len(small_archive))

    assert not class_archive.complete(junk)
    assert class_archive.complete(tmp_path / "small.jsa") is False  # missing


def test_the_write_switch_makes_the_jvm_write_there_even_beside_an_archive(
    cache, monkeypatch, tmp_path
):
    archive = jvm.archive_path()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    monkeypatch.setenv(jvm.SWITCH, f"write:{tmp_path / 'new.jsa'}")

    assert jvm.class_archive_options() == [
        f"-XX:ArchiveClassesAtExit={tmp_path / 'new.jsa'}",
        *jvm.QUIET,
    ]


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

    archive = jvm.archive_path()
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
    archive = jvm.archive_path()
    archive.parent.mkdir(parents=True)
    archive.write_bytes(small_archive)
    workload = tmp_path / "broken.py"
    workload.write_text("raise SystemExit('no Spark today')\n")

    assert class_archive.train((str(workload),)) == "the training run failed: no Spark today"
    assert (
        archive.read_bytes() == small_archive and not class_archive.trained_marker(archive).exists()
    )
