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
Set ``STREAMING_COURSE_CLASS_ARCHIVE=off`` to run without one.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import time
from pathlib import Path

from . import paths
from .environment import java_executable

SWITCH = "STREAMING_COURSE_CLASS_ARCHIVE"
# A pending archive with no writer noted yet may belong to a session that is still starting.
WRITING_SECONDS = 120
# The JVM says nothing about the archive: a mismatch only means a slower start.
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
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
    key = "|".join([java, str(os.stat(java).st_mtime_ns), pyspark.__version__, os.path.dirname(pyspark.__file__)])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return paths.user_cache_dir() / "jvm" / f"spark-{pyspark.__version__}-{digest}.jsa"


def java_options() -> tuple[list[str], Path | None]:
    """The driver JVM's options for the archive, and the pending file it will write (or None).

    With an archive: use it. Without: write one when the JVM exits; the caller then says which
    JVM that is with ``record_writer``, so a later session knows when the file is complete.
    """
    if os.environ.get(SWITCH, "").lower() in ("off", "0", "false", "no"):
        return [], None
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
    for pending in sorted(archive.parent.glob(f"{archive.stem}.*.pending"), key=os.path.getmtime, reverse=True):
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
    for writer in archive.parent.glob(f"{archive.stem}.*.writer"):  # a JVM that exited and wrote nothing
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
            result = subprocess.run([java, f"-XX:SharedArchiveFile={candidate}", *QUIET, "-XX:-CreateCoredumpOnCrash",
                                     f"-XX:ErrorFile={scratch}/hs_err_%p.log", "-version"],
                                    capture_output=True, timeout=60, cwd=scratch)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return result.returncode == 0
