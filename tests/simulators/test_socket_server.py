"""socket_server.py, lesson 05's text server: exact lines, port checks, busy ports, clean stops."""

from __future__ import annotations

import os
import pty
import signal
import socket
import subprocess
import sys

import pytest

from common import config
from conftest import ROOT, free_port, run_script
from data_generators import socket_server


class SocketServer:
    """socket_server.py in a subprocess; ``wait_until_listening`` reads its stdout, no sleeping."""

    def __init__(self, home, *args, stdin_text=None):
        self.port = free_port()
        env = {**os.environ, "STREAMING_COURSE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "data_generators/socket_server.py"),
                "--port",
                str(self.port),
                *args,
            ],
            env=env,
            stdin=subprocess.DEVNULL if stdin_text is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if stdin_text is not None:
            self.process.stdin.write(stdin_text)
            self.process.stdin.close()
            self.process.stdin = None  # communicate() must not touch it again
        self.output: list[str] = []

    def wait_until_listening(self) -> None:
        for line in self.process.stdout:
            self.output.append(line)
            if line.startswith("Waiting for Spark to connect"):
                return
        raise AssertionError("the server exited before listening: " + self.process.stderr.read())

    def read_lines(self, count: int) -> list[str]:
        with socket.create_connection((config.SOCKET_HOST, self.port), timeout=60) as client:
            reader = client.makefile("r", encoding="utf-8")
            return [reader.readline() for _ in range(count)]

    def finish(self) -> tuple[int, str, str]:
        stdout, stderr = self.process.communicate(timeout=60)
        return self.process.returncode, "".join(self.output) + stdout, stderr


@pytest.mark.smoke
def test_socket_server_sends_a_files_lines_exactly(course_home, tmp_path):
    script = tmp_path / "lines.txt"
    script.write_text("hello spark\nhello streaming\n\nthe end\n")
    server = SocketServer(course_home, "--file", str(script), "--interval", "0")
    server.wait_until_listening()

    lines = server.read_lines(4)
    code, stdout, stderr = server.finish()

    assert lines == ["hello spark\n", "hello streaming\n", "\n", "the end\n"]
    assert code == 0, stderr
    assert f"Waiting for Spark to connect on {config.SOCKET_HOST}:{server.port}" in stdout
    assert "sent: hello streaming" in stdout and "Spark disconnected." in stdout
    assert "Traceback" not in stderr


@pytest.mark.smoke
def test_socket_server_demo_ignores_a_port_check_and_can_repeat(course_home):
    server = SocketServer(course_home, "--demo", "--interval", "0", "--count", "8")
    server.wait_until_listening()
    socket.create_connection((config.SOCKET_HOST, server.port)).close()  # "is it up?" from a lesson

    lines = server.read_lines(8)
    code, _, stderr = server.finish()

    demo = list(socket_server.DEMO_SENTENCES)
    assert [line.rstrip("\n") for line in lines] == demo + demo[:2]
    assert code == 0
    assert "a port check, still waiting" in stderr


@pytest.mark.smoke
def test_socket_server_sends_piped_input_and_closes_after_linger(course_home):
    server = SocketServer(course_home, "--interval", "0", "--linger", "0", stdin_text="a b\nb c\n")
    server.wait_until_listening()

    with socket.create_connection((config.SOCKET_HOST, server.port), timeout=60) as client:
        received = client.makefile(
            "r", encoding="utf-8"
        ).read()  # read() returns when the server closes
    code, stdout, _ = server.finish()

    assert received == "a b\nb c\n"
    assert code == 0
    assert "--linger 0: closing the connection." in stdout


@pytest.mark.smoke
def test_socket_server_on_a_busy_port_explains_and_exits_2(course_home):
    with socket.socket() as holder:
        holder.bind((config.SOCKET_HOST, 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run_script(
            "data_generators/socket_server.py",
            "--demo",
            "--port",
            str(port),
            home=course_home,
            timeout=60,
        )

    assert result.returncode == socket_server.EXIT_PORT_BUSY == 2
    assert f"Port {port} on {config.SOCKET_HOST} is in use" in result.stderr
    assert "--port N" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.smoke
def test_socket_server_stops_cleanly_on_ctrl_c(course_home):
    server = SocketServer(course_home, "--demo")
    server.wait_until_listening()
    pid_file = course_home / ".runtime" / "socket.pid"
    assert pid_file.read_text() == str(server.process.pid)  # announce_running while it serves

    server.process.send_signal(signal.SIGINT)
    code, stdout, stderr = server.finish()

    assert code == 130
    assert stderr == "\nStopped with Ctrl-C; the port is free again.\n"
    assert not pid_file.exists()


@pytest.mark.smoke
def test_socket_server_keep_serving_serves_the_next_client_again(course_home):
    server = SocketServer(
        course_home, "--demo", "--interval", "0", "--count", "2", "--keep-serving"
    )
    server.wait_until_listening()

    first = server.read_lines(2)
    second = server.read_lines(2)
    server.process.terminate()  # how a lesson stops the simulator it started
    code, stdout, _ = server.finish()

    assert first == second == [line + "\n" for line in socket_server.DEMO_SENTENCES[:2]]
    assert stdout.count("--keep-serving: waiting for the next client.") >= 1
    assert code == 0


@pytest.mark.smoke
def test_socket_server_sends_what_a_person_types(course_home):
    leader, follower = pty.openpty()
    env = {**os.environ, "STREAMING_COURSE_HOME": str(course_home), "PYTHONUNBUFFERED": "1"}
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "data_generators/socket_server.py"), "--port", str(port)],
        env=env,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(follower)
    output = [process.stdout.readline()]
    assert output[0].startswith("Waiting for Spark to connect")

    with socket.create_connection((config.SOCKET_HOST, port), timeout=60) as client:
        os.write(leader, b"hello typed world\n\x04")  # a line, then Ctrl-D
        received = client.makefile("r", encoding="utf-8").readline()
    stdout, stderr = process.communicate(timeout=60)
    os.close(leader)

    assert received == "hello typed world\n"
    assert process.returncode == 0, stderr
    assert "> " in stdout and "sent: hello typed world" in stdout
