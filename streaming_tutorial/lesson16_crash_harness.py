"""Crash a streaming query for real: a child process killed with SIGKILL at a known point of a
batch (lesson 16's machinery: process groups, pause markers, SIGKILL, waiting, tallies).

A lesson (or a test) starts its query in a child process, in a process group of its own,
so one ``os.killpg(..., SIGKILL)`` ends the child and the Spark JVM it started, with no
chance to clean up: what a power cut or an out-of-memory kill leaves behind. The
child's foreachBatch function is wrapped in :func:`pausable`; when the child's
``CRASH_PAUSE_AT`` names a point of a batch, the child writes a marker file there and
blocks, and the parent, which waited for that marker, kills it::

    # in the child (the query's foreachBatch function)
    writer.foreachBatch(crash.pausable(write_batch, "events"))

    # in the parent
    with crash.child_process(command, log, marker_dir, pause_at="events@after-sink:1") as child:
        child.wait_for_marker("after-sink", 1, "events")
        child.kill()

Points: ``before-sink`` (the batch is planned, its offsets are logged, the sink has not
run) and ``after-sink`` (the sink has written, Spark has not yet committed the batch). A
``writeStream.foreach`` writer pauses per partition instead: wrapped in
:class:`PausableWriter`, the task of one partition stops before its open() (``before-sink``) or
after its close() (``after-sink``), while the other tasks run on.
``tally`` then counts, by a unique record id, the rows a restarted query lost or
wrote twice.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from pyspark.sql import functions as F

from common import paths, storage
from common.timestamps import iso
from infra import checkpoints, files, runner
from infra.errors import CourseError
from infra.processes import group_members
from infra.runner import stop_between_batches
from teaching.demos import show_refusal

# "[label@]point:batch", comma-separated: where the child stops and waits
PAUSE_ENV = "CRASH_PAUSE_AT"
MARKER_ENV = "CRASH_MARKER_DIR"  # where the child writes its markers
# after-write: inside the sink, between two of its writes (practice.survive counts them).
POINTS = ("before-sink", "after-sink", "after-write")
# A child JVM on a busy 2-core laptop starts in 5-30 s; a marker after 3 min is not coming.
MARKER_TIMEOUT_SECONDS = 180
POLL_SECONDS = 0.1
KILL_WAIT_SECONDS = 10  # how long a SIGKILLed process group may take to disappear
LOG_TAIL_CHARACTERS = 1500


class CrashError(CourseError):
    """The child did not reach the expected point (it failed, or took too long): the message
    has its log tail."""


# --- in the child -------------------------------------------------------------------------


def pause_points(spec: str | None = None) -> set[tuple[str, str, int]]:
    """(label, point, batch id) triples from ``spec`` (default: the CRASH_PAUSE_AT variable).

    "after-sink:1" pauses every query at batch 1; "events@after-sink:1" only the query labelled
    "events".
    """
    spec = os.environ.get(PAUSE_ENV, "") if spec is None else spec
    found = set()
    for item in filter(None, (part.strip() for part in spec.split(","))):
        label, _, rest = item.rpartition("@")
        point, _, batch = rest.partition(":")
        if point not in POINTS or not batch.isdigit():
            raise ValueError(
                f"{PAUSE_ENV}: '{item}' is not [label@]point:batch with a point in {POINTS}"
            )
        found.add((label, point, int(batch)))
    return found


def marker_name(point: str, batch_id: int, label: str = "") -> str:
    return f"{label + '@' if label else ''}{point}-{batch_id}.json"


def pause_here(point: str, batch_id: int, label: str = "", spec: str | None = None) -> None:
    """If the pause points name this one, write its marker and block until the process is killed."""
    wanted = pause_points(spec)
    if (label, point, batch_id) not in wanted and ("", point, batch_id) not in wanted:
        return
    folder = Path(os.environ.get(MARKER_ENV, "."))
    record = {"label": label, "point": point, "batch_id": batch_id, "pid": os.getpid()}
    files.write_atomically(folder, marker_name(point, batch_id, label), json.dumps(record) + "\n")
    where = f"{label + '@' if label else ''}{point}"
    print(f"crash: paused at {where} of batch {batch_id}; waiting to be killed", flush=True)
    while True:  # the parent kills the whole process group; nothing here ever returns
        time.sleep(3600)


def pausable(handler: Callable, label: str = "") -> Callable:
    """A foreachBatch function that may pause before and after ``handler`` (see ``pause_here``)."""

    def run(batch, batch_id: int):
        pause_here("before-sink", batch_id, label)
        result = handler(batch, batch_id)
        pause_here("after-sink", batch_id, label)
        return result

    run.__name__ = getattr(handler, "__name__", "run")
    return run


class PausableWriter:
    """A ForeachWriter around ``writer`` that may pause a partition's task before its open()
    or after its close() (see ``pause_here``).

    The label of partition p is ``<label>-part<p>``: "foreach-part1@before-sink:0" pauses the
    task of partition 1 of epoch 0, on an executor, before it writes anything, while the other
    tasks run on. Its Python worker imports this module: the child needs ``streaming_tutorial``
    on PYTHONPATH (ChildRuns gives it).
    """

    def __init__(self, writer, label: str) -> None:
        self.writer = writer
        self.label = label

    def open(self, partition_id: int, epoch_id: int) -> bool:
        self.task = (epoch_id, f"{self.label}-part{partition_id}")
        pause_here("before-sink", *self.task)
        return self.writer.open(partition_id, epoch_id)

    def process(self, row) -> None:
        self.writer.process(row)

    def close(self, error: BaseException | None) -> None:
        self.writer.close(error)
        pause_here("after-sink", *self.task)


# --- in the parent ------------------------------------------------------------------------


def wait_until(
    ready: Callable[[], bool],
    what: str,
    timeout: float = MARKER_TIMEOUT_SECONDS,
    *,
    failed: Callable[[], str | None] = lambda: None,
) -> None:
    """runner.wait_until, failing with a CrashError."""
    runner.wait_until(ready, what, timeout, failed=failed, error=CrashError, poll=POLL_SECONDS)


@dataclass
class Child:
    """A child process in a process group of its own, its output in ``log``."""

    process: subprocess.Popen
    log: Path
    marker_dir: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def pgid(self) -> int:
        return self.process.pid  # start_new_session: the child leads its own group

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, characters: int = LOG_TAIL_CHARACTERS) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return text[-characters:].strip() or "(empty log)"

    def wait_for(
        self, ready: Callable[[], bool], what: str, timeout: float = MARKER_TIMEOUT_SECONDS
    ) -> None:
        """Poll until ``ready()``; CrashError with the log's tail if the child ends or ``timeout``
        passes."""

        def failed() -> str | None:
            if self.alive():
                return None
            return f"The child process ended (exit code {self.process.returncode}) before {what}."

        try:
            wait_until(ready, what, timeout, failed=failed)
        except CrashError as error:
            reason = (
                str(error)
                if not self.alive()
                else f"The child process did not reach {what} within {timeout:g} s."
            )
            raise CrashError(
                f"{reason} The end of its log {self.log}:\n{self.log_tail()}"
            ) from None

    def wait_for_marker(
        self, point: str, batch_id: int, *labels: str, timeout: float = MARKER_TIMEOUT_SECONDS
    ) -> list[dict]:
        """Wait until the child pauses at ``point`` of ``batch_id`` (in each query ``labels``
        names); the markers."""
        markers = [
            self.marker_dir / marker_name(point, batch_id, label) for label in labels or ("",)
        ]
        what = f"{point} of batch {batch_id}" + (f" in {', '.join(labels)}" if labels else "")
        self.wait_for(lambda: all(marker.exists() for marker in markers), what, timeout)
        return [json.loads(marker.read_text(encoding="utf-8")) for marker in markers]

    def wait_for_commit(
        self, batch_id: int, *checkpoints_: Path, timeout: float = MARKER_TIMEOUT_SECONDS
    ) -> None:
        """Wait until every query checkpoint in ``checkpoints_`` has committed ``batch_id``."""

        def committed(folder: Path) -> bool:
            last = checkpoints.last_commit(folder)
            return last is not None and last >= batch_id

        self.wait_for(
            lambda: all(committed(folder) for folder in checkpoints_),
            f"the commit of batch {batch_id}",
            timeout,
        )

    def kill(self) -> None:
        """SIGKILL the whole process group (the child, its JVM, its Python workers) and reap the
        child."""
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        deadline = time.monotonic() + KILL_WAIT_SECONDS
        while group_members(self.pgid):
            if time.monotonic() >= deadline:
                raise CrashError(
                    f"processes {group_members(self.pgid)} of group {self.pgid} outlived SIGKILL"
                )
            time.sleep(POLL_SECONDS)

    def wait(self, timeout: float = MARKER_TIMEOUT_SECONDS) -> None:
        """Wait for the child to end by itself; CrashError (with the log's tail) if it failed or
        hangs."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise CrashError(
                f"The child process was still running after {timeout:g} s; killed it. "
                f"The end of its log {self.log}:\n{self.log_tail()}"
            ) from None
        if code != 0:
            raise CrashError(
                f"The child process failed (exit code {code}). The end of its log {self.log}:\n"
                f"{self.log_tail()}"
            )


