"""initial_setup.py: the promised folders and sample data, the menu, the environment check,
reset."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from itertools import pairwise

import pytest

from conftest import ROOT, run_script

SAMPLE_FILES = {
    "input_stream": [f"transactions-{n:04d}.json" for n in (1, 2, 3)],
    "ecommerce_events": [f"events-{n:04d}.json" for n in (1, 2, 3, 4, 5)],
    "sensor_readings": [f"readings-{n:04d}.json" for n in (1, 2, 3, 4)],
}
LINES_PER_FILE = {"input_stream": 10, "ecommerce_events": 20, "sensor_readings": 30}


def snapshot(home) -> dict[str, bytes]:
    """Every sample file's bytes, keyed by its path under data/."""
    data = home / "data"
    return {
        str(path.relative_to(data)): path.read_bytes()
        for folder in SAMPLE_FILES
        for path in sorted((data / folder).iterdir())
    }


def broken_lines(path) -> list[int]:
    broken = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        try:
            json.loads(line)
        except json.JSONDecodeError:
            broken.append(number)
    return broken


@pytest.mark.smoke
def test_sample_data_is_exactly_the_promised_files_and_reruns_identically(course_home):
    first = run_script("initial_setup.py", "--sample-data", home=course_home, input_text="")
    assert first.returncode == 0, first.stderr
    data = course_home / "data"
    for folder, names in SAMPLE_FILES.items():
        files = sorted((data / folder).iterdir())
        assert [path.name for path in files] == names
        assert all(len(path.read_text().splitlines()) == LINES_PER_FILE[folder] for path in files)
        # The file source reads new files in modification-time order, compared in milliseconds.
        mtimes = [path.stat().st_mtime_ns for path in files]
        assert all(later - earlier >= 1_000_000 for earlier, later in pairwise(mtimes))
    assert [
        broken_lines(data / "input_stream" / name) for name in SAMPLE_FILES["input_stream"]
    ] == [[], [], [5, 10]]
    assert (course_home / "checkpoints").is_dir() and (course_home / "output").is_dir()
    assert "wrote 3 files to" in first.stdout and "28 transactions + 2 broken lines" in first.stdout
    assert "wrote 5 files to" in first.stdout and "wrote 4 files to" in first.stdout
    before = snapshot(course_home)

    # A simulator added a file since: a rerun removes it and writes the same bytes again.
    (data / "input_stream" / "transactions-0004.json").write_text(
        '{"transaction_id":"TXN-000031"}\n'
    )
    second = run_script("initial_setup.py", "--sample-data", home=course_home, input_text="")

    assert second.returncode == 0, second.stderr
    assert snapshot(course_home) == before


@pytest.mark.smoke
def test_no_flags_and_no_terminal_means_sample_data(course_home):
    result = run_script("initial_setup.py", home=course_home, input_text="")

    assert result.returncode == 0, result.stderr
    assert (
        sorted(p.name for p in (course_home / "data" / "ecommerce_events").iterdir())
        == SAMPLE_FILES["ecommerce_events"]
    )


@pytest.mark.smoke
def test_menu_in_a_terminal_choice_1_creates_only_the_folders(course_home):
    leader, follower = pty.openpty()
    env = {**os.environ, "STREAMING_COURSE_HOME": str(course_home)}
    os.write(leader, b"1\n")  # the learner's answer, waiting in the terminal's input
    result = subprocess.run(
        [sys.executable, str(ROOT / "initial_setup.py")],
        stdin=follower,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    os.close(follower)
    os.close(leader)

    assert result.returncode == 0, result.stderr
    assert "2  folders + sample data (recommended)" in result.stdout
    assert (course_home / "data" / "input_stream").is_dir()
    assert list((course_home / "data" / "input_stream").iterdir()) == []


@pytest.mark.smoke
def test_check_reports_each_requirement(course_home):
    result = run_script("initial_setup.py", "--check", home=course_home, input_text="")

    assert result.returncode == 0, result.stderr
    for name in ("Python", "Java", "pyspark"):
        assert f"✓ {name}: " in result.stdout
    assert not (course_home / "data").exists()  # --check only checks


@pytest.mark.smoke
def test_check_without_java_exits_1_with_the_advice(course_home, tmp_path):
    no_java = tmp_path / "empty_bin"
    no_java.mkdir()
    result = run_script(
        "initial_setup.py",
        "--check",
        home=course_home,
        input_text="",
        env={"PATH": str(no_java), "JAVA_HOME": ""},
    )

    assert result.returncode == 1
    assert "✗ Java: NOT READY" in result.stdout
    assert "Java was not found" in result.stdout and "JAVA_HOME" in result.stdout


@pytest.mark.smoke
def test_reset_empties_checkpoints_and_output_only(course_home):
    assert (
        run_script("initial_setup.py", "--sample-data", home=course_home, input_text="").returncode
        == 0
    )
    (course_home / "checkpoints" / "03_file_streaming" / "query" / "offsets").mkdir(parents=True)
    (course_home / "checkpoints" / "03_file_streaming" / "query" / "metadata").write_text("{}")
    (course_home / "checkpoints" / ".gitkeep").write_text("")
    (course_home / "output" / "04_output_sinks").mkdir()
    (course_home / "output" / "04_output_sinks" / "part-0000.parquet").write_bytes(b"PAR1")
    (course_home / "output" / "notes.txt").write_text("x")
    data_before = snapshot(course_home)

    result = run_script("initial_setup.py", "--reset", home=course_home, input_text="")

    assert result.returncode == 0, result.stderr
    assert [p.name for p in (course_home / "checkpoints").iterdir()] == [".gitkeep"]
    assert list((course_home / "output").iterdir()) == []
    assert snapshot(course_home) == data_before
    assert "emptied" in result.stdout and "(2 items removed)" in result.stdout
