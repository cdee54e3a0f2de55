"""Environment errors: each one a paragraph that says what to do, within seconds, never a bare Java
trace.

The cases of the hardening issue: a busy port (socket, Kafka), an unreachable broker, Java missing
or too old, an incompatible checkpoint, an output or checkpoint folder Spark cannot write (no
permission, read-only, full), and Ctrl-C during a micro-batch (a clean stop, then a resume with
nothing lost).

Most checks run before the JVM starts, so the lesson runs here start no JVM. Where Spark itself
fails mid-run, ``errors.explain`` is tested on the messages Spark 4.2.0 really raised on this
course's session (captured by running a rate -> parquet query with its checkpoint or output on a
tiny tmpfs, filled up or remounted read-only, and as user ``nobody`` under a root-owned folder),
and once on a live read-only remount when the platform lets the test mount a tmpfs.

We run as root here (and CI probably does), and chmod does not stop root: a folder Spark
cannot write is made honestly, by a path whose parent is a file, by a tmpfs mounted read-only
or too small (needs mount rights; skipped with the reason otherwise), and by checking as user
``nobody`` (setpriv) a folder that root owns.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from common import config
from conftest import ROOT, free_port, prose, run_script, silent_listener
from infra import environment, simulators
from infra.errors import CHECKPOINT_MISMATCH, explain, folder_failure

HOST = "127.0.0.1"
TRACEBACK = "Traceback (most recent call last)"
# kafka-python 3.0 loads its protocol schemas with importlib.resources calls that Python 3.11
# deprecates.
pytestmark = [
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


def advice_only(result: subprocess.CompletedProcess) -> str:
    """The lesson failed with one paragraph of advice: exit 1, no Python or Java trace."""
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-3000:]
    assert TRACEBACK not in result.stderr and "\tat " not in result.stderr, result.stderr[-3000:]
    return prose(result.stderr)


# --- a busy port
# -----------------------------------------------------------------------------------


@pytest.mark.smoke
def test_a_kafka_port_held_by_another_program_is_named_before_any_jvm_starts(course_home):
    # Lesson 08 without KAFKA_BOOTSTRAP_SERVERS looks for the course's broker, finds a program that
    # is not Kafka on its port, and would have to start one there.
    with silent_listener() as port:
        result = run_script(
            "streaming_tutorial/08_kafka_streaming.py",
            home=course_home,
            timeout=60,
            env={
                config.KAFKA_BOOTSTRAP_ENV: "",
                config.LOCAL_KAFKA_PORT_ENV: str(port),
                config.LOCAL_KAFKA_CONTROLLER_PORT_ENV: str(free_port(HOST)),
            },
        )

    message = advice_only(result)
    assert (
        f"Port {port} on {HOST} is already in use by a program that is not a Kafka broker"
        in message
    )
    assert f"lsof -i :{port}" in message and "LOCAL_KAFKA_PORT=" in message


def test_the_socket_lesson_says_when_its_port_is_held_by_a_program_that_is_not_its_server(capsys):
    # The socket server itself explains a busy port and exits 2
    # (tests/simulators/test_socket_server.py). The lesson reads from whatever listens (a learner's
    # 'nc -lk' is fine) but says what it found.
    with silent_listener() as port:
        with simulators.server_for_lesson(
            "socket-test-busy", "socket_server.py", ["--demo"], HOST, port
        ) as server:
            assert server.process is None and not server.done()  # it started nothing
    out = prose(capsys.readouterr().out)
    assert (
        f"Something already listens on {HOST}:{port}, and it is not the course's socket_server.py"
        in out
    )
    assert f"lsof -i :{port}" in out and "--port N" in out


# --- an unreachable broker
# -------------------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.parametrize("listening", [False, True], ids=["closed-port", "not-kafka"])
def test_lesson_08_with_an_unreachable_broker_gives_advice_not_a_hang(course_home, listening):
    with silent_listener() if listening else _nothing_on(free_port(HOST)) as port:
        result = run_script(
            "streaming_tutorial/08_kafka_streaming.py",
            home=course_home,
            timeout=60,
            env={config.KAFKA_BOOTSTRAP_ENV: f"{HOST}:{port}"},
        )

    message = advice_only(result)
    assert message.startswith(
        f"No Kafka broker answers at {HOST}:{port}. KAFKA_BOOTSTRAP_SERVERS is set to "
        f"'{HOST}:{port}', but no broker there answered."
    ), message
    assert "unset the variable" in message
    assert "Checkpoints:" not in result.stdout  # it stopped before the lesson's session


@contextmanager
def _nothing_on(port: int):
    yield port


# --- Java missing or too old
# -----------------------------------------------------------------------


def fake_jdk(folder: Path, version_line: str) -> Path:
    """A JDK folder whose bin/java prints ``version_line`` as `java -version` does (on stderr)."""
    java = folder / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return folder


@pytest.mark.smoke
@pytest.mark.parametrize("java", ["java-8-on-path", "java-11-in-java-home", "none"])
def test_a_lesson_without_a_suitable_java_says_how_to_get_one(course_home, tmp_path, java):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    if java == "java-8-on-path":
        env = {
            "PATH": str(fake_jdk(tmp_path / "jdk8", 'java version "1.8.0_402"') / "bin"),
            "JAVA_HOME": "",
        }
    elif java == "java-11-in-java-home":
        env = {
            "PATH": str(empty),
            "JAVA_HOME": str(fake_jdk(tmp_path / "jdk11", 'openjdk version "11.0.2"')),
        }
    else:
        env = {"PATH": str(empty), "JAVA_HOME": ""}

    message = advice_only(
        run_script("streaming_tutorial/02_output_modes.py", home=course_home, timeout=60, env=env)
    )

    if java == "java-8-on-path":
        assert "Java 8 is too old" in message and "Spark 4 needs Java 17 or newer" in message
    elif java == "java-11-in-java-home":
        assert f"Java 11 is too old ({tmp_path / 'jdk11' / 'bin' / 'java'})" in message
        assert "set JAVA_HOME to it" in message
    else:
        assert message.startswith(
            "Java was not found. Spark runs on the JVM and needs Java 17 or newer."
        )
        assert "apt install openjdk-17-jdk-headless" in message


# --- a folder Spark cannot write: checked before the JVM starts
# ------------------------------------


def test_a_checkpoint_folder_under_a_file_is_refused_before_spark_starts(course_home, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder should be\n")

    result = run_script(
        "streaming_tutorial/02_output_modes.py",
        "--checkpoint-dir",
        str(blocker / "checkpoints"),
        home=course_home,
        timeout=60,
    )

    message = advice_only(result)
    assert message.startswith(
        f"The checkpoint folder {blocker / 'checkpoints'} cannot be created: {blocker} is a "
        "file, not a folder."
    )
    assert "--checkpoint-dir DIR" in message and "STREAMING_COURSE_HOME=DIR" in message
    assert "--reset" not in message


@contextmanager
def tmpfs(folder: Path, *options: str):
    """A tmpfs mounted on ``folder``; skip when this platform does not let the test mount one."""
    folder.mkdir(parents=True, exist_ok=True)
    mount = shutil.which("mount")
    if mount is None:
        pytest.skip("no mount command: cannot make a read-only or full file system")
    result = subprocess.run(
        [mount, "-t", "tmpfs", "-o", ",".join(("size=1m", *options)), "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.skip(
            f"mounting a tmpfs needs CAP_SYS_ADMIN, which this run lacks: {result.stderr.strip()}"
        )
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_read_only_output_folder_is_refused(tmp_path):
    with tmpfs(tmp_path / "ro", "ro") as mounted:
        problem = environment.folder_problem(
            mounted / "output" / "03_file_streaming", "output folder"
        )
    assert problem.startswith(
        f"The output folder {mounted / 'output' / '03_file_streaming'} is on a read-only "
        f"file system ({mounted} is mounted read-only). Remount it read-write, or give"
    )


def test_a_full_checkpoint_disk_is_refused(tmp_path):
    with tmpfs(tmp_path / "full") as mounted:  # 1 MB: below the MIN_FREE_BYTES a lesson needs
        problem = environment.folder_problem(mounted / "checkpoints", "checkpoint folder")
    assert re.fullmatch(
        rf"The disk that holds the checkpoint folder {mounted / 'checkpoints'} is full \(\d+ KB "
        r"free\): Spark would stop the query at its first write\. Free some space on that disk "
        r"\('df -h' shows how much is left\), then run the lesson again\.",
        problem,
    ), problem


def test_a_folder_another_user_owns_is_refused():
    # Root may write anywhere, so the check runs as 'nobody' on a folder root owns (mode 755).
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: no user for whom a folder is unwritable")
    folder = Path(
        tempfile.mkdtemp(prefix="course-not-yours-")
    )  # under /tmp, so 'nobody' can reach it
    # The check's code, where 'nobody' can read it too: the clone may sit in a folder only root
    # enters.
    code = Path(tempfile.mkdtemp(prefix="course-code-"))
    for package in ("common", "infra"):
        shutil.copytree(ROOT / "streaming_tutorial" / package, code / package)
    code.chmod(0o755)
    try:
        folder.chmod(0o755 if os.geteuid() == 0 else 0o555)
        check = (
            f"import sys; sys.path.insert(0, {str(code)!r}); "
            "from infra.environment import folder_problem; "
            "print(folder_problem("
            f"__import__('pathlib').Path({str(folder / 'output')!r}), 'output folder'))"
        )
        as_nobody = (
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            if os.geteuid() == 0
            else []
        )
        result = subprocess.run(
            [*as_nobody, sys.executable, "-c", check],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
        shutil.rmtree(code)
    assert result.returncode == 0, result.stderr
    assert prose(result.stdout).startswith(
        f"You may not write to {folder}, so Spark cannot write the output folder "
        f"{folder / 'output'}. Make it writable for your user"
    )


def test_a_writable_folder_passes(tmp_path):
    assert (
        environment.folder_problem(
            tmp_path / "checkpoints" / "07_watermarking", "checkpoint folder"
        )
        is None
    )


# --- a folder Spark cannot write: what Spark raises mid-run
# ----------------------------------------


class JavaError(Exception):
    """A pyspark error as Spark raised it: its message, its condition, the (converted) JVM cause in
    _cause."""

    def __init__(
        self, message: str, condition: str | None = None, cause: BaseException | None = None
    ):
        super().__init__(message)
        self._condition, self._cause = condition, cause

    def getCondition(self):
        return self._condition


def stream_failed(inner: str, *causes: str) -> JavaError:
    """A StreamingQueryException with the chain of causes pyspark converts (each 'class:
    message')."""
    chain = None
    for cause in reversed(causes):
        chain = JavaError(cause, cause=chain)
    return JavaError(
        "[STREAM_FAILED] Query [id = d154a5d8, runId = 8934dfbd] terminated with exception: "
        f"{inner} "
        "SQLSTATE: XXKST\n=== Streaming Query ===\nIdentifier: [id = d154a5d8, runId = 8934dfbd]",
        "STREAM_FAILED",
        chain,
    )


# Captured from Spark 4.2.0 (see the module docstring): the checkpoint's tmpfs filled up.
CHECKPOINT_DISK_FULL = stream_failed(
    "java.io.IOException: No space left on device", "java.io.IOException: No space left on device"
)
# The output's tmpfs filled up: Parquet's close fails; the OS's words are three causes down.
OUTPUT_DISK_FULL = stream_failed(
    "[TASK_WRITE_FAILED] Task failed while writing rows to file:/tmp/envcap/mnt/out. SQLSTATE: "
    "58030",
    "org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows to "
    "file:/tmp/envcap/mnt/out. SQLSTATE: 58030",
    "org.apache.parquet.util.AutoCloseables$ParquetCloseResourceException: "
    "Unable to close resource",
    "org.apache.hadoop.fs.FSError: java.io.IOException: No space left on device",
    "java.io.IOException: No space left on device",
)
# The checkpoint's tmpfs was remounted read-only between two batches.
CHECKPOINT_READ_ONLY = stream_failed(
    "/tmp/envcap/mnt/ckpt/offsets/.2.62b10cca-52ce-4fd3-b6aa-0b7a2d9c45c6.tmp (Read-only file "
    "system)"
)
# The output's tmpfs was remounted read-only between two batches.
OUTPUT_READ_ONLY = stream_failed(
    "Job aborted due to stage failure: Task 0 in stage 2.0 failed 1 times, most recent failure: "
    "Lost task 0.0 in stage 2.0 (TID 3) (localhost executor driver): "
    "java.io.FileNotFoundException: "
    "/tmp/envcap/mnt/out/part-00000-385e98f9-0cec-42e2-81e8-cfcb502fb48e-c000.snappy.parquet "
    "(Read-only file system)\n\tat java.base/java.io.FileOutputStream.open0(Native Method)"
)
# start() as user nobody, with the checkpoint in a folder root owns: a Py4JJavaError, no condition.
CHECKPOINT_NOT_YOURS = JavaError(
    "An error occurred while calling o56.start.\n: java.io.IOException: mkdir of "
    "file:/tmp/envcap/rootonly/ckpt failed\n\tat "
    "org.apache.hadoop.fs.FileSystem.primitiveMkdir(FileSystem.java:1357)"
)


@pytest.mark.parametrize(
    "error, opening",
    [
        (
            CHECKPOINT_DISK_FULL,
            "The disk that holds the checkpoint or output folder is full (No space left on "
            "device), so Spark could not write its next file and stopped the query.",
        ),
        (
            OUTPUT_DISK_FULL,
            "The disk that holds the checkpoint or output folder is full (No space left on device)",
        ),
        (
            CHECKPOINT_READ_ONLY,
            "Spark could not write /tmp/envcap/mnt/ckpt/offsets/.2.62b10cca-52ce-4fd3-b6aa-"
            "0b7a2d9c45c6.tmp: that file system is read-only",
        ),
        (
            OUTPUT_READ_ONLY,
            "Spark could not write "
            "/tmp/envcap/mnt/out/part-00000-385e98f9-0cec-42e2-81e8-cfcb502fb48e-c000.snappy"
            ".parquet: "
            "that file system is read-only",
        ),
        (
            CHECKPOINT_NOT_YOURS,
            "Spark could not create the folder /tmp/envcap/rootonly/ckpt: you may not write to the "
            "folder it goes in",
        ),
    ],
    ids=[
        "checkpoint-full",
        "output-full",
        "checkpoint-read-only",
        "output-read-only",
        "checkpoint-not-yours",
    ],
)
def test_spark_failing_to_write_a_folder_gets_advice_without_reset(error, opening):
    advice = explain(error)
    assert advice is not None
    assert prose(advice).startswith(opening), advice
    assert "--reset" not in advice and "delete" not in advice.lower()
    assert "\nSpark said:\n  " in advice and "\tat " not in advice


def test_the_os_words_alone_are_not_enough():
    # The exact texts count only after a Java or Hadoop exception name, or as Java's '/path
    # (reason)'.
    assert folder_failure(RuntimeError("my notes say: No space left on device")) is None
    assert explain(RuntimeError("Permission denied, said the user")) is None


def test_a_checkpoint_turned_read_only_mid_run_is_explained(spark, tmp_path):
    with tmpfs(tmp_path / "mnt", "size=8m") as mounted:
        query = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 100)
            .load()
            .writeStream.format("noop")
            .option("checkpointLocation", str(mounted / "ckpt"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        try:
            query.processAllAvailable()
            subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
            with pytest.raises(Exception) as failure:
                query.awaitTermination(
                    120
                )  # the next batch cannot write its offsets: the query fails
        finally:
            query.stop()
    advice = prose(explain(failure.value) or "")
    assert re.match(
        rf"Spark could not write {mounted / 'ckpt'}/\S+: that file system is read-only", advice
    ), advice
    assert "it goes on from its checkpoint" in advice and "--reset" not in advice


# --- an incompatible checkpoint
# --------------------------------------------------------------------


def test_a_checkpoint_from_other_grouping_keys_is_answered_with_reset(spark, tmp_path):
    data, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    data.mkdir()
    (data / "1.json").write_text('{"user": "U1", "page": "home"}\n')

    def run(*keys: str) -> None:
        (
            spark.readStream.schema("user STRING, page STRING")
            .json(str(data))
            .groupBy(*keys)
            .count()
            .writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
            .awaitTermination(120)
        )

    run("user")
    (data / "2.json").write_text('{"user": "U2", "page": "cart"}\n')
    with pytest.raises(Exception) as failure:
        run("user", "page")  # the same checkpoint, a state keyed by two columns now

    advice = explain(failure.value)
    assert advice is not None and prose(advice).startswith(
        "The checkpoint holds state from an earlier version of this query, which has changed "
        "since: its grouping"
    )
    expected = CHECKPOINT_MISMATCH["STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"]
    assert prose(advice).split(" Spark said: ")[0] == prose(expected)
    assert "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]" in advice.split("Spark said:")[1]


# --- Ctrl-C during a micro-batch
# -------------------------------------------------------------------


@pytest.mark.smoke
def test_ctrl_c_during_a_batch_stops_cleanly_and_the_next_run_loses_nothing(course_home, tmp_path):
    # Run 1: lesson 03 finds no files, so it starts its simulator and watches the folder, one file
    # per micro-batch. Its batch function prints "Batch 0 · ..." while batch 0 runs (before the
    # commit): then the terminal's Ctrl-C reaches the lesson's whole process group (the JVM ignores
    # it).
    lesson = str(ROOT / "streaming_tutorial/03_file_streaming.py")
    with open(tmp_path / "run1.err", "w+", encoding="utf-8") as errors:
        first = subprocess.Popen(
            [sys.executable, lesson],
            env={**os.environ, "STREAMING_COURSE_HOME": str(course_home), "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,
        )
        seen = []
        for line in first.stdout:
            seen.append(line)
            if line.startswith("Batch 0 · "):
                os.killpg(first.pid, signal.SIGINT)
                break
        out1 = "".join(seen) + first.communicate(timeout=120)[0]
        errors.seek(0)
        err1 = errors.read()
    assert first.returncode == 130, out1[-2000:] + err1[-3000:]
    assert err1.rstrip().endswith(
        "Stopped with Ctrl-C: queries and Spark shut down; checkpoints are kept."
    )
    assert TRACEBACK not in err1 and "Batch 0 · " in out1
    assert "Rows parsed:" not in out1  # it stopped there, before the run's summary

    # What the simulator wrote before the lesson stopped it (whole files only: it writes
    # atomically).
    folder = course_home / "data" / "input_stream"
    files = sorted(path.name for path in folder.glob("*.json"))
    lines = [line for path in folder.glob("*.json") for line in path.read_text().splitlines()]
    broken = sum(
        1 for line in lines if not line.endswith("}")
    )  # the simulator cuts a broken line in half

    # Run 2: resumes from the checkpoint and reads only what run 1 did not commit.
    second = run_script(
        "streaming_tutorial/03_file_streaming.py", "--available-now", home=course_home
    )
    assert second.returncode == 0, second.stderr[-3000:]
    read_before = int(
        re.search(r"Already read by earlier runs \(the checkpoint's list\): (\d+)", second.stdout)[
            1
        ]
    )
    assert read_before >= 1  # the batch that ran during Ctrl-C finished and was committed
    assert f"Read in this run: {len(files) - read_before} file(s)" in second.stdout
    assert "Old files read again: 0" in second.stdout

    # Every file once over both runs (a batch cut short would repeat with its same file), every row
    # counted.
    batches = {}
    for out in (out1, second.stdout):
        for batch_id, name, parsed, bad in re.findall(
            r"^Batch (\d+) · (\S+): (\d+) rows parsed, (\d+) lines quarantined", out, re.M
        ):
            assert batches.setdefault(int(batch_id), (name, int(parsed), int(bad))) == (
                name,
                int(parsed),
                int(bad),
            )
    assert sorted(name for name, _, _ in batches.values()) == files
    assert sum(parsed for _, parsed, _ in batches.values()) == len(lines) - broken
    assert sum(bad for _, _, bad in batches.values()) == broken
