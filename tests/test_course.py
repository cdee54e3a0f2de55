"""course.py and the promises the README makes: the tour's plan, its Kafka step, its second
run, the platforms, and the lesson contract every lesson and tool keeps.

No Spark session and no JVM: files are read, scripts run with --help, and the tour's
steps are planned and run with subprocess.run replaced by a recorder.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import course
from conftest import ROOT

LESSONS = sorted((ROOT / "streaming_tutorial").glob("[0-9][0-9]_*.py"))
SIMULATORS = sorted(p for p in (ROOT / "data_generators").glob("*.py") if p.name != "__init__.py")
SECTIONS = ("What you'll learn", "Run", "What you'll see")
PYTHON = Path("/venv/bin/python")  # only ever printed or recorded, never run


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_lessons_are_numbered_without_gaps():
    numbers = [int(path.name[:2]) for path in LESSONS]
    assert numbers == list(range(len(numbers))) and len(numbers) >= 8


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_lesson_docstring_has_every_section_and_names_itself(lesson):
    text = docstring(lesson)
    for section in SECTIONS:
        assert re.search(rf"^{re.escape(section)}\s*$", text, re.MULTILINE), (
            f"{lesson.name}: no '{section}' section"
        )
    run_section = text.split("Run", 1)[1].split("What you'll see", 1)[0]
    assert f"python streaming_tutorial/{lesson.name}" in run_section


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_lesson_follows_the_skeleton(lesson):
    source = lesson.read_text(encoding="utf-8")
    tree = ast.parse(source)
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    # The shape: docstring, constants, the query's functions, then main() reading as the pipeline.
    assert functions and functions[-1] == "main", (
        f"{lesson.name}: main() should come last, after the query"
    )
    assert source.rstrip().endswith("run_lesson(main)"), (
        f"{lesson.name}: end with the __main__ guard"
    )
    assert "import *" not in source


@pytest.mark.parametrize("script", LESSONS + SIMULATORS, ids=lambda p: p.stem)
def test_help_works_from_another_directory_and_lessons_take_the_common_flags(script, tmp_path):
    result = subprocess.run(
        [sys.executable, str(script), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout
    if script in LESSONS:
        for flag in ("--duration", "--master", "--checkpoint-dir", "--reset"):
            assert flag in result.stdout, f"{script.name} lacks {flag}"


def test_readme_indexes_every_lesson_and_simulator():
    text = readme()
    for path in LESSONS + SIMULATORS:
        assert path.name in text, f"README does not mention {path.name}"


def test_quick_reference_links_every_lesson():
    text = (ROOT / "QUICK_REFERENCE.md").read_text(encoding="utf-8")
    for lesson in LESSONS:
        assert f"streaming_tutorial/{lesson.name}" in text, (
            f"QUICK_REFERENCE does not link {lesson.name}"
        )


def quick_start_commands() -> list[str]:
    section = readme().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:bash|sh)?\n(.*?)```", section, re.DOTALL)
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_quick_start_is_exactly_two_commands():
    assert quick_start_commands() == ["python course.py tour", "python course.py test"]


def ci_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return [
        line.strip()
        for line in lines
        if line.strip() and not line.lstrip().startswith(("#", "set ", "cd "))
    ]


def test_ci_runs_the_readme_test_command_then_the_slow_lanes_then_the_tour_twice_per_lesson():
    tour, test = quick_start_commands()
    as_ci = [re.sub(r"^python ", "python3 ", command) for command in (test, tour)]
    lanes = f'{as_ci[0]} -m "crash or mistakes or mutants_sample"'
    assert ci_commands() == [as_ci[0], lanes, f"{as_ci[1]} --again"]
    assert "set -euo pipefail" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def collected(*args: str, paths: tuple[str, ...] = ("tests/hardening",)) -> list[str]:
    """The test ids pytest (with pytest.ini) selects in ``paths`` for ``args``, without running
    them."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-n",
            "0",
            *args,
            *paths,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_the_crash_lane_runs_only_when_an_m_expression_names_it():
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    addopts = shlex.split(ini["pytest"]["addopts"])
    assert addopts[addopts.index("-m") + 1] == "not crash"  # a later -m (the CI's "-m crash") wins
    assert any(line.strip().startswith("crash:") for line in ini["pytest"]["markers"].splitlines())
    marked_files = sorted(
        (
            path
            for path in (ROOT / "tests").rglob("test_*.py")
            if path != Path(__file__) and "pytest.mark.crash" in path.read_text(encoding="utf-8")
        ),
        key=lambda path: path.name,
    )
    marked = [path.name for path in marked_files]
    where = tuple(str(path.relative_to(ROOT)) for path in marked_files)
    assert marked == [
        "test_16_fault_tolerance.py",
        "test_18_declarative_pipeline.py",
        "test_broker_outage.py",
        "test_damaged_checkpoints.py",
        "test_exercises.py",
        "test_kafka_data_loss.py",
        "test_kill_cycles.py",
    ]
    lane = collected("-m", "crash", paths=where)
    assert sorted({test.split("::")[0].rsplit("/", 1)[-1] for test in lane}) == marked
    # The default run, and an -m of the learner's own (which replaces pytest.ini's), leave the lane
    # out.
    for args in ((), ("-m", "not smoke")):
        selected = collected(*args, paths=where)
        assert selected and not set(selected) & set(lane), args


