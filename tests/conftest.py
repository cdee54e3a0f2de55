"""Fixtures shared by the whole suite: one Spark session, lesson loading, subprocess runs."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "streaming_tutorial"), str(ROOT)]


def load_lesson(stem: str):
    """Import a numbered lesson (e.g. '06_windowing') as a module; its main() does not run."""
    name = f"lesson_{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "streaming_tutorial" / f"{stem}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run, with every connector the lessons use."""
    from common.session import get_spark

    session = get_spark("course-tests", master="local[2]", kafka=True, delta=True, jdbc=True, ui=False)
    yield session
    session.stop()


@pytest.fixture
def course_home(tmp_path):
    """A throw-away COURSE_HOME for scripts run as subprocesses (data, checkpoints, output)."""
    home = tmp_path / "home"
    home.mkdir()
    return home


def run_script(script: Path | str, *args: str, home: Path, timeout: float = 180, cwd: Path | None = None,
               input_text: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a course script as a learner would: a fresh Python process, outputs captured."""
    environment = {**os.environ, "STREAMING_COURSE_HOME": str(home), "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        cwd=cwd or ROOT,
        env=environment,
        input=input_text,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="session")
def kafka_bootstrap():
    """A real Kafka broker for the whole test run: KAFKA_BOOTSTRAP_SERVERS's, one already
    running locally, or the course's own (started here once, stopped at the end).

    KAFKA_BOOTSTRAP_SERVERS is set for the session, so lessons run as subprocesses use the
    same broker instead of starting their own.
    """
    from common.config import KAFKA_BOOTSTRAP_ENV
    from common.kafka import kafka_for_lesson

    previous = os.environ.get(KAFKA_BOOTSTRAP_ENV)
    with kafka_for_lesson(quiet=True) as bootstrap:
        os.environ[KAFKA_BOOTSTRAP_ENV] = bootstrap
        try:
            yield bootstrap
        finally:
            if previous is None:
                os.environ.pop(KAFKA_BOOTSTRAP_ENV, None)
            else:
                os.environ[KAFKA_BOOTSTRAP_ENV] = previous


# --- Kafka topics and ports for tests -------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def silent_listener():
    """A port that accepts TCP connections and never answers: a program that is not Kafka."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.fixture
def topic(kafka_bootstrap):
    """topic("name") -> a Kafka topic name unique to this test; all of them are deleted afterwards."""
    from common.kafka import delete_topics

    suffix = uuid.uuid4().hex[:8]
    made = []

    def make(name: str) -> str:
        made.append(f"test-{name}-{suffix}")
        return made[-1]

    yield make
    delete_topics(kafka_bootstrap, made)