def start_child(
    command: Sequence[str],
    log: Path,
    marker_dir: Path,
    *,
    pause_at: str = "",
    env: dict | None = None,
) -> Child:
    """Start ``command`` in a new process group, its stdout and stderr in ``log``."""
    pause_points(pause_at)  # a typo fails here, not after a child JVM has started
    log.parent.mkdir(parents=True, exist_ok=True)
    marker_dir.mkdir(parents=True, exist_ok=True)
    environment = {
        **os.environ,
        **(env or {}),
        PAUSE_ENV: pause_at,
        MARKER_ENV: str(marker_dir),
        "PYTHONUNBUFFERED": "1",
    }
    with open(log, "a", encoding="utf-8") as handle:
        process = subprocess.Popen(
            list(command),
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            start_new_session=True,
        )
    return Child(process, log, marker_dir)


@contextmanager
def child_process(
    command: Sequence[str],
    log: Path,
    marker_dir: Path,
    *,
    pause_at: str = "",
    env: dict | None = None,
) -> Iterator[Child]:
    """``start_child`` for a ``with`` block; on the way out (a failure, Ctrl-C) a running child
    is killed."""
    child = start_child(command, log, marker_dir, pause_at=pause_at, env=env)
    try:
        yield child
    finally:
        if child.alive() or group_members(child.pgid):
            child.kill()


