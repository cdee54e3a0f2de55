"""Start, detect and stop the course's simulators from a lesson.

A simulator announces itself with a PID file under ``.runtime/`` while it runs
(``announce_running``); ``run_simulator`` runs a simulator script's work with it and
gives every simulator the same stop: 0 when it ends or a lesson stops it (SIGTERM), 130
on Ctrl-C, never a traceback. A lesson that needs one calls ``simulator_for_lesson``:
if the learner already runs it in a second terminal, the lesson uses it; if not,
the lesson starts it in the background for its own duration and says so. A lesson
that reads a folder asks ``file_input_for_lesson`` whether to watch it (with a
simulator) or to read the files already there once.
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from common import paths, storage
from infra.errors import CourseError
from infra.processes import alive

STOP_TIMEOUT_SECONDS = 5
SERVER_START_SECONDS = (
    15  # how long a server simulator may take to listen (or the learner, to start it)
)
PORT_POLL_SECONDS = 0.2
EXIT_CTRL_C = 130  # what a shell reports for a program stopped by Ctrl-C (128 + SIGINT)
# The simulators that write files, and where: on remote storage Spark reads that folder elsewhere.
FILE_SIMULATORS = {
    "simulate_file_data.py": paths.TRANSACTIONS_DIR,
    "generate_ecommerce_events.py": paths.ECOMMERCE_DIR,
    "generate_sensor_data.py": paths.SENSOR_DIR,
    "generate_ad_events.py": paths.AD_EVENTS_DIR,
}


def pid_file(name: str) -> Path:
    return paths.RUNTIME_DIR / f"{name}.pid"


def log_file(name: str) -> Path:
    return paths.RUNTIME_DIR / f"{name}.log"


def is_running(name: str) -> bool:
    """True when a simulator called ``name`` has a live PID file."""
    path = pid_file(name)
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return False
    return alive(pid)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now (the system picks it)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@contextmanager
def announce_running(name: str) -> Iterator[None]:
    """Used by a simulator's main(): keep a PID file while it runs."""
    path = pid_file(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(os.getpid()))

    def remove() -> None:
        try:
            if path.read_text().strip() == str(os.getpid()):
                path.unlink()
        except OSError:
            pass

    atexit.register(remove)
    try:
        yield
    finally:
        remove()


def pause(seconds: float) -> bool:
    """Wait ``seconds``, cut short by any signal; True if a signal cut it short.

    ``time.sleep`` can miss a signal: Python's handler only notes it, and one that lands just
    before the sleep's system call begins leaves the whole sleep to run (a simulator asked to
    stop during a 60 s pause then stops a minute late). Here the signal also writes a byte
    to a pipe (``signal.set_wakeup_fd``), which the wait sees however early it came.
    """
    if (
        threading.current_thread() is not threading.main_thread()
    ):  # only the main thread gets signals
        time.sleep(seconds)
        return False
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous = signal.set_wakeup_fd(write_end)
    try:
        readable, _, _ = select.select([read_end], [], [], seconds)
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read_end)
        os.close(write_end)
    return bool(readable)


def run_simulator(name: str, work: Callable[[], object], *, stopped: str) -> int:
    """Run a simulator script's ``work``, announced as ``name``; the exit code for its ``main()``.

    0 when ``work`` ends, and also when a lesson stops the simulator it started
    (SIGTERM becomes a normal exit, so the PID file goes away). 130 on Ctrl-C, with one
    line that ends in ``stopped`` (what the learner keeps, e.g. "every file written so
    far is complete.") instead of a traceback.
    """
    # A process inherits blocked and ignored signals from the one that started it; a simulator
    # must stop on Ctrl-C and SIGTERM whatever started it.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        with announce_running(name):
            work()
    except KeyboardInterrupt:
        print(f"\nStopped with Ctrl-C; {stopped}", file=sys.stderr, flush=True)
        return EXIT_CTRL_C
    return 0


