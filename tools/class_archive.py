"""Train the driver JVM's class-data archive: Spark's classes loaded from a file, not from jars.

A Spark driver JVM loads some 15,000 classes from pyspark's jars at every start. The JVM can
keep what it loaded in an archive (class-data sharing, JDK 13+): a training run writes one as
it exits (``-XX:ArchiveClassesAtExit``), and later sessions map it (``-XX:SharedArchiveFile``,
see ``infra/jvm.py``). Measured on 2 cores, a session with Kafka and Delta plus one streaming
query: 14 JVM CPU-seconds without, 7-8 with; the session is ready in 3.5 s instead of 6
(docs/BENCHMARKS.md).

Care is needed, because a JVM given a *truncated* archive dies at start (a fatal error, not a
fallback). So the training JVM writes to a file of its own, and only once that JVM has exited
and a throw-away ``java -version`` has mapped the file without error is it renamed into place.
An archive that does not fit (another JDK, another pyspark) is ignored by the JVM, which then
loads classes as usual; it is keyed by both, so it is trained once for the new pair.

Training takes about a minute, so it runs where it pays: ``python course.py test`` trains it
before the suite (hundreds of JVM starts), ``python course.py tour`` after the last lesson (so
the next run starts faster). A lesson never waits for it.

    python -m tools.class_archive          # train unless trained for this JDK + pyspark
    python -m tools.class_archive train    # train again
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tools  # noqa: F401  (puts streaming_tutorial/ on sys.path)
from common import paths
from infra.environment import java_executable
from infra.jvm import OFF, QUIET, SWITCH, WRITE_TO, archive_path
from infra.processes import alive

# How long train() waits for the training JVM to finish writing after its Python exited.
WRITE_SECONDS = 120
# A dynamic archive's first four bytes (0xf00baba8, little-endian, as the JVM writes it on
# x86 and arm64).
DYNAMIC_ARCHIVE_MAGIC = bytes.fromhex("a8ab0bf0")


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


TRAINING = ("-m", "tools.archive_training")  # run with this Python from the project root


def train(workload: tuple[str, ...] = TRAINING, timeout: float = 600) -> str | None:
    """Write the archive from a training run and put it in place of any archive there.

    ``workload``: the Python arguments of a program that starts a Spark session, prints
    ``jvm-pid: <its JVM's pid>`` and exits 0 (tools/archive_training.py). Returns None when
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
            cwd=paths.PROJECT_ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            last_line = (result.stderr.strip().splitlines() or ["no message"])[-1]
            return f"the training run failed: {last_line}"
        jvm_pid = int(result.stdout.split("jvm-pid: ", 1)[1].split()[0])
        deadline = time.monotonic() + WRITE_SECONDS
        while (
            alive(jvm_pid) and time.monotonic() < deadline
        ):  # the JVM writes the archive as it exits
            time.sleep(0.2)
        if alive(jvm_pid) or not complete(pending):
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
    if archive is None or os.environ.get(SWITCH, "").lower() in OFF:
        return
    if archive.exists() and trained_marker(archive).exists():
        return
    say(
        "Writing the JVM's class archive from a training run, so that lessons start faster (once, "
        "about a minute) ..."
    )
    problem = train()
    if problem:
        say(
            f"  skipped: {problem}. Lessons run as they are, only their JVMs start a little slower."
        )


if __name__ == "__main__":  # python -m tools.class_archive [train]
    if sys.argv[1:] == ["train"]:
        problem = train()
        print(problem or f"trained: {archive_path()}")
        sys.exit(1 if problem else 0)
    ensure_trained()
