"""The four file simulators as a learner runs them: the same flags, reproducible files, clean
stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from common import schemas
from common.timestamps import parse_iso
from conftest import ROOT, run_script
from data_generators import simulate_file_data
from infra.files import staging_dir_for

BASE = "2025-01-15T10:30:00Z"


class FileSimulator:
    """One simulator script, where it writes under data/, and the flags for a small run of 3
    batches."""

    def __init__(self, script: str, folder: str, small_run: list[str]):
        self.script, self.folder, self.small_run = f"data_generators/{script}", folder, small_run


SIMULATORS = {
    "transactions": FileSimulator("simulate_file_data.py", "input_stream", ["--count", "3"]),
    "ecommerce": FileSimulator(
        "generate_ecommerce_events.py", "ecommerce_events", ["--count", "3"]
    ),
    "sensors": FileSimulator("generate_sensor_data.py", "sensor_readings", ["--count", "3"]),
    # 3 batches of 20 impressions: a file of impressions each, and a file of clicks when there are
    # some.
    "ad_events": FileSimulator(
        "generate_ad_events.py", "ad_events", ["--count", "60", "--batch-size", "20"]
    ),
}
# Back-to-back runs of 30 tiny files, to check their modification times.
MANY_TINY_FILES = {
    "transactions": ["--count", "30", "--records-per-file", "1"],
    "ecommerce": ["--count", "30", "--events-per-file", "1"],
    "sensors": ["--count", "30", "--readings-per-file", "1"],
    "ad_events": ["--count", "30", "--batch-size", "1"],
}


def written(stdout: str) -> list[Path]:
    """The files a run says it wrote ("wrote <path> (<note>)"), in the order it wrote them."""
    return [
        Path(line.removeprefix("wrote ").split(" (")[0])
        for line in stdout.splitlines()
        if line.startswith("wrote ")
    ]


def files_under(folder: Path) -> dict[str, bytes]:
    """Every JSON file under ``folder`` (subfolders too), by its path relative to it."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*.json"))
    }


def run(name: str, *extra: str, home: Path, **kwargs) -> subprocess.CompletedProcess:
    simulator = SIMULATORS[name]
    result = run_script(
        simulator.script,
        *simulator.small_run,
        "--interval",
        "0",
        "--base-time",
        BASE,
        *extra,
        home=home,
        **kwargs,
    )
    assert result.returncode == 0, result.stderr
    return result


# --- the same flags everywhere --------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.parametrize("name", SIMULATORS)
def test_same_seed_same_files_different_seed_different_files(name, tmp_path):
    simulator = SIMULATORS[name]
    outputs = {}
    for label, seed in (("first", "7"), ("second", "7"), ("other_seed", "8")):
        home = tmp_path / label
        result = run(name, "--seed", seed, home=home, cwd=tmp_path)
        folder = home / "data" / simulator.folder
        assert sorted(written(result.stdout)) == sorted(folder.rglob("*.json"))
        outputs[label] = files_under(folder)

    assert len(outputs["first"]) >= 3
    assert outputs["first"] == outputs["second"]
    assert outputs["first"] != outputs["other_seed"]


