"""The course's two commands: take the tour, or run the tests.

    python course.py tour     # set up, generate sample data, run every lesson in order
    python course.py test     # run the test suite (the same command CI runs)

Needs only Python 3.11+ and Java 17+. The first run creates ``.venv/`` next to
this file and installs the pinned requirements into it (a few minutes, once);
later runs reuse it. Spark's connector jars (Kafka, Delta Lake, SQLite JDBC) and
the local Kafka broker's jars come from Maven Central on first use and are cached.

Other commands:
    python course.py install   # only create .venv and install requirements
    python course.py tour --from 05 --to 07   # part of the tour
    python course.py test -k windowing         # extra arguments go to pytest
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import textwrap
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV_DIR = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements.txt"
STAMP = VENV_DIR / ".requirements.sha256"
LESSONS_DIR = ROOT / "streaming_tutorial"

sys.path.insert(0, str(LESSONS_DIR))
# These helpers use the standard library only, so they work before .venv exists.
from common import config  # noqa: E402
from common.environment import check_java, check_python  # noqa: E402
from common.simulators import port_open  # noqa: E402

FIRST_KAFKA_LESSON = "08"


def fail(message: str) -> None:
    print(textwrap.fill(message, width=78), file=sys.stderr)
    sys.exit(1)


def venv_python() -> Path:
    return VENV_DIR / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_environment() -> Path:
    """Check Python and Java, then make sure .venv has exactly the pinned requirements."""
    for check in (check_python(), check_java()):
        if not check.ok:
            fail(check.detail)
    python = venv_python()
    if not python.exists():
        print(f"Creating the course's virtual environment in {VENV_DIR.name}/ ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV_DIR)
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if not STAMP.exists() or STAMP.read_text().strip() != wanted:
        print("Installing the pinned requirements (pyspark is large: the first time takes a few minutes) ...", flush=True)
        result = subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)])
        if result.returncode != 0:
            fail(
                "pip could not install requirements.txt into .venv. Read pip's message above: "
                "usually the network could not reach the Python package index, or this Python "
                "lacks a compiler for a package. Fix that and run the command again; nothing "
                "else needs cleaning up."
            )
        STAMP.write_text(wanted)
    return python


def needs_local_broker() -> bool:
    """True unless KAFKA_BOOTSTRAP_SERVERS names a cluster or a broker already listens locally."""
    return not os.environ.get(config.KAFKA_BOOTSTRAP_ENV) and not port_open(
        config.LOCAL_KAFKA_HOST, config.LOCAL_KAFKA_PORT
    )


def lesson_scripts() -> list[Path]:
    return sorted(path for path in LESSONS_DIR.glob("[0-9][0-9]_*.py"))


def run_tour(python: Path, first: str, last: str) -> int:
    """Setup and sample data, then every lesson in order, each with --reset so a tour repeats exactly."""
    steps = [("setup", [str(python), str(ROOT / "initial_setup.py"), "--sample-data"])]
    for script in lesson_scripts():
        if first <= script.name[:2] <= last:
            steps.append((script.stem, [str(python), str(script), "--reset"]))
    summary = []
    broker_started_here = False
    for name, command in steps:
        if name[:2] >= FIRST_KAFKA_LESSON and not broker_started_here and needs_local_broker():
            # One broker for all Kafka lessons instead of each starting and stopping its own.
            print(f"\nStarting the course's Kafka broker for lessons {FIRST_KAFKA_LESSON}+ (python local_kafka.py start) ...", flush=True)
            if subprocess.run([str(python), str(ROOT / "local_kafka.py"), "start"], cwd=ROOT).returncode != 0:
                summary.append(("local_kafka.py start", 1, 0.0))
                break
            broker_started_here = True
        print(f"\n{'#' * 78}\n# {name}: {' '.join(Path(part).name if os.sep in part else part for part in command[1:])}\n{'#' * 78}", flush=True)
        started = time.monotonic()
        try:
            code = subprocess.run(command, cwd=ROOT).returncode
        except KeyboardInterrupt:
            print("\nTour stopped with Ctrl-C.", file=sys.stderr)
            return 130
        summary.append((name, code, time.monotonic() - started))
        if code != 0:
            break
    if broker_started_here:
        subprocess.run([str(python), str(ROOT / "local_kafka.py"), "stop"], cwd=ROOT)
    print(f"\n{'#' * 78}\n# Tour summary\n{'#' * 78}")
    for name, code, seconds in summary:
        print(f"  {'ok  ' if code == 0 else 'FAIL'} {name:<28} {seconds:6.1f} s")
    failed = [name for name, code, _ in summary if code != 0]
    if failed:
        print(f"\n{failed[0]} failed: read its message above, fix it, then resume with "
              f"'python course.py tour --from {failed[0][:2]}'.")
        return 1
    print("\nEvery lesson ran. Next: read a lesson's docstring and run it on its own, e.g.\n"
          "  .venv/bin/python streaming_tutorial/07_watermarking.py")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the course's tour or its tests.")
    sub = parser.add_subparsers(dest="command", required=True)
    tour = sub.add_parser("tour", help="set up, make sample data, run every lesson in order")
    tour.add_argument("--from", dest="first", default="00", metavar="NN", help="first lesson (default 00)")
    tour.add_argument("--to", dest="last", default="99", metavar="NN", help="last lesson (default: the last)")
    sub.add_parser("test", help="run the test suite (extra arguments go to pytest)")
    sub.add_parser("install", help="only create .venv and install the requirements")
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "test":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")

    python = ensure_environment()
    if args.command == "install":
        print(f"Ready: activate with 'source {VENV_DIR.name}/bin/activate'.")
        return 0
    if args.command == "tour":
        return run_tour(python, args.first, args.last)
    return subprocess.run([str(python), "-m", "pytest", *extra], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