def python_path() -> str:
    """PYTHONPATH with the course's modules (streaming_tutorial/) first, then any the caller had."""
    return os.pathsep.join(filter(None, [str(paths.LESSONS_DIR), os.environ.get("PYTHONPATH")]))


def python_command(script: Path, *args: str) -> list[str]:
    """Run ``script`` with this interpreter (the course's venv)."""
    return [sys.executable, str(script), *args]


# --- input and verification ---------------------------------------------------------------


def numbered_records(
    first: int,
    count: int,
    *,
    seed: int,
    base_time: datetime,
    step_seconds: int = 10,
    users: int = 4,
) -> list[dict]:
    """``count`` records with unique ids R-0001..., a user, an amount and an event time.

    A pure function of (first, count, seed, base_time): record n is the same in every call
    that includes it. Event times advance by ``step_seconds`` per record, give or take
    a few seconds (slightly out of order, never by more than ``step_seconds``).
    """
    records = []
    for number in range(first, first + count):
        rng = random.Random(seed * 100_003 + number)
        moment = base_time + timedelta(
            seconds=number * step_seconds + rng.randint(-step_seconds // 2, 0)
        )
        records.append(
            {
                "record_id": f"R-{number:04d}",
                "user_id": f"USER-{rng.randint(1, users)}",
                "amount": round(rng.uniform(5, 200), 2),
                "event_time": iso(moment),
            }
        )
    return records


def write_records(folder: Path, name: str, records: Iterable[dict]) -> Path:
    """One JSON Lines file, written atomically (a file source never sees half of it)."""
    # Its queries read these records through Spark: a local folder, not remote storage.
    storage.require_local_input("This lesson", folder)
    return files.write_atomically(folder, name, files.json_lines(records))


@dataclass
class Tally:
    """Rows of the input vs rows a sink holds, by record id."""

    lost: int  # input ids the sink does not hold
    duplicated: int  # extra copies: an id held 3 times counts 2
    unexpected: int  # ids the sink holds that were never input

    def __str__(self) -> str:
        return f"rows lost: {self.lost}, rows duplicated: {self.duplicated}"


def tally(input_ids: Iterable[str], output_ids: Iterable[str]) -> Tally:
    """Count what a sink lost or wrote twice, from the input's ids and the sink's ids (one per
    row)."""
    wanted = set(input_ids)
    held = Counter(output_ids)
    return Tally(
        lost=len(wanted - held.keys()),
        duplicated=sum(count - 1 for count in held.values()),
        unexpected=len(held.keys() - wanted),
    )


def sqlite_ids(database: Path) -> list[str]:
    """The record ids a SQLite sink's ``events`` table holds, one per row (none before its first
    write)."""
    if not database.exists():
        return []
    with closing(sqlite3.connect(database)) as db:
        return [record_id for (record_id,) in db.execute("SELECT record_id FROM events")]


def partition_ranges(records) -> str:
    """Which records each partition of a batch DataFrame holds, as the session splits its
    files now: "partition 0 = R-0001..R-0006, partition 1 = R-0007..R-0012"."""
    ranges = (
        records.groupBy(F.spark_partition_id().alias("partition"))
        .agg(F.min("record_id").alias("first"), F.max("record_id").alias("last"))
        .orderBy("partition")
        .collect()
    )
    return ", ".join(f"partition {number} = {first}..{last}" for number, first, last in ranges)


def logged_batches(checkpoint: Path) -> str:
    """What a checkpoint's offsets/ and commits/ hold right now, e.g. "offsets/ 0 1, commits/ 0"."""
    return ", ".join(
        f"{log}/ {' '.join(map(str, checkpoints.batch_ids(checkpoint / log))) or '(empty)'}"
        for log in ("offsets", "commits")
    )


def logged_batches_of(root: Path, *names: str) -> str:
    """``logged_batches`` of several query checkpoints under ``root``:
    "events: offsets/ 0, commits/ 0; ..."."""
    return "; ".join(f"{name}: {logged_batches(root / name)}" for name in names)


@dataclass
class ChildRuns:
    """Children that run one command with different arguments, each with a log named after it."""

    command: Sequence[str]
    logs: Path

    def __call__(self, name: str, *args: str, pause_at: str = ""):
        """``child_process`` for ``command + args``; its log is ``logs/<name>.log``."""
        return child_process(
            [*self.command, *args],
            self.logs / f"{name}.log",
            self.logs / "markers",
            pause_at=pause_at,
            # The child's Python workers (a PausableWriter runs in them) import this module.
            env={"PYTHONPATH": python_path()},
        )

    @classmethod
    def of_lesson(cls, lesson_file: str | Path, args, logs: Path) -> "ChildRuns":
        """Children that run the lesson file itself, with the parent's --checkpoint-dir (if any)."""
        own = (
            ["--checkpoint-dir", str(args.checkpoint_dir)]
            if getattr(args, "checkpoint_dir", None)
            else []
        )
        return cls(python_command(Path(lesson_file), *own), logs)


# --- a source that cannot replay ------------------------------------------------------------


class LineServer:
    """A TCP server that sends lines to whoever is connected now, like the course's socket server.

    Lines sent while no client is connected go nowhere: a socket keeps no history.
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._server = socket.create_server((host, 0))
        self.host = host
        self.port = self._server.getsockname()[1]
        self._clients: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="line-server").start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:  # closed
                return
            with self._lock:
                self._clients.append(client)

    def connections(self) -> int:
        with self._lock:
            return len(self._clients)

    def send(self, *lines: str) -> int:
        """Send ``lines`` to every open connection; how many connections got them."""
        sent = 0
        with self._lock:
            for client in list(self._clients):
                try:
                    client.sendall("".join(line + "\n" for line in lines).encode())
                    sent += 1
                except OSError:  # that client went away
                    self._clients.remove(client)
        return sent

    def serve(
        self, start: Callable[[], object], *lines: str, timeout: float = MARKER_TIMEOUT_SECONDS
    ):
        """Drop the old connections, ``start()`` a socket query, wait for it to connect, send it
        ``lines``; the query."""
        self.drop_clients()
        query = start()
        wait_until(lambda: self.connections() > 0, "a connection to the line server", timeout)
        self.send(*lines)
        return query

    def drop_clients(self) -> None:
        """Close every connection: the query that read from it is gone."""
        with self._lock:
            for client in self._clients:
                client.close()
            self._clients.clear()

    def close(self) -> None:
        self.drop_clients()
        self._server.close()

    def __enter__(self) -> "LineServer":
        return self

    def __exit__(self, *_) -> None:
        self.close()


def socket_gap(start: Callable[[LineServer, list, Path], object], checkpoints_root: Path) -> dict:
    """What a socket query sees around a restart; ``start(server, seen, checkpoint)`` starts it,
    collecting lines.

    A query reads "line 1" and "line 2" and stops; "sent while down" goes to no one; a
    restart on the same checkpoint is shown failing once "line 3" arrives (its line count
    starts again below the committed one); a restart on a new checkpoint reads "line 4".
    Returns the lines each run received and what the refused restart said.
    """
    first = []  # the lines the first query received
    old = []  # the restart on the same checkpoint
    new = []  # the restart on a new checkpoint
    with LineServer() as server:
        query = server.serve(
            lambda: start(server, first, checkpoints_root / "socket"), "line 1", "line 2"
        )
        wait_until(lambda: len(first) == 2, "the first two lines", 60)
        stop_between_batches(query)
        server.drop_clients()
        print(
            f"the query received {first} and stopped; 'sent while down' reached "
            f"{server.send('sent while down')} queries",
            flush=True,
        )
        refusal = show_refusal(
            lambda: server.serve(lambda: start(server, old, checkpoints_root / "socket"), "line 3"),
            "A restart on the same checkpoint, once a line arrives,",
        )
        query = server.serve(lambda: start(server, new, checkpoints_root / "socket-new"), "line 4")
        wait_until(lambda: len(new) == 1, "line 4", 60)
        stop_between_batches(query)
    print(f"a restart on a new checkpoint received: {new}", flush=True)
    return {"first": first, "old": old, "new": new, "refusal": refusal}
