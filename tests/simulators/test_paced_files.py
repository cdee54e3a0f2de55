"""The one loop every file simulator writes with (infra.simfiles): atomic, in order, paced,
stoppable.

The atomicity tests slow the disk down instead of racing a reader against the clock:
``Path.write_text`` is replaced by one that writes in small chunks and lets a reader look
at the watched folder after every chunk. A writer that is not atomic is then caught every
time, and the test proves it by catching one.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from conftest import ROOT
from infra import simfiles
from infra.files import json_lines, staging_dir_for
from infra.simfiles import SimFile, continue_after, keep_in_order, write_files_paced

CHUNK_CHARS = 4096  # the slowed-down disk writes this much, then lets the reader look


def big_file(number: int, lines: int = 400) -> SimFile:
    """A file of ``lines`` JSON lines: big enough to be written in many chunks."""
    records = [{"file": number, "line": line, "padding": "x" * 60} for line in range(lines)]
    return SimFile(f"part-{number:04d}.json", json_lines(records), f"{lines} lines")


class Reader:
    """What a streaming file source does on every trigger: list the folder, read every file."""

    def __init__(self, folder: Path, expected: dict[str, str]):
        self.folder, self.expected = folder, expected
        self.looks = 0
        self.partial: list[
            tuple[str, int]
        ] = []  # (name, characters seen) of every file seen incomplete

    def look(self) -> None:
        self.looks += 1
        if not self.folder.is_dir():
            return
        for path in sorted(self.folder.iterdir()):
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                if text != self.expected.get(path.name):
                    self.partial.append((path.name, len(text)))


@pytest.fixture
def slow_disk(monkeypatch, tmp_path):
    """A watched folder, the files to write into it, and a Reader that looks after every chunk
    written."""
    folder = tmp_path / "watched"
    files = [big_file(number) for number in range(3)]
    reader = Reader(folder, {file.name: file.text for file in files})

    def write_text_in_chunks(
        path: Path, data: str, encoding=None, errors=None, newline=None
    ) -> int:
        with open(path, "w", encoding=encoding, errors=errors, newline=newline) as handle:
            for start in range(0, len(data), CHUNK_CHARS):
                handle.write(data[start : start + CHUNK_CHARS])
                handle.flush()
                reader.look()
        return len(data)

    monkeypatch.setattr(Path, "write_text", write_text_in_chunks)
    return folder, files, reader


def test_a_reader_never_sees_a_half_written_file(slow_disk):
    folder, files, reader = slow_disk

    written = write_files_paced(folder, [[file] for file in files], interval=0)

    chunks = sum(-(-len(file.text) // CHUNK_CHARS) for file in files)
    assert reader.looks == chunks > 3 * len(files)  # it looked in the middle of every file
    assert reader.partial == []
    assert [path.read_text() for path in written] == [file.text for file in files]
    assert (
        list(staging_dir_for(folder).iterdir()) == []
    )  # staged outside the folder, then renamed in


def test_the_reader_catches_a_writer_that_is_not_atomic(slow_disk, monkeypatch):
    folder, files, reader = slow_disk

    def write_in_place(target_folder: Path, name: str, text: str) -> Path:
        target_folder.mkdir(parents=True, exist_ok=True)
        (target_folder / name).write_text(text, encoding="utf-8")
        return target_folder / name

    monkeypatch.setattr(simfiles, "write_atomically", write_in_place)
    write_files_paced(folder, [[file] for file in files], interval=0)

    seen_short = {name for name, length in reader.partial}
    assert seen_short == {file.name for file in files}  # every file was seen half written
    assert (files[0].name, CHUNK_CHARS) in reader.partial


def test_files_get_increasing_modification_times_in_the_order_written(tmp_path):
    folder = tmp_path / "ads"
    batches = [
        [
            SimFile(f"impressions/i-{n}.json", "{}\n", "1 impression"),
            SimFile(f"clicks/c-{n}.json", "{}\n"),
        ]
        for n in range(20)
    ]

    written = write_files_paced(folder, batches, interval=0)

    assert [path.relative_to(folder).as_posix() for path in written] == [
        file.name for batch in batches for file in batch
    ]
    # The file source compares modification times in milliseconds: tiny files written
    # back to back would tie and could be read out of order.
    mtimes = [path.stat().st_mtime_ns for path in written]
    assert all(later - earlier >= simfiles.MTIME_STEP_NS for earlier, later in pairwise(mtimes))


def test_one_progress_line_per_file_with_its_note(tmp_path, capsys):
    folder = tmp_path / "out"
    batches = [[SimFile("a.json", "{}\n", "1 record")], [SimFile("sub/b.json", "{}\n{}\n")]]

    write_files_paced(folder, batches, interval=0)

    assert capsys.readouterr().out.splitlines() == [
        f"wrote {folder / 'a.json'} (1 record)",
        f"wrote {folder / 'sub' / 'b.json'}",
    ]


def test_it_pauses_between_batches_only_and_reads_the_batches_lazily(tmp_path, monkeypatch):
    folder = tmp_path / "out"
    events = []

    def batches():
        for number in range(3):
            events.append(f"make {number}")
            yield [SimFile(f"f-{number}.json", "{}\n"), SimFile(f"g-{number}.json", "{}\n")]

    def sleep(seconds):
        events.append(f"sleep {seconds:g} with {len(list(folder.iterdir()))} files")

    monkeypatch.setattr(simfiles, "pause", sleep)
    write_files_paced(folder, batches(), interval=2.5)

    assert events == [
        "make 0",
        "make 1",
        "sleep 2.5 with 2 files",
        "make 2",
        "sleep 2.5 with 4 files",
    ]


def test_interval_zero_never_sleeps(tmp_path, monkeypatch):
    monkeypatch.setattr(simfiles, "pause", lambda seconds: pytest.fail(f"paused {seconds}"))

    assert (
        len(
            write_files_paced(
                tmp_path, [[SimFile(f"{n}.json", "{}\n")] for n in range(3)], interval=0
            )
        )
        == 3
    )


def test_keep_in_order_moves_a_tie_just_past_the_previous_file_and_leaves_a_later_file_alone(
    tmp_path,
):
    path = tmp_path / "f.json"
    path.write_text("{}\n")
    os.utime(path, ns=(5_000_000_000, 5_000_000_000))

    assert keep_in_order(path, previous_mtime_ns=5_000_000_000) == 5_001_000_000
    assert path.stat().st_mtime_ns == 5_001_000_000
    assert (
        keep_in_order(path, previous_mtime_ns=1_000_000_000) == 5_001_000_000
    )  # already later: unchanged
    assert path.stat().st_mtime_ns == 5_001_000_000


def test_continue_after_counts_the_files_and_lines_already_there(tmp_path):
    pattern = re.compile(r"^part-(\d+)\.json$")
    assert continue_after(tmp_path / "missing", pattern) == (1, 0)

    (tmp_path / "part-0001.json").write_text("{}\n{}\n")
    (tmp_path / "part-0007.json").write_text(
        "{}\nbroken\n{}\n"
    )  # broken lines count too: ids stay unique
    (tmp_path / "notes.txt").write_text("not ours\n" * 10)

    assert continue_after(tmp_path, pattern) == (8, 5)


# --- stopping: the same in every simulator (infra.simulators.run_simulator) ------------------

PACED_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from infra.simfiles import SimFile, run_file_simulator
batches = ([SimFile(f"part-{n}.json", "{}\\n" * 10, "10 lines")] for n in range(3))
sys.exit(run_file_simulator("paced_test", Path(sys.argv[1]), batches, 60))
"""