def test_requirements_are_pinned_and_match_the_delta_jar():
    pins = dict(
        re.sub(r"\[.*\]", "", line).split("==")  # pyspark[pipelines] pins pyspark
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert all(version for version in pins.values())
    import importlib.metadata

    for package in ("pyspark", "delta-spark"):
        assert importlib.metadata.version(package) == pins[package], (
            f"{package} in this env differs from the pin"
        )


# --- the tour's plan -----------------------------------------------------------------------


def names(steps: list[course.Step]) -> list[str]:
    return [step.name + (" again" if step.second_run else "") for step in steps]


def test_the_broker_step_comes_right_before_the_first_kafka_lesson():
    steps = names(course.plan_tour(PYTHON, 0, 99))
    lessons = [path.stem for path in LESSONS]
    kafka_at = next(
        i for i, path in enumerate(LESSONS) if int(path.name[:2]) >= course.FIRST_KAFKA_LESSON
    )
    assert steps == ["setup", *lessons[:kafka_at], course.BROKER_STEP, *lessons[kafka_at:]]
    assert steps.index(course.BROKER_STEP) > steps.index("07_watermarking")


def test_a_tour_without_kafka_lessons_starts_no_broker():
    assert course.BROKER_STEP not in names(
        course.plan_tour(PYTHON, 0, course.FIRST_KAFKA_LESSON - 1)
    )
    assert names(course.plan_tour(PYTHON, 5, 7)) == [
        "setup",
        "05_socket_streaming",
        "06_windowing",
        "07_watermarking",
    ]


def test_a_tour_from_a_kafka_lesson_starts_the_broker_after_setup():
    assert names(course.plan_tour(PYTHON, 9, 10)) == [
        "setup",
        course.BROKER_STEP,
        "09_stream_joins",
        "10_foreach_batch",
    ]


def test_each_lesson_runs_once_with_reset_by_default():
    lessons = [step for step in course.plan_tour(PYTHON, 0, 99) if step.lesson is not None]
    assert [step.command for step in lessons] == [
        (str(PYTHON), str(path), "--reset") for path in LESSONS
    ]


def test_again_runs_each_lesson_a_second_time_right_after_without_reset():
    lessons = [
        step for step in course.plan_tour(PYTHON, 0, 99, again=True) if step.lesson is not None
    ]
    expected = []
    for path in LESSONS:
        expected += [((str(PYTHON), str(path), "--reset"), False), ((str(PYTHON), str(path)), True)]
    assert [(step.command, step.second_run) for step in lessons] == expected


def test_lesson_numbers_are_numbers(capsys):
    assert course.lesson_number("08") == course.lesson_number("8") == 8
    with pytest.raises(SystemExit):
        course.main(["tour", "--from", "se"])  # refused before anything is installed or run
    assert "a lesson number such as 05, got 'se'" in capsys.readouterr().err


# --- the tour's Kafka step -----------------------------------------------------------------


@pytest.fixture
def plain_tcp_server():
    """A TCP server that is not Kafka: it accepts each connection and closes it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    done = threading.Event()

    def serve():
        while not done.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    done.set()
    thread.join()
    server.close()


@pytest.fixture
def local_kafka_port(monkeypatch):
    """Point the tour at a given local broker port, with no KAFKA_BOOTSTRAP_SERVERS."""
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)

    def use(port: int) -> int:
        monkeypatch.setenv("LOCAL_KAFKA_PORT", str(port))
        return port

    return use


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_port_held_by_something_else_than_kafka_stops_the_tour_with_advice(
    plain_tcp_server, local_kafka_port, capsys
):
    port = local_kafka_port(plain_tcp_server)
    with pytest.raises(course.StepFailed) as failure:
        course.kafka_for_tour(Path(sys.executable))  # the real probe, with kafka-python
    advice = str(failure.value)
    assert advice.startswith(
        f"Port {port} on 127.0.0.1, where the Kafka lessons look for the course's broker, is held"
    )
    assert "does not answer as a Kafka broker" in advice
    if shutil.which("lsof") or shutil.which("ss"):
        assert f"(PID {os.getpid()})" in advice  # this test process holds it
    else:
        assert f"lsof -i :{port}" in advice
    assert f"LOCAL_KAFKA_PORT={port + 10000} python course.py tour --from 08" in advice
    assert "KAFKA_BOOTSTRAP_SERVERS=host:port" in advice
    assert "Starting" not in capsys.readouterr().out  # no broker start was tried


def test_a_kafka_broker_already_listening_is_used(
    plain_tcp_server, local_kafka_port, monkeypatch, capsys
):
    port = local_kafka_port(plain_tcp_server)
    monkeypatch.setattr(
        course, "kafka_answers", lambda python, bootstrap: bootstrap == f"127.0.0.1:{port}"
    )
    monkeypatch.setattr(course.subprocess, "run", refuse_to_run)
    assert course.kafka_for_tour(PYTHON) is False  # not started here, so not stopped at the end
    assert f"A Kafka broker already answers at 127.0.0.1:{port}" in capsys.readouterr().out


def test_a_free_port_starts_the_course_broker(local_kafka_port, monkeypatch):
    local_kafka_port(free_port())
    recorded = Recorder()
    monkeypatch.setattr(course.subprocess, "run", recorded)
    assert course.kafka_for_tour(PYTHON) is True
    assert recorded.commands == [[str(PYTHON), str(ROOT / "local_kafka.py"), "start"]]


def test_kafka_bootstrap_servers_is_used_as_it_is(monkeypatch, capsys):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "broker.example:9092")
    monkeypatch.setattr(course.subprocess, "run", refuse_to_run)
    assert course.kafka_for_tour(PYTHON) is False
    assert "KAFKA_BOOTSTRAP_SERVERS=broker.example:9092" in capsys.readouterr().out


# --- running the tour ----------------------------------------------------------------------


def refuse_to_run(*args, **kwargs):
    raise AssertionError(f"nothing should run here: {args}")


class Recorder:
    """Stands in for subprocess.run: records each command, fails the ones ``fails`` says."""

    def __init__(self, fails=lambda command: False):
        self.commands: list[list[str]] = []
        self.fails = fails

    def __call__(self, command, **kwargs):
        self.commands.append(list(command))
        return subprocess.CompletedProcess(command, 1 if self.fails(command) else 0)


def lesson_runs(commands: list[list[str]]) -> list[str]:
    """'03_file_streaming --reset' / '03_file_streaming' for each lesson command, in order."""
    return [
        " ".join([Path(command[1]).stem, *command[2:]])
        for command in commands
        if Path(command[1]).parent.name == "streaming_tutorial"
    ]


def summary_line(output: str, name: str) -> str:
    summary = output.split("# Tour summary", 1)[1]
    return next(line for line in summary.splitlines() if line.split()[:1] == [name])


def test_the_tour_runs_each_lesson_once_and_summarises(monkeypatch, capsys):
    recorded = Recorder()
    monkeypatch.setattr(course.subprocess, "run", recorded)
    monkeypatch.setattr(course, "kafka_for_tour", lambda python: False)
    assert course.run_tour(PYTHON, 0, 99) == 0
    assert lesson_runs(recorded.commands) == [f"{path.stem} --reset" for path in LESSONS]
    output = capsys.readouterr().out
    assert "second run" not in output
    for path in LESSONS:
        assert re.fullmatch(rf"\s*{path.stem}\s+ok\s+\d+\.\d s", summary_line(output, path.stem))


def test_again_runs_every_lesson_twice_and_shows_both_runs(monkeypatch, capsys):
    recorded = Recorder()
    monkeypatch.setattr(course.subprocess, "run", recorded)
    monkeypatch.setattr(course, "kafka_for_tour", lambda python: False)
    assert course.run_tour(PYTHON, 0, 99, again=True) == 0
    expected = []
    for path in LESSONS:
        expected += [f"{path.stem} --reset", path.stem]
    assert lesson_runs(recorded.commands) == expected
    output = capsys.readouterr().out
    assert "second run (no --reset)" in output
    for path in LESSONS:
        assert re.fullmatch(
            rf"\s*{path.stem}\s+ok\s+\d+\.\d s\s+ok\s+\d+\.\d s", summary_line(output, path.stem)
        )
    assert re.fullmatch(r"\s*setup\s+ok\s+\d+\.\d s", summary_line(output, "setup"))


def test_a_failed_second_run_stops_the_tour_and_says_how_to_resume(monkeypatch, capsys):
    recorded = Recorder(
        fails=lambda command: (
            command[1].endswith("03_file_streaming.py") and "--reset" not in command
        )
    )
    monkeypatch.setattr(course.subprocess, "run", recorded)
    monkeypatch.setattr(course, "kafka_for_tour", refuse_to_run)
    assert course.run_tour(PYTHON, 0, 99, again=True) == 1
    assert lesson_runs(recorded.commands)[-2:] == ["03_file_streaming --reset", "03_file_streaming"]
    output = capsys.readouterr().out
    assert re.fullmatch(
        r"\s*03_file_streaming\s+ok\s+\d+\.\d s\s+FAIL\s+\d+\.\d s",
        summary_line(output, "03_file_streaming"),
    )
    assert (
        "03_file_streaming (its second run, without --reset) failed: read its message above, fix "
        "it, then resume with 'python course.py tour --from 03 --again'."
    ) in output


def test_a_broker_the_tour_started_is_stopped_even_when_a_lesson_fails(monkeypatch, capsys):
    recorded = Recorder(fails=lambda command: command[1].endswith("09_stream_joins.py"))
    monkeypatch.setattr(course.subprocess, "run", recorded)
    monkeypatch.setattr(course, "kafka_for_tour", lambda python: True)
    assert course.run_tour(PYTHON, 8, 99) == 1
    assert recorded.commands[-1] == [str(PYTHON), str(ROOT / "local_kafka.py"), "stop"]
    assert "resume with 'python course.py tour --from 09'" in capsys.readouterr().out


def test_a_broker_that_cannot_start_stops_the_tour_before_the_kafka_lessons(monkeypatch, capsys):
    def no_broker(python):
        raise course.StepFailed("Port 9092 is held by nc (PID 7).")

    recorded = Recorder()
    monkeypatch.setattr(course.subprocess, "run", recorded)
    monkeypatch.setattr(course, "kafka_for_tour", no_broker)
    assert course.run_tour(PYTHON, 7, 99) == 1
    assert lesson_runs(recorded.commands) == ["07_watermarking --reset"]
    captured = capsys.readouterr()
    assert "Port 9092 is held by nc (PID 7)." in captured.err
    assert re.fullmatch(
        rf"\s*{course.BROKER_STEP}\s+FAIL\s+\d+\.\d s", summary_line(captured.out, "Kafka")
    )
    assert "resume with 'python course.py tour --from 08'" in captured.out


# --- platforms -----------------------------------------------------------------------------


def test_native_windows_stops_at_once_pointing_to_wsl2(monkeypatch, capsys):
    monkeypatch.setattr(course, "ensure_environment", refuse_to_run)
    with monkeypatch.context() as patch, pytest.raises(SystemExit) as stop:
        patch.setattr(course.os, "name", "nt")
        course.main(["tour"])
    assert stop.value.code == 1
    advice = " ".join(capsys.readouterr().err.split())
    assert advice.startswith("Native Windows is not supported")
    assert "wsl --install" in advice and "WSL2" in advice


def test_the_readme_gives_wsl2_steps_not_native_windows_ones():
    text = readme()
    assert "## Supported platforms" in text and "wsl --install" in text
    assert "Scripts\\activate" not in text and "Scripts/activate" not in text
