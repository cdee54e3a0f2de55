"""Checks of the machine: Python, Java, pyspark and writable folders, each with advice on failure.

Standard library only, so ``course.py`` and ``initial_setup.py`` can run these
checks before pyspark is installed.
"""

from __future__ import annotations

import errno
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from infra.errors import OTHER_FOLDER, CourseError

MIN_PYTHON = (3, 11)
MIN_JAVA = 17
PYSPARK_VERSION = "4.2.0"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str  # the version found, or the advice when not ok


def java_executable() -> str | None:
    """The java Spark will use: $JAVA_HOME/bin/java when JAVA_HOME is set, else the PATH's."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        # Spark launches $JAVA_HOME/bin/java and never falls back to the PATH.
        candidate = Path(java_home) / "bin" / "java"
        return str(candidate) if candidate.exists() else None
    return shutil.which("java")


# What macOS's /usr/bin/java stub prints when no JDK is installed (it exits non-zero).
MACOS_JAVA_STUB_MESSAGES = ("Unable to locate a Java Runtime", "No Java runtime present")


def java_version_output(java: str) -> str | None:
    """What `java -version` prints (it writes to stderr), or None when it cannot run."""
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stderr + result.stdout


def parse_java_major(output: str) -> int | None:
    # `java -version` prints e.g. 'openjdk version "17.0.15" 2025-04-15' (or "1.8.0_402").
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def install_jdk_advice(platform: str = sys.platform) -> str:
    """How to install a JDK and make it the one Spark finds, for this platform."""
    if platform == "darwin":
        return (
            f"Install one with Homebrew: 'brew install openjdk@{MIN_JAVA}'. Homebrew does not put "
            "it on the PATH, so also tell your shell where it is: add "
            f'export JAVA_HOME="$(brew --prefix openjdk@{MIN_JAVA})'
            '/libexec/openjdk.jdk/Contents/Home" and '
            'export PATH="$JAVA_HOME/bin:$PATH" to ~/.zshrc and open a new terminal (or, for every '
            f"program at once, 'sudo ln -sfn \"$(brew --prefix openjdk@{MIN_JAVA})"
            '/libexec/openjdk.jdk" '
            f"/Library/Java/JavaVirtualMachines/openjdk-{MIN_JAVA}.jdk'). "
            f"Then check that 'java -version' says {MIN_JAVA}."
        )
    return (
        "Install one from your package manager "
        f"(e.g. 'sudo apt install openjdk-{MIN_JAVA}-jdk-headless' on Debian, Ubuntu and WSL2) "
        "and check that 'java -version' works, or set JAVA_HOME to the JDK folder."
    )


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] >= MIN_PYTHON:
        return Check("Python", True, version)
    return Check(
        "Python",
        False,
        f"Python {version} is too old: the course needs Python "
        f"{'.'.join(map(str, MIN_PYTHON))} or newer (pyspark {PYSPARK_VERSION} does not run on "
        "older versions). Install a newer Python and run the command again with it.",
    )


def check_java() -> Check:
    java = java_executable()
    java_home = os.environ.get("JAVA_HOME")
    if java is None and java_home:
        return Check(
            "Java",
            False,
            f"JAVA_HOME is set to {java_home}, but there is no bin/java in it, and Spark starts "
            "Java from JAVA_HOME. Point JAVA_HOME at a JDK 17+ folder (the one that contains "
            "bin/java), or unset it to use the java on your PATH.",
        )
    if java is None:
        return Check(
            "Java",
            False,
            f"Java was not found. Spark runs on the JVM and needs Java {MIN_JAVA} or newer. "
            + install_jdk_advice(),
        )
    output = java_version_output(java)
    stub_line = next(
        (
            line.strip()
            for line in (output or "").splitlines()
            if any(stub in line for stub in MACOS_JAVA_STUB_MESSAGES)
        ),
        None,
    )
    if stub_line:
        return Check(
            "Java",
            False,
            f"No Java is installed: {java} is only macOS's placeholder for one "
            f'(it says "{stub_line}"). '
            f"Spark needs a JDK {MIN_JAVA} or newer. " + install_jdk_advice("darwin"),
        )
    major = parse_java_major(output or "")
    if major is None:
        return Check(
            "Java",
            False,
            f"'{java} -version' did not report a version. Check that the JDK at {java} is "
            "installed correctly, or set JAVA_HOME to a working JDK.",
        )
    if major < MIN_JAVA:
        return Check(
            "Java",
            False,
            f"Java {major} is too old ({java}): Spark 4 needs Java {MIN_JAVA} or newer. Install "
            f"OpenJDK {MIN_JAVA} or 21 and put it first on the PATH, or set JAVA_HOME to it.",
        )
    return Check("Java", True, f"{major} ({java})")


def check_pyspark() -> Check:
    try:
        found = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return Check(
            "pyspark",
            False,
            "pyspark is not installed in this Python. Run 'python course.py tour' once (it creates "
            ".venv with everything pinned), then activate it with 'source .venv/bin/activate'; or "
            "install the pins yourself with 'pip install -r requirements.txt'.",
        )
    if found != PYSPARK_VERSION:
        return Check(
            "pyspark",
            False,
            f"pyspark {found} is installed, but the course is pinned to {PYSPARK_VERSION} "
            "(the Kafka and Delta jars must match it). "
            "Run 'pip install -r requirements.txt' in this environment.",
        )
    return Check("pyspark", True, found)


def run_checks() -> list[Check]:
    return [check_python(), check_java(), check_pyspark()]


def require_java() -> None:
    """Raise a CourseError with advice unless a suitable Java is available."""
    check = check_java()
    if not check.ok:
        raise CourseError(check.detail)


# Below this much free space a lesson does not start: each micro-batch writes a few small files
# to its checkpoint, and Spark's shuffle and output files need more; a full disk stops the query.
MIN_FREE_BYTES = 16 * 1024 * 1024


def folder_problem(folder: Path, what: str) -> str | None:
    """Why Spark could not write into ``folder`` (created on demand), as advice; None when it can.

    Checked without writing anything: the nearest folder on the path that exists must be a
    folder, writable by this user (``os.access``, which also reports a read-only file system
    and honours root's rights), on a disk with at least ``MIN_FREE_BYTES`` free.
    """
    existing = Path(folder).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    where = f"{what} {folder}"
    if not existing.is_dir():
        return (
            f"The {where} cannot be created: {existing} is a file, not a folder. Move that file "
            f"away, or {OTHER_FOLDER}."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        if _read_only(existing):
            return (
                f"The {where} is on a read-only file system ({existing} is mounted read-only). "
                f"Remount it read-write, or {OTHER_FOLDER}."
            )
        return (
            f"You may not write to {existing}, so Spark cannot write the {where}. Make it writable "
            "for your user ('ls -ld' shows its owner; 'sudo chown -R $USER FOLDER' if an earlier "
            f"run with sudo created it), or {OTHER_FOLDER}."
        )
    free = shutil.disk_usage(existing).free
    if free < MIN_FREE_BYTES:
        return (
            f"The disk that holds the {where} is full ({free // 1024} KB free): Spark would stop "
            "the query at its first write. Free some space on that disk ('df -h' shows how much is "
            "left), then run the lesson again."
        )
    return None


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError as error:
        return error.errno == errno.EROFS


def require_writable(folders: dict[str, Path]) -> None:
    """Raise a CourseError with advice unless Spark can write every folder ({what: folder})."""
    for what, folder in folders.items():
        problem = folder_problem(folder, what)
        if problem:
            raise CourseError(problem)