@pytest.mark.parametrize(
    "stop, expected_code", [(signal.SIGINT, 130), (signal.SIGTERM, 0)], ids=["ctrl-c", "sigterm"]
)
def test_a_paced_run_stops_between_files_with_its_exit_code_and_no_traceback(
    stop, expected_code, course_home
):
    folder = course_home / "watched"
    env = {**os.environ, "STREAMING_COURSE_HOME": str(course_home), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", PACED_SCRIPT, str(folder), str(ROOT / "streaming_tutorial")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = process.stdout.readline()  # the first file is written at once; then it pauses 60 s
    pid_file = course_home / ".runtime" / "paced_test.pid"
    assert first == f"wrote {folder / 'part-0.json'} (10 lines)\n"
    assert pid_file.read_text() == str(process.pid)

    process.send_signal(
        stop
    )  # Ctrl-C in its terminal, or a lesson stopping the simulator it started
    stdout, stderr = process.communicate(timeout=60)

    assert process.returncode == expected_code
    assert stdout == ""
    assert "Traceback" not in stderr
    if stop == signal.SIGINT:
        assert stderr == "\nStopped with Ctrl-C; every file written so far is complete.\n"
    assert [path.name for path in folder.iterdir()] == ["part-0.json"]
    assert not pid_file.exists()