@pytest.mark.smoke
@pytest.mark.parametrize("name", SIMULATORS)
def test_output_dir_writes_there_and_nowhere_else(name, course_home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    result = run(name, "--output-dir", str(elsewhere), home=course_home)
    run(name, home=tmp_path / "default_home")

    assert not (course_home / "data").exists()
    assert sorted(written(result.stdout)) == sorted(elsewhere.rglob("*.json"))
    assert files_under(elsewhere) == files_under(
        tmp_path / "default_home" / "data" / SIMULATORS[name].folder
    )
    assert (
        "--output-dir DIR" in run_script(SIMULATORS[name].script, "--help", home=course_home).stdout
    )


@pytest.mark.smoke
@pytest.mark.parametrize("name", SIMULATORS)
def test_files_written_back_to_back_still_have_increasing_mtimes(name, course_home):
    folder = course_home / "data" / SIMULATORS[name].folder
    result = run_script(
        SIMULATORS[name].script, *MANY_TINY_FILES[name], "--interval", "0", home=course_home
    )
    assert result.returncode == 0, result.stderr

    # The file source reads new files in modification-time order, compared in milliseconds;
    # tiny files written with --interval 0 would otherwise tie and be read out of order.
    files = written(result.stdout)
    mtimes = [path.stat().st_mtime_ns for path in files]
    assert len(files) >= 30
    assert sorted(files) == sorted(folder.rglob("*.json"))
    assert all(later - earlier >= 1_000_000 for earlier, later in pairwise(mtimes))


@pytest.mark.smoke
@pytest.mark.parametrize(
    "stop, expected_code", [(signal.SIGINT, 130), (signal.SIGTERM, 0)], ids=["ctrl-c", "sigterm"]
)
@pytest.mark.parametrize("name", SIMULATORS)
def test_simulators_stop_cleanly_and_remove_their_pid_file(name, stop, expected_code, course_home):
    simulator = SIMULATORS[name]
    env = {**os.environ, "STREAMING_COURSE_HOME": str(course_home), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / simulator.script),
            *simulator.small_run,
            "--interval",
            "60",
            "--base-time",
            BASE,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in process.stdout:  # the first file is written at once; then it waits 60 s
        if line.startswith("wrote "):
            break
    pid_files = list((course_home / ".runtime").glob("*.pid"))
    assert [path.read_text() for path in pid_files] == [str(process.pid)]

    process.send_signal(
        stop
    )  # Ctrl-C in its terminal, or a lesson stopping the simulator it started
    try:
        stdout, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{process.pid}/status")
        signals = (
            [line for line in status.read_text().splitlines() if line.startswith("Sig")]
            if status.exists()
            else []
        )
        process.kill()
        pytest.fail(
            f"the simulator did not stop within 60 s of {stop.name}; its signal state: {signals}"
        )

    assert process.returncode == expected_code
    assert "Traceback" not in stderr
    assert not pid_files[0].exists()
    # Only the first batch (the ad simulator's may hold a clicks file too), every file complete.
    files = written(line + stdout)
    assert sorted(files) == sorted((course_home / "data" / simulator.folder).rglob("*.json"))
    assert {path.stem[-4:] for path in files} == {"0001" if name != "ad_events" else "0000"}
    assert "Done." not in stdout
    if stop == signal.SIGINT:
        assert stderr == "\nStopped with Ctrl-C; every file written so far is complete.\n"


# --- the transactions simulator: numbering across runs, broken lines ---------------------------


@pytest.mark.smoke
def test_a_second_run_continues_the_numbering(course_home):
    for _ in range(2):
        result = run_script(
            "data_generators/simulate_file_data.py",
            "--count",
            "2",
            "--interval",
            "0",
            "--base-time",
            BASE,
            home=course_home,
        )
        assert result.returncode == 0, result.stderr

    folder = course_home / "data" / "input_stream"
    assert sorted(path.name for path in folder.iterdir()) == [
        f"transactions-{n:04d}.json" for n in (1, 2, 3, 4)
    ]
    ids = [
        json.loads(line)["transaction_id"]
        for path in sorted(folder.iterdir())
        for line in path.read_text().splitlines()
    ]
    assert ids == [f"TXN-{n:06d}" for n in range(1, 41)]
    # The second run continued the same sequence: identical to one run of four files.
    assert [
        json.loads(line) for line in (folder / "transactions-0004.json").read_text().splitlines()
    ] == simulate_file_data.make_transactions(10, base_time=parse_iso(BASE), start=30)


@pytest.mark.smoke
def test_the_watched_folder_only_ever_holds_complete_files(course_home):
    """The real script, raced by a reader that checks every file when it first appears."""
    folder = course_home / "data" / "input_stream"
    folder.mkdir(parents=True)
    records_per_file = 300
    command = [
        sys.executable,
        str(ROOT / "data_generators/simulate_file_data.py"),
        "--count",
        "40",
        "--interval",
        "0",
        "--records-per-file",
        str(records_per_file),
    ]
    env = {**os.environ, "STREAMING_COURSE_HOME": str(course_home)}
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    problems, checked = [], set()
    while True:
        finished = process.poll() is not None
        # A file is checked when it first appears: that is when a non-atomic write shows half a
        # file.
        for path in sorted(folder.iterdir()):
            if path.name in checked:
                continue
            text = path.read_text()
            if (
                not simulate_file_data.FILE_PATTERN.match(path.name)
                or not text.endswith("\n")
                or len(text.splitlines()) != records_per_file
            ):
                problems.append((path.name, len(text)))
            checked.add(path.name)
        if finished:
            break
    stdout, stderr = process.communicate()

    assert process.returncode == 0, stderr
    assert problems == []
    assert len(checked) == 40
    staging = staging_dir_for(folder)
    assert staging.parent == folder.parent and staging != folder
    assert list(staging.iterdir()) == []  # everything staged was renamed into the folder


@pytest.mark.smoke
def test_malformed_lines_are_corrupt_records_for_spark(spark, course_home):
    result = run_script(
        "data_generators/simulate_file_data.py",
        "--count",
        "2",
        "--interval",
        "0",
        "--malformed-every",
        "3",
        "--base-time",
        BASE,
        home=course_home,
    )
    assert result.returncode == 0, result.stderr

    with_corrupt = StructType(
        [*schemas.TRANSACTION_SCHEMA.fields, StructField("_corrupt_record", StringType())]
    )
    df = spark.read.schema(with_corrupt).json(str(course_home / "data" / "input_stream")).cache()
    corrupt = df.filter(F.col("_corrupt_record").isNotNull())

    assert df.count() == 20
    assert corrupt.count() == 6  # lines 3, 6 and 9 of each file
    assert (
        df.filter(F.col("_corrupt_record").isNull() & F.col("transaction_id").isNotNull()).count()
        == 14
    )
    df.unpersist()


@pytest.mark.smoke
def test_a_simulator_stops_on_ctrl_c_even_if_it_was_started_with_signals_blocked(course_home):
    """Blocked and ignored signals are inherited from whatever starts a process."""
    simulator = SIMULATORS["transactions"]
    env = {**os.environ, "STREAMING_COURSE_HOME": str(course_home), "PYTHONUNBUFFERED": "1"}

    def blocked():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / simulator.script),
            *simulator.small_run,
            "--interval",
            "60",
            "--base-time",
            BASE,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=blocked,
    )
    for line in process.stdout:
        if line.startswith("wrote "):
            break
    process.send_signal(signal.SIGINT)
    try:
        process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("the simulator ignored Ctrl-C")
    assert process.returncode == 130
