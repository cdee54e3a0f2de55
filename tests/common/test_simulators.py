"""infra.simulators: a file lesson watches its folder (with a simulator) or reads what is there
once; a server simulator is listening before the lesson connects, or the lesson says what to do."""

from __future__ import annotations

import os
import signal
import socket
import threading
from argparse import Namespace

import pytest

from common import paths
from conftest import free_port, silent_listener
from infra import simulators
from infra.errors import CourseError
from infra.simulators import (
    FileInput,
    Simulator,
    file_input_for_lesson,
    server_for_lesson,
    wait_for_port,
)


def lesson_args(**flags) -> Namespace:
    return Namespace(**{"available_now": False, "no_simulator": False, **flags})


def test_files_already_there_are_read_once_without_a_simulator(tmp_path, capsys):
    (tmp_path / "tx-1.json").write_text("{}\n")

    with file_input_for_lesson(
        "test-none-running", "simulate_file_data.py", [], tmp_path, lesson_args()
    ) as files:
        assert not files.watching
        assert files.trigger("2 seconds") == {"availableNow": True}
        assert not files.done()  # nothing to wait for: availableNow ends the queries by itself
    assert capsys.readouterr().out == ""  # no simulator started, none advised


def test_available_now_reads_once_even_an_empty_folder(tmp_path):
    with file_input_for_lesson(
        "test-none-running", "x.py", [], tmp_path, lesson_args(available_now=True)
    ) as files:
        assert files.trigger("2 seconds") == {"availableNow": True}


def test_an_empty_folder_is_watched_and_no_simulator_means_the_learner_starts_one(tmp_path, capsys):
    with file_input_for_lesson(
        "test-none-running",
        "simulate_file_data.py",
        ["--count", "3"],
        tmp_path,
        lesson_args(no_simulator=True),
    ) as files:
        assert files.watching
        assert files.trigger("2 seconds") == {"processingTime": "2 seconds"}
        assert not files.done()  # the learner may start it at any time
    assert (
        "start it yourself in a second terminal: python data_generators/simulate_file_data.py "
        "--count 3" in capsys.readouterr().out
    )


def test_done_follows_the_simulator():
    class Finished(Simulator):
        def done(self) -> bool:
            return True

    assert FileInput(watching=True, simulator=Finished("x")).done()
    assert not FileInput(watching=True, simulator=Simulator("x")).done()


def test_available_now_reads_what_is_there_even_while_watching():
    assert FileInput(watching=True, available_now=True).trigger("2 seconds") == {
        "availableNow": True
    }
    assert FileInput(watching=False).trigger("2 seconds") == {"availableNow": True}


def test_wait_for_port_sees_a_server_that_starts_listening_later():
    port = free_port()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    starting = threading.Timer(0.3, server.listen)
    starting.start()
    try:
        assert wait_for_port("127.0.0.1", port, 60)
    finally:
        starting.cancel()
        server.close()


def test_wait_for_port_gives_up_after_the_timeout_or_when_told_to():
    port = free_port()
    assert not wait_for_port("127.0.0.1", port, 0.3)
    assert not wait_for_port(
        "127.0.0.1", port, 600, stop_if=lambda: True
    )  # e.g. the server process ended


def test_a_server_that_already_listens_is_used_as_it_is(capsys):
    with (
        silent_listener() as port,
        server_for_lesson(
            "test-server", "socket_server.py", ["--demo"], "127.0.0.1", port
        ) as server,
    ):
        assert server.process is None and not server.done()  # not ours: it runs until --duration
    # No test-server PID file: what listens is not the course's simulator, and the lesson says so.
    assert "Something already listens on 127.0.0.1" in capsys.readouterr().out


def test_no_server_and_no_simulator_says_how_to_start_one(monkeypatch):
    monkeypatch.setattr(simulators, "SERVER_START_SECONDS", 0.3)
    port = free_port()

    with pytest.raises(CourseError) as advice:
        with server_for_lesson(
            "test-server", "socket_server.py", ["--demo"], "127.0.0.1", port, enabled=False
        ):
            pytest.fail("the block must not run without a server")

    assert str(advice.value) == (
        f"Nothing accepts connections on 127.0.0.1:{port}, so the lesson cannot read from it. "
        "Start the server in a second terminal with "
        f"'python data_generators/socket_server.py --port {port}', then run the lesson "
        "again; or run the lesson without --no-simulator and it starts the server itself."
    )


def test_a_server_that_stops_at_once_is_reported_with_its_log(monkeypatch, tmp_path):
    monkeypatch.setattr(
        paths, "RUNTIME_DIR", tmp_path
    )  # its log goes here, not into the learner's .runtime
    missing = tmp_path / "missing.txt"

    with pytest.raises(CourseError) as advice:
        with server_for_lesson(
            "test-server", "socket_server.py", ["--file", str(missing)], "127.0.0.1", free_port()
        ):
            pytest.fail("the block must not run without a server")

    assert "The test-server server stopped at once (exit code 1)" in str(advice.value)
    assert f"Cannot read --file {missing}" in str(advice.value)


def test_pause_sees_a_signal_that_lands_just_before_the_wait(monkeypatch):
    """The race time.sleep loses: the signal arrives after Python's last look at its handlers
    and before the wait begins. Here it is sent from inside the call that starts the wait."""
    import select

    from infra import simulators

    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: received.append("SIGUSR1"))
    real_select = select.select

    def signal_then_select(*args):
        os.kill(os.getpid(), signal.SIGUSR1)  # delivered before kill() returns
        return real_select(*args)

    monkeypatch.setattr(select, "select", signal_then_select)
    try:
        assert (
            simulators.pause(30) is True
        )  # cut short by the byte the signal wrote, not after 30 s
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert received == ["SIGUSR1"]  # and Python's own handler still ran


def test_pause_without_a_signal_waits_it_out():
    from infra import simulators

    assert simulators.pause(0.01) is False