def start_simulator(name: str, script: str, args: Sequence[str]) -> subprocess.Popen:
    """Start ``data_generators/<script>`` in the background; its output goes to
    .runtime/<name>.log."""
    log = log_file(name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as handle:
        return subprocess.Popen(
            [sys.executable, str(paths.GENERATORS_DIR / script), *args],
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # Its own process group: the learner's Ctrl-C reaches the lesson, which stops it.
            start_new_session=True,
        )


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Simulator:
    """The lesson's view of its simulator: started here, running elsewhere, or none."""

    def __init__(
        self, name: str, process: subprocess.Popen | None = None, *, external: bool = False
    ) -> None:
        self.name, self.process, self.external = name, process, external

    def done(self) -> bool:
        """True once no more input will come from it (run until --duration when there is none)."""
        if self.process is not None:  # the one this lesson started
            return self.process.poll() is not None
        if self.external:  # the one in the learner's second terminal
            return not is_running(self.name)
        return False  # --no-simulator: the learner may start one at any time


def should_watch(name: str, folder: Path, args) -> bool:
    """Watch the folder (trigger every few seconds, with the simulator) or read it once?

    Watch when the learner's simulator is running or the folder is empty (then the
    lesson starts one); read what is there once when files are present and nothing
    writes more, or when --available-now says so. Starting the simulator only for an
    empty folder keeps the sample data that later lessons read as initial_setup.py wrote it.
    """
    if getattr(args, "available_now", False):
        return False
    return is_running(name) or not any(folder.glob("*.json"))


@contextmanager
def simulator_for_lesson(
    name: str,
    script: str,
    args: Sequence[str],
    *,
    enabled: bool = True,
    already_running: bool | None = None,
) -> Iterator[Simulator]:
    """Run the lesson's simulator for the duration of the ``with`` block, unless it already runs.

    ``enabled=False`` (the lesson's --no-simulator) never starts one. ``already_running``
    overrides the PID-file check (the socket lesson checks its port instead).
    """
    running = is_running(name) if already_running is None else already_running
    command = f"python data_generators/{script} {' '.join(args)}".strip()
    if script in FILE_SIMULATORS and (
        enabled or running
    ):  # --no-simulator: the learner brings the input
        folder = (
            Path(args[args.index("--output-dir") + 1])
            if "--output-dir" in args
            else FILE_SIMULATORS[script]
        )
        storage.require_local_input(
            f"The {name} simulator", folder, advice=storage.simulator_advice(folder)
        )
    if running:
        print(f"Using the {name} simulator that is already running.", flush=True)
        yield Simulator(name, external=True)
        return
    if not enabled:
        print(f"--no-simulator: start it yourself in a second terminal: {command}", flush=True)
        yield Simulator(name)
        return
    process = start_simulator(name, script, args)
    print(
        f"Started the {name} simulator for this run: {command}\n"
        f"(its log: {paths.display(log_file(name))}; --no-simulator if you run it yourself)",
        flush=True,
    )
    try:
        yield Simulator(name, process)
    finally:
        stop_process(process)


@dataclass
class FileInput:
    """How a lesson that reads a folder gets its input this run (see ``file_input_for_lesson``)."""

    watching: bool  # True: the queries watch the folder while a simulator writes into it
    simulator: Simulator | None = None
    available_now: bool = False  # the lesson's --available-now

    def trigger(self, interval: str) -> dict:
        """Watching: a micro-batch every ``interval``. Otherwise, or with --available-now: read
        the files there now, then stop."""
        return (
            {"processingTime": interval}
            if self.watching and not self.available_now
            else {"availableNow": True}
        )

    def done(self) -> bool:
        """For ``run_queries(until=...)``: True once the simulator has finished writing."""
        return self.simulator is not None and self.simulator.done()


@contextmanager
def file_input_for_lesson(
    name: str, script: str, args: Sequence[str], folder: Path, lesson_args
) -> Iterator[FileInput]:
    """``should_watch`` and ``simulator_for_lesson`` in one, for a lesson that reads ``folder``.

    Watching (the simulator runs, or the folder is empty): the learner's simulator, or one
    started for the ``with`` block (none with --no-simulator). Otherwise no simulator and
    nothing printed: the queries read the files there with availableNow and end by themselves.
    """
    available_now = getattr(lesson_args, "available_now", False)
    if not should_watch(name, folder, lesson_args):
        yield FileInput(watching=False, available_now=available_now)
        return
    enabled = not getattr(lesson_args, "no_simulator", False)
    with simulator_for_lesson(name, script, args, enabled=enabled) as simulator:
        yield FileInput(watching=True, simulator=simulator, available_now=available_now)


def wait_for_port(
    host: str, port: int, timeout: float, *, stop_if: Callable[[], bool] = lambda: False
) -> bool:
    """Wait until something accepts connections on host:port (True), or say it did not (False):
    after ``timeout`` seconds, or as soon as ``stop_if()`` is true (e.g. the server process
    ended)."""
    deadline = time.monotonic() + timeout
    while not port_open(host, port):
        if stop_if() or time.monotonic() >= deadline:
            return False
        time.sleep(PORT_POLL_SECONDS)
    return True


@contextmanager
def server_for_lesson(
    name: str, script: str, args: Sequence[str], host: str, port: int, *, enabled: bool = True
) -> Iterator[Simulator]:
    """``simulator_for_lesson`` for a simulator that is a TCP server (lesson 05's text server).

    Whatever already listens on host:port is used as it is (with a note when it is not our
    simulator, which would have announced itself); otherwise the simulator is started
    with ``args`` plus ``--host host --port port`` (with ``enabled=False``, the lesson's
    --no-simulator, the learner starts it). The block begins once the port accepts
    connections, within ``SERVER_START_SECONDS``; if it does not, CourseError says what to do.
    """
    listening = port_open(host, port)
    if listening and not is_running(name):
        # Not our server: maybe the learner's 'nc -lk', maybe a program that never sends a line.
        print(foreign_listener_note(script, host, port), flush=True)
        yield Simulator(name)
        return
    args = [*args, "--host", host, "--port", str(port)]
    with simulator_for_lesson(
        name, script, args, enabled=enabled, already_running=listening
    ) as server:
        if not listening and not wait_for_port(
            host, port, SERVER_START_SECONDS, stop_if=server.done
        ):
            raise CourseError(server_advice(name, script, host, port, server))
        yield server


def foreign_listener_note(script: str, host: str, port: int) -> str:
    return (
        f"Something already listens on {host}:{port}, and it is not the course's {script}: the "
        f"lesson reads whatever it sends (fine for 'nc -lk {port}'). If no line arrives, another "
        f"program holds the port: stop it ('lsof -i :{port}' names it), or run the lesson with "
        f"--port N and it starts its own server there."
    )


def server_advice(name: str, script: str, host: str, port: int, server: Simulator) -> str:
    if server.process is not None and server.done():
        log = log_file(name)
        said = (
            log.read_text(encoding="utf-8", errors="replace").strip()[-500:] if log.exists() else ""
        )
        return (
            f"The {name} server stopped at once (exit code {server.process.returncode}), so "
            f"nothing listens on {host}:{port}. Its log {paths.display(log)} ends with: "
            f"{said or '(nothing)'}"
        )
    return (
        f"Nothing accepts connections on {host}:{port}, so the lesson cannot read from it. "
        "Start the server in a second terminal with "
        f"'python data_generators/{script} --port {port}', then run the lesson again; or "
        "run the lesson without --no-simulator and it starts the server itself."
    )
