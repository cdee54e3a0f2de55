"""The course's two commands: take the tour, or run the tests.

    python course.py tour     # set up, generate sample data, run every lesson in order
    python course.py test     # run the test suite

Needs only Python 3.11+ and Java 17+, on Linux or macOS; on Windows, inside WSL2 (the
README says how). The first run creates ``.venv/`` next to this file and installs the
pinned requirements into it (a few minutes, once); later runs reuse it. The JVM's class
archive (a minute, once) is trained after the tour and before the tests, never before a
lesson. Spark's connector jars (Kafka, Delta Lake, SQLite JDBC) and the local Kafka broker's
jars come from Maven Central on first use and are cached.

Then practise, each answer checked micro-batch by micro-batch:
    python course.py exercises start   # copy the exercises into my_exercises/
    python course.py exercises watch   # check the current exercise each time you save it

Other commands:
    python course.py install   # only create .venv and install requirements
    python course.py cluster start|status|stop   # a Spark standalone cluster on 127.0.0.1
                                                 # (README: Beyond one machine)
    python course.py checkpoint checkpoints/11_delta_lake   # what a checkpoint holds, what is
                                                            # damaged and the safe fix (reads only)
    python course.py tour --from 05 --to 07   # part of the tour
    python course.py tour --again   # run every lesson twice: fresh, then as a learner coming
                                    # back (CI does)
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV_DIR = ROOT / ".venv"
REQUIREMENTS = ROOT / "requirements.txt"
STAMP = VENV_DIR / ".requirements.sha256"
LESSONS_DIR = ROOT / "streaming_tutorial"

sys.path.insert(0, str(LESSONS_DIR))
# These helpers use the standard library only, so they work before .venv exists.
from common import config  # noqa: E402
from infra.environment import check_java, check_python  # noqa: E402
from infra.simulators import port_open  # noqa: E402

FIRST_KAFKA_LESSON = 8  # lessons 08 and later need a Kafka broker
BROKER_STEP = "Kafka broker"
# Run with the venv's python from streaming_tutorial/: exit 0 when a Kafka broker (not just
# any program) answers at argv[1], 3 when nothing Kafka-like does.
KAFKA_PROBE = (
    "import sys; from infra.kafka import answers; sys.exit(0 if answers(sys.argv[1]) else 3)"
)


class StepFailed(Exception):
    """A tour step that could not run; the message (maybe empty) is the advice to print."""


@dataclass(frozen=True)
class Step:
    name: str  # "setup", BROKER_STEP, or a lesson's file stem
    command: tuple[str, ...] = ()  # empty for the broker step, which course.py does itself
    lesson: int | None = None
    second_run: bool = False  # the run of a learner coming back: same checkpoints, no --reset


def fail(message: str) -> None:
    print(textwrap.fill(message, width=78), file=sys.stderr)
    sys.exit(1)


def platform_problem() -> str | None:
    """Advice when this platform cannot run the course (native Windows), else None."""
    if os.name != "nt":
        return None
    return (
        "Native Windows is not supported: Spark needs Hadoop's winutils.exe there, and the course "
        "starts and stops its simulators and Kafka broker the POSIX way. Use WSL2 instead: in "
        "PowerShell run 'wsl --install -d Ubuntu', open the Ubuntu terminal, install Python and "
        "Java there ('sudo apt install python3 python3-venv openjdk-17-jdk-headless'), clone the "
        "course into your Linux home folder (not under /mnt/c) and run 'python3 course.py tour' in "
        "it. The README's 'Supported platforms' section has the details."
    )


def venv_python() -> Path:
    return VENV_DIR / "bin" / "python"


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
        print(
            "Installing the pinned requirements (pyspark is large: the first time takes a few "
            "minutes) ...",
            flush=True,
        )
        result = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)]
        )
        if result.returncode != 0:
            fail(
                "pip could not install requirements.txt into .venv. Read pip's message above: "
                "usually the network could not reach the Python package index, or this Python "
                "lacks a compiler for a package. Fix that and run the command again; nothing "
                "else needs cleaning up."
            )
        STAMP.write_text(wanted)
    return python


def train_class_archive(python: Path) -> None:
    """Once per Java + pyspark pair: a Spark run whose JVM keeps the classes it loaded in an
    archive that later sessions map instead of loading them again (about a third less CPU for a
    Delta lesson on 2 cores; tools/class_archive.py). Quick when already done.

    It takes about a minute, so it runs where it pays: before the test suite, and after the
    tour. A lesson never waits for it; one that starts before it exists loads its classes as usual.
    """
    subprocess.run([str(python), "-m", "tools.class_archive"], cwd=ROOT)


def lesson_scripts() -> list[Path]:
    return sorted(LESSONS_DIR.glob("[0-9][0-9]_*.py"))


def plan_tour(python: Path, first: int, last: int, *, again: bool = False) -> list[Step]:
    """The tour's steps: setup, then lessons first..last, with the broker step just before the
    first Kafka lesson.

    Each lesson's first run uses --reset, so a tour repeats exactly. With ``again`` a second
    run follows at once, without --reset: the learner who comes back to a lesson.
    """
    steps = [Step("setup", (str(python), str(ROOT / "initial_setup.py"), "--sample-data"))]
    for script in lesson_scripts():
        number = int(script.name[:2])
        if not first <= number <= last:
            continue
        if number >= FIRST_KAFKA_LESSON and not any(step.name == BROKER_STEP for step in steps):
            # One broker for all Kafka lessons instead of each starting and stopping its own.
            steps.append(Step(BROKER_STEP))
        steps.append(Step(script.stem, (str(python), str(script), "--reset"), number))
        if again:
            steps.append(Step(script.stem, (str(python), str(script)), number, second_run=True))
    return steps


def local_kafka_port() -> int:
    """The course broker's port, read when called (LOCAL_KAFKA_PORT, as local_kafka.py and the
    lessons read it)."""
    return int(os.environ.get("LOCAL_KAFKA_PORT", config.LOCAL_KAFKA_PORT))


def kafka_answers(python: Path, bootstrap: str) -> bool:
    """Ask the venv's kafka-python whether a Kafka broker answers at ``bootstrap``."""
    result = subprocess.run(
        [str(python), "-c", KAFKA_PROBE, bootstrap],
        cwd=LESSONS_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode not in (0, 3):
        raise StepFailed(
            f"Could not check whether Kafka answers at {bootstrap}: {result.stderr.strip()[-600:]}"
        )
    return result.returncode == 0


def port_holder(port: int) -> str | None:
    """'python3 (PID 1234)' for the program listening on ``port``, when lsof or ss can tell."""
    for command in (
        ["lsof", "-nP", f"-iTCP:{port}", "-sTCP:LISTEN", "-Fpc"],
        ["ss", "-Hltnp", f"sport = :{port}"],
    ):
        try:
            output = subprocess.run(command, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        if command[0] == "lsof":
            fields = {line[0]: line[1:] for line in output.splitlines() if line[:1] in ("p", "c")}
            if "p" in fields:
                return f"{fields.get('c', 'a program')} (PID {fields['p']})"
        elif 'users:(("' in output:
            name, _, rest = output.split('users:(("', 1)[1].partition('",pid=')
            return f"{name} (PID {rest.split(',', 1)[0]})"
    return None


def port_taken_advice(port: int) -> str:
    host = config.LOCAL_KAFKA_HOST
    holder = port_holder(port)
    who = f"{holder}, which" if holder else f"a program (find it with 'lsof -i :{port}') that"
    return (
        f"Port {port} on {host}, where the Kafka lessons look for the course's broker, is held by "
        f"{who} does not answer as a Kafka broker. The lessons cannot use it, and the course "
        f"cannot start its own broker there. Stop that program and run the tour again; or give the "
        f"course's broker another port: LOCAL_KAFKA_PORT={port + 10000} python course.py tour "
        f"--from {FIRST_KAFKA_LESSON:02d} (the lessons and local_kafka.py read the same variable; "
        f"keep it set when you run them). To use a Kafka cluster you already run, set "
        f"{config.KAFKA_BOOTSTRAP_ENV}=host:port instead."
    )


def kafka_for_tour(python: Path) -> bool:
    """Make sure the Kafka lessons find a broker; True when the tour started the course's own
    (and stops it)."""
    configured = os.environ.get(config.KAFKA_BOOTSTRAP_ENV, "").strip()
    if configured:
        print(
            f"Lessons {FIRST_KAFKA_LESSON:02d}+ use the Kafka cluster in "
            f"{config.KAFKA_BOOTSTRAP_ENV}={configured}."
        )
        return False
    port = local_kafka_port()
    bootstrap = f"{config.LOCAL_KAFKA_HOST}:{port}"
    if port_open(config.LOCAL_KAFKA_HOST, port):
        # Something listens there: use it only if it really is Kafka.
        if kafka_answers(python, bootstrap):
            print(
                f"A Kafka broker already answers at {bootstrap}: lessons {FIRST_KAFKA_LESSON:02d}+ "
                f"use it."
            )
            return False
        raise StepFailed(port_taken_advice(port))
    print(
        f"Starting the course's Kafka broker for lessons {FIRST_KAFKA_LESSON:02d}+ "
        "(python local_kafka.py start) ...",
        flush=True,
    )
    if (
        subprocess.run([str(python), str(ROOT / "local_kafka.py"), "start"], cwd=ROOT).returncode
        != 0
    ):
        raise StepFailed("")  # local_kafka.py has printed its advice
    return True


def banner(step: Step) -> str:
    shown = " ".join(Path(part).name if os.sep in part else part for part in step.command[1:])
    label = (
        f"{step.name} (again, without --reset, as a learner coming back)"
        if step.second_run
        else step.name
    )
    return f"\n{'#' * 78}\n# {label}: {shown}\n{'#' * 78}"


def run_tour(python: Path, first: int, last: int, *, again: bool = False) -> int:
    """Run the planned steps in order, stop at the first failure, print a summary."""
    results: list[tuple[Step, int, float]] = []
    broker_started_here = False
    try:
        for step in plan_tour(python, first, last, again=again):
            started = time.monotonic()
            if step.name == BROKER_STEP:
                print(f"\n{'#' * 78}\n# {BROKER_STEP}\n{'#' * 78}", flush=True)
                try:
                    broker_started_here = kafka_for_tour(python)
                    code = 0
                except StepFailed as problem:
                    if str(problem):
                        print("\n" + textwrap.fill(str(problem), width=78), file=sys.stderr)
                    code = 1
            else:
                print(banner(step), flush=True)
                code = subprocess.run(list(step.command), cwd=ROOT).returncode
            results.append((step, code, time.monotonic() - started))
            if code != 0:
                break
    except KeyboardInterrupt:
        print("\nTour stopped with Ctrl-C.", file=sys.stderr)
        return 130
    finally:
        if broker_started_here:
            subprocess.run([str(python), str(ROOT / "local_kafka.py"), "stop"], cwd=ROOT)
    print(summary(results, again))
    failed = next(((step, code) for step, code, _ in results if code != 0), None)
    if failed:
        step = failed[0]
        resume = (
            step.lesson
            if step.lesson is not None
            else (FIRST_KAFKA_LESSON if step.name == BROKER_STEP else first)
        )
        which = " (its second run, without --reset)" if step.second_run else ""
        print(
            f"\n{step.name}{which} failed: read its message above, fix it, then resume with "
            f"'python course.py tour --from {resume:02d}{' --again' if again else ''}'."
        )
        return 1
    print("\nEvery lesson ran.")
    return 0


# The tour's last lines: what to do once it has run (printed after the class archive's training,
# so nothing comes after them).
NEXT_STEPS = """
Next: practise. Write the queries yourself, each checked batch by batch:
  python course.py exercises start    # copy the exercises into my_exercises/
  python course.py exercises watch    # check the current one each time you save it
Or read a lesson's docstring and run it on its own, e.g.
  .venv/bin/python streaming_tutorial/07_watermarking.py"""


def summary(results: list[tuple[Step, int, float]], again: bool) -> str:
    """One line per step; with --again, a lesson's two runs side by side."""

    def cell(code: int, seconds: float) -> str:
        return f"{'ok  ' if code == 0 else 'FAIL'} {seconds:6.1f} s"

    header = f"  {'step':<28} {'first run':<13}" + ("   second run (no --reset)" if again else "")
    lines = [f"\n{'#' * 78}\n# Tour summary\n{'#' * 78}", header]
    rows: dict[str, list[str]] = {}
    for step, code, seconds in results:
        rows.setdefault(step.name, []).append(cell(code, seconds))
    for name, cells in rows.items():
        lines.append(f"  {name:<28} " + "   ".join(cells))
    return "\n".join(lines)


def lesson_number(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 99:
        raise argparse.ArgumentTypeError(f"a lesson number such as 05, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    problem = platform_problem()
    if problem:
        fail(problem)
    parser = argparse.ArgumentParser(
        description="Run the course's tour or its tests, or practise.",
        epilog="After the tour, practise: python course.py exercises start, then "
        "python course.py exercises watch (python course.py exercises --help).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    tour = sub.add_parser("tour", help="set up, make sample data, run every lesson in order")
    tour.add_argument(
        "--from",
        dest="first",
        type=lesson_number,
        default=0,
        metavar="NN",
        help="first lesson (default 00)",
    )
    tour.add_argument(
        "--to",
        dest="last",
        type=lesson_number,
        default=99,
        metavar="NN",
        help="last lesson (default: the last)",
    )
    tour.add_argument(
        "--again",
        action="store_true",
        help="run each lesson a second time right after the first, without --reset, "
        "as a learner coming back would (both runs must succeed)",
    )
    sub.add_parser("test", help="run the test suite (extra arguments go to pytest)")
    sub.add_parser("install", help="only create .venv and install the requirements")
    sub.add_parser(
        "exercises",
        add_help=False,
        help="practise: begin with python course.py exercises start; then "
        "list|check|watch|hint|solution (python course.py exercises --help)",
    )
    sub.add_parser(
        "cluster",
        add_help=False,
        help="start|stop|status a Spark standalone cluster on this machine "
        "(python course.py cluster start --help)",
    )
    sub.add_parser(
        "checkpoint",
        add_help=False,
        help="show what a query's checkpoint holds, what is damaged and the safe fix "
        "(python course.py checkpoint --help)",
    )
    args, extra = parser.parse_known_args(argv)
    if extra and args.command not in ("test", "cluster", "exercises", "checkpoint"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")

    python = ensure_environment()
    if args.command == "install":
        print(f"Ready: activate with 'source {VENV_DIR.name}/bin/activate'.")
        return 0
    if args.command == "tour":
        code = run_tour(python, args.first, args.last, again=args.again)
        if code != 130:  # not after Ctrl-C
            train_class_archive(python)
        if code == 0:
            print(NEXT_STEPS)
        return code
    if args.command == "exercises":
        return subprocess.run([str(python), "-m", "tools.exercises", *extra], cwd=ROOT).returncode
    if args.command == "cluster":
        return subprocess.run([str(python), "-m", "tools.cluster", *extra], cwd=ROOT).returncode
    if args.command == "checkpoint":
        # Run where the learner is, so a relative DIR means what it says; the module lives in
        # streaming_tutorial/ (lesson 16 uses it too).
        search_path = os.pathsep.join(
            filter(None, [str(LESSONS_DIR), os.environ.get("PYTHONPATH")])
        )
        command = [str(python), "-m", "teaching.inspect_checkpoint", *extra]
        return subprocess.run(command, env={**os.environ, "PYTHONPATH": search_path}).returncode
    train_class_archive(python)
    return subprocess.run([str(python), "-m", "pytest", *extra], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
