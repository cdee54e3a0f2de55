"""A class-data archive for the driver JVM: Spark's classes loaded from a file, not from jars.

A Spark driver JVM loads some 15,000 classes from pyspark's jars at every start. The JVM can
keep what it loaded in an archive (class-data sharing, JDK 13+): the first run writes one at
exit (``-XX:ArchiveClassesAtExit``), later runs map it (``-XX:SharedArchiveFile``). Measured on
2 cores, a session with Kafka and Delta plus one streaming query: 14 JVM CPU-seconds without,
7-8 with; the session is ready in 3.5 s instead of 6 (docs/BENCHMARKS.md).

Care is needed, because a JVM given a *truncated* archive dies at start (a fatal error, not a
fallback). So a JVM only ever writes to a ``.pending`` file of its own, and a later session
promotes it to the archive only once that JVM has exited and a throw-away ``java -version``
has mapped the file without error.
An archive that does not fit (another JDK, another pyspark) is ignored by the JVM, which then
loads classes as usual; it is keyed by both, so it is rebuilt once for the new pair.
What the archive holds depends on the run that wrote it, so ``python course.py`` trains it
once per JDK + pyspark pair (``train``): a JVM runs infra/archive_training.py, which touches
what the lessons use, and its archive replaces one a smaller run may have written first.

Set ``STREAMING_COURSE_CLASS_ARCHIVE=off`` to run without one.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import paths
from infra.environment import java_executable

SWITCH = "STREAMING_COURSE_CLASS_ARCHIVE"
# A pending archive with no writer noted yet may belong to a session that is still starting.
WRITING_SECONDS = 120
# The JVM says nothing about the archive: a mismatch only means a slower start.
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
# SWITCH=write:<file> makes a session's JVM write its archive to <file> (train() does so).
WRITE_TO = "write:"
# How long train() waits for the training JVM to finish writing after its Python exited.
WRITE_SECONDS = 120
# A dynamic archive's first four bytes (0xf00baba8, little-endian, as the JVM writes it on x86 and arm64).
DYNAMIC_ARCHIVE_MAGIC = bytes.fromhex("a8ab0bf0")


def archive_path() -> Path | None:
    """Where this JDK + pyspark pair's archive lives, or None without a Java or pyspark."""
    java = java_executable()
    if java is None:
        return None
    try:
        import pyspark
    except ImportError:
        return None
    java = os.path.realpath(java)
    # The archive records the class path, i.e. pyspark's jars folder, and the JDK build.
    key = "|".join(
        [
            java,
            str(os.stat(java).st_mtime_ns),
            pyspark.__version__,
            os.path.dirname(pyspark.__file__),
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return paths.user_cache_dir() / "jvm" / f"spark-{pyspark.__version__}-{digest}.jsa"


def java_options() -> tuple[list[str], Path | None]:
    """The driver JVM's options for the archive, and the pending file it will write (or None).

    With an archive: use it. Without: write one when the JVM exits; the caller then says which
    JVM that is with ``record_writer``, so a later session knows when the file is complete.
    """
    switch = os.environ.get(SWITCH, "")
    if switch.lower() in ("off", "0", "false", "no"):
        return [], None
    if switch.startswith(WRITE_TO):  # train(): this JVM writes a new archive there, whatever exists
        return [f"-XX:ArchiveClassesAtExit={switch[len(WRITE_TO) :]}", *QUIET], None
    archive = archive_path()
    if archive is None:
        return [], None
    promote_pending(archive)
    if archive.exists():
        return [f"-XX:SharedArchiveFile={archive}", *QUIET], None
    archive.parent.mkdir(parents=True, exist_ok=True)
    pending = archive.with_name(f"{archive.stem}.{os.getpid()}-{time.time_ns()}.pending")
    return [f"-XX:ArchiveClassesAtExit={pending}", *QUIET], pending


def record_writer(pending: Path, jvm_pid: int) -> None:
    """Note which JVM writes ``pending`` (it does so as it exits)."""
    writer_file(pending).write_text(str(jvm_pid))


def writer_file(pending: Path) -> Path:
    return pending.with_suffix(".writer")


def promote_pending(archive: Path) -> None:
    """Make a finished pending archive the archive, and clear away the rest.

    Finished: the JVM that wrote it has exited, the file starts with the archive's magic
    number and a JVM maps it. A pending file whose JVM still runs is left alone.
    """
    for pending in sorted(
        archive.parent.glob(f"{archive.stem}.*.pending"), key=os.path.getmtime, reverse=True
    ):
        writer = writer_file(pending)
        try:
            jvm_pid = int(writer.read_text())
        except (FileNotFoundError, ValueError):
            jvm_pid = None
        if jvm_pid is not None and running(jvm_pid):
            continue
        if jvm_pid is None and age(pending) < WRITING_SECONDS:
            continue  # its session may still be starting
        try:
            if not archive.exists() and complete(pending):
                os.replace(pending, archive)
        except FileNotFoundError:  # another session promoted or removed it first
            pass
        pending.unlink(missing_ok=True)
        writer.unlink(missing_ok=True)
    for writer in archive.parent.glob(
        f"{archive.stem}.*.writer"
    ):  # a JVM that exited and wrote nothing
        try:
            jvm_pid = int(writer.read_text())
        except (FileNotFoundError, ValueError):
            continue
        if not running(jvm_pid) and not writer.with_suffix(".pending").exists():
            writer.unlink(missing_ok=True)


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def complete(candidate: Path) -> bool:
    """True if ``candidate`` is a whole archive: the magic number, and a JVM that maps it and
    starts (a truncated archive makes the JVM die)."""
    try:
        with candidate.open("rb") as file:
            if file.read(4) != DYNAMIC_ARCHIVE_MAGIC:
                return False
    except OSError:
        return False
    java = java_executable()
    if java is None:
        return False
    with tempfile.TemporaryDirectory() as scratch:  # where a JVM that dies writes its hs_err file
        try:
            result = subprocess.run(
                [
                    java,
                    f"-XX:SharedArchiveFile={candidate}",
                    *QUIET,
                    "-XX:-CreateCoredumpOnCrash",
                    f"-XX:ErrorFile={scratch}/hs_err_%p.log",
                    "-version",
                ],
                capture_output=True,
                timeout=60,
                cwd=scratch,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    return result.returncode == 0


def trained_marker(archive: Path) -> Path:
    return archive.with_name(f"{archive.stem}.trained")


TRAINING = ("-m", "infra.archive_training")  # run with this Python from streaming_tutorial/


def train(workload: tuple[str, ...] = TRAINING, timeout: float = 600) -> str | None:
    """Write the archive from a training run and put it in place of any archive there.

    ``workload``: the Python arguments of a program that starts a Spark session, prints
    ``jvm-pid: <its JVM's pid>`` and exits 0 (infra/archive_training.py). Returns None when
    done, else why not (the lessons then start as before)."""
    archive = archive_path()
    if archive is None:
        return "no Java or no pyspark here"
    archive.parent.mkdir(parents=True, exist_ok=True)
    # Not named like a session's pending file: promote_pending() must leave it alone.
    pending = archive.with_name(f"{archive.stem}.training-{os.getpid()}.jsa-part")
    environment = {**os.environ, SWITCH: WRITE_TO + str(pending)}
    try:
        result = subprocess.run(
            [sys.executable, *workload],
            cwd=paths.LESSONS_DIR,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            return f"the training run failed: {(result.stderr.strip().splitlines() or ['no message'])[-1]}"
        jvm_pid = int(result.stdout.split("jvm-pid: ", 1)[1].split()[0])
        deadline = time.monotonic() + WRITE_SECONDS
        while (
            running(jvm_pid) and time.monotonic() < deadline
        ):  # the JVM writes the archive as it exits
            time.sleep(0.2)
        if running(jvm_pid) or not complete(pending):
            return "the training JVM wrote no usable archive"
        os.replace(pending, archive)  # JVMs running on the old archive keep their mapping of it
        trained_marker(archive).write_text(
            time.strftime("%Y-%m-%d %H:%M:%S") + "\n", encoding="utf-8"
        )
        return None
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as error:
        return f"the training run failed: {error}"
    finally:
        pending.unlink(missing_ok=True)


def ensure_trained(say=print) -> None:
    """Train the archive unless this JDK + pyspark pair's archive was trained already."""
    archive = archive_path()
    if archive is None or os.environ.get(SWITCH, "").lower() in ("off", "0", "false", "no"):
        return
    if archive.exists() and trained_marker(archive).exists():
        return
    say(
        "Writing the JVM's class archive from a training run, so that lessons start faster (once, about a minute) ..."
    )
    problem = train()
    if problem:
        say(
            f"  skipped: {problem}. Lessons run as they are, only their JVMs start a little slower."
        )


if __name__ == "__main__":  # python -m infra.class_archive [ensure|train]
    if sys.argv[1:] == ["train"]:
        problem = train()
        print(problem or f"trained: {archive_path()}")
        sys.exit(1 if problem else 0)
    ensure_trained()
