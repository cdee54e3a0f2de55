"""How every lesson runs: one session, bounded queries, one stop policy, a clean exit.

A lesson's ``main()`` reads like this::

    def main(argv=None):
        args = cli.lesson_parser(__doc__).parse_args(argv)
        with lesson_session(LESSON, args) as spark:
            query = start_counts(
                build_counts(read_events(spark)), checkpoint, pick_trigger(args, "2 seconds")
            )
            run_queries([query], args)

    if __name__ == "__main__":
        run_lesson(main)

The policy, the same in every lesson (``run_queries``):

- ``--available-now``: every query reads what is there and ends by itself; the lesson
  waits for that (``AVAILABLE_NOW_TIMEOUT`` only guards against a hang).
- otherwise the queries run until ``--duration`` seconds have passed, or until the
  lesson's input is done (its simulator finished) and everything it wrote is processed;
- a first micro-batch still running when the time is up (a cold JVM on a slow laptop)
  gets ``FIRST_BATCH_GRACE_SECONDS`` more, so a short run still shows a result;
- queries stop *between* micro-batches, and a query's failure is raised, not hidden.

``run_lesson`` turns Ctrl-C into a clean stop (exit 130) and a failure that
``errors.explain`` recognises into one paragraph of advice next to Spark's own words.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from common import paths, storage
from infra import checkpoint_health, checkpoints
from infra.environment import require_writable
from infra.errors import CourseError, explain
from teaching.narration import WIDTH, banner, say  # noqa: F401  (lessons import the narration from here too)

POLL_SECONDS = 0.5  # how often the run loop looks at its queries
EVERY_SECONDS = (
    3.0  # default pace of a lesson's ``every`` callback (e.g. a SQL look at a memory table)
)
FIRST_BATCH_GRACE_SECONDS = 60  # extra time for a first micro-batch on a cold JVM
AVAILABLE_NOW_TIMEOUT = 600  # an availableNow query still running after this long is stuck
STOP_WAIT_SECONDS = 10  # how long a stop waits for a running micro-batch to finish
MIN_WAIT_SECONDS = (
    0.01  # awaitTermination takes whole ms and refuses 0 ("Timeout has to be positive")
)


def checkpoint_root(lesson: str, args) -> Path:
    """This lesson's checkpoint folder: --checkpoint-dir, or checkpoints/<lesson>."""
    chosen = getattr(args, "checkpoint_dir", None)
    return Path(chosen).resolve() if chosen else paths.checkpoint_for(lesson)


def reset_lesson(lesson: str, args, spark=None) -> None:
    """Delete this lesson's checkpoints and output (the --reset flag): without ``spark`` the local
    folders, with it those on remote storage (through the JVM's Hadoop FileSystem,
    storage.delete)."""
    root = checkpoint_root(lesson, args)
    for folder in (root, paths.output_for(lesson)):
        if paths.is_remote(folder):
            if spark is not None and storage.delete(spark, folder):
                print(f"--reset: deleted {paths.uri(folder)}", flush=True)
        elif spark is None and folder.exists():
            paths.remove_tree(folder, allow_outside=folder == root)
            print(f"--reset: deleted {paths.display(folder)}", flush=True)


def pick_trigger(args, interval: str) -> dict:
    """The trigger the flags ask for, as keyword arguments of ``DataStreamWriter.trigger``.

    ``--available-now``: read everything there is, in as many micro-batches as the
    source's limits say, then stop. Otherwise one micro-batch every ``interval``.
    """
    if getattr(args, "available_now", False):
        return {"availableNow": True}
    return {"processingTime": interval}


@contextmanager
def lesson_session(lesson: str, args, **spark_options) -> Iterator:
    """The lesson's SparkSession; on the way out every query and the session stop.

    It first checks the lesson's checkpoints and stops with advice (CourseError) when one is
    damaged (``require_whole_checkpoints``), then says what they hold, so a second run says
    what it resumes. ``spark_options`` go to :func:`common.session.get_spark` (``kafka=True``,
    ``delta=True``, ``jdbc=True``).
    """
    from common.session import get_spark

    # Line-buffered stdout keeps our prints and the JVM's console-sink tables in order.
    sys.stdout.reconfigure(line_buffering=True)
    if paths.STORAGE:  # the simulators and child processes the lesson starts use the same storage
        os.environ[paths.STORAGE_ENV] = paths.STORAGE
    reset = getattr(args, "reset", False)
    if reset:
        reset_lesson(lesson, args)
    root = checkpoint_root(lesson, args)
    found = require_whole_checkpoints(root)
    print(checkpoints.describe(root, found), flush=True)
    # A folder Spark cannot write fails the first micro-batch after the JVM start: say so before it.
    # (Remote storage is out of Python's reach: Spark's own error says it, if it comes to that.)
    require_writable(
        {
            what: folder
            for what, folder in {
                "checkpoint folder": root,
                "output folder": paths.output_for(lesson),
            }.items()
            if not paths.is_remote(folder)
        }
    )
    spark = get_spark(
        lesson,
        master=getattr(args, "master", None),
        log_file=paths.log_for(lesson),
        **spark_options,
    )
    if reset and paths.REMOTE_ROOT:
        reset_lesson(lesson, args, spark)
    if threading.current_thread() is threading.main_thread():
        # pyspark's Ctrl-C handler cancels every running Spark job first, killing a
        # micro-batch half-way. The plain handler only raises KeyboardInterrupt, and
        # run_queries lets the running batch finish before it stops the queries.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield spark
    finally:
        for query in spark.streams.active:
            stop_between_batches(query)
        spark.stop()
        record_checkpoints(root)  # a second look: the queries changed the folder


# The checkpoint folders this process's lessons checked before Spark started: a failure that
# errors.explain does not know is diagnosed there once more (run_lesson).
CHECKED_ROOTS: list[Path] = []


def require_whole_checkpoints(root: Path) -> list[Path]:
    """Stop with advice (CourseError) when a checkpoint under ``root`` is damaged, before Spark
    starts: Spark would fail with a JVM trace, or go on and silently read input again. Nothing
    is repaired here; the advice names the files to remove or restore. A whole checkpoint's
    query id is recorded at its place (to recognise it later in another query's place).
    Returns the query checkpoints found (one look at ``root``, checkpoints.find)."""
    CHECKED_ROOTS.append(root)
    found = checkpoints.find(root)
    damages = checkpoint_health.diagnose_all(root, found)
    if damages:
        raise CourseError(
            "The lesson stopped before Spark started.\n" + checkpoint_health.advice(damages)
        )
    record_checkpoints(root, found)
    return found


def record_checkpoints(root: Path, found: list[Path] | None = None) -> None:
    """Record each query id under ``root`` at its place (checkpoint_health.remember); ``found``:
    the query checkpoints there when the caller has just looked, else they are looked for."""
    try:
        checkpoint_health.remember(checkpoints.find(root) if found is None else found)
    except OSError:
        # The record (in .runtime/) only helps name a checkpoint moved into another query's
        # place later; a course folder that cannot be written is reported where it matters.
        return


def run_queries(
    queries: Sequence,
    args,
    *,
    until: Callable[[], bool] | None = None,
    every: Callable[[], None] | None = None,
    every_seconds: float = EVERY_SECONDS,
) -> None:
    """Run ``queries`` by the course's one policy (see the module docstring).

    ``args`` are the lesson's flags (``duration``, ``available_now``); ``until()`` says
    when no more input will come (e.g. ``Simulator.done``), after which the queries
    process what is there and stop; ``every()`` runs every ``every_seconds`` meanwhile.
    Raises the failure of a query that failed.
    """
    available_now = getattr(args, "available_now", False)
    started = time.monotonic()
    deadline = started + (AVAILABLE_NOW_TIMEOUT if available_now else args.duration)
    last_every, drainer = started, None
    with ctrl_c_between_calls() as check_ctrl_c:
        try:
            while True:
                active = [query for query in queries if query.isActive]
                if not active:
                    break
                for query in active:  # awaitTermination raises the query's failure, if any
                    query.awaitTermination(max(POLL_SECONDS / len(active), MIN_WAIT_SECONDS))
                    check_ctrl_c()
                now = time.monotonic()
                if every is not None and now - last_every >= every_seconds:
                    last_every = now
                    every()
                if drainer is None and until is not None and not available_now and until():
                    drainer = drain_in_background(active)
                if drainer is not None and not drainer.is_alive():
                    break
                if now >= deadline:
                    if available_now:
                        raise TimeoutError(
                            f"availableNow queries still running after {AVAILABLE_NOW_TIMEOUT} s"
                        )
                    if not (
                        first_batch_running(active) and now < deadline + FIRST_BATCH_GRACE_SECONDS
                    ):
                        break
        finally:
            for query in queries:
                stop_between_batches(query)
    raise_failure(queries)


def finish(queries: Sequence, timeout: float = AVAILABLE_NOW_TIMEOUT) -> None:
    """Wait for availableNow (or finite) queries to end by themselves; raise a failure."""
    deadline = time.monotonic() + timeout
    with ctrl_c_between_calls() as check_ctrl_c:
        try:
            for query in queries:
                while not query.awaitTermination(POLL_SECONDS):
                    check_ctrl_c()
                    if time.monotonic() >= deadline:
                        raise TimeoutError(
                            f"query {query.name} did not finish its input within {timeout} s"
                        )
        finally:
            for query in queries:
                stop_between_batches(query)
    raise_failure(queries)


def raise_failure(queries: Sequence) -> None:
    for query in queries:
        failure = query.exception()
        if failure is not None:
            raise failure


@contextmanager
def ctrl_c_between_calls() -> Iterator[Callable[[], None]]:
    """While the run loop waits for its queries, Ctrl-C is noted, not raised where it lands;
    the loop calls the yielded ``check()`` between its calls into the JVM, which raises
    KeyboardInterrupt once Ctrl-C was pressed. A second Ctrl-C raises at once.

    Why: Python raises KeyboardInterrupt wherever the main thread is, most often inside a
    py4j call that is waiting for the JVM's answer. That call's connection is then left
    half-read, and the next call, the one that stops the query between batches, can fail
    with "Answer from Java side is empty" instead of stopping it (seen under load).
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None  # signal handlers belong to the main thread; there Ctrl-C is not ours
        return
    pressed = threading.Event()

    def check() -> None:
        if pressed.is_set():
            raise KeyboardInterrupt

    def note(signum, frame) -> None:
        check()  # a second Ctrl-C: out at once
        pressed.set()

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)


def first_batch_running(queries: Sequence) -> bool:
    """True while a query has not finished its first micro-batch (still starting, or planning and
    running its first batch with input on a cold JVM). A query with no input reports an empty
    progress within ``noDataProgressEventInterval`` (10 s), which ends the grace."""
    for query in queries:
        progress = query.recentProgress
        if not progress:
            return True
        done_any = any(entry["numInputRows"] > 0 for entry in progress)
        if not done_any and query.status["isTriggerActive"]:
            return True
    return False


def drain_in_background(queries: Sequence) -> threading.Thread:
    """Let every query process all the input there is now, in a thread.

    ``processAllAvailable`` blocks without a timeout of its own; in a thread, the run
    loop keeps its deadline and its ``every`` callback.
    """

    def process_all() -> None:
        try:
            for query in queries:
                if query.isActive:
                    query.processAllAvailable()
        except Exception:  # the failure is raised by raise_failure in the caller
            return

    drainer = threading.Thread(target=process_all, daemon=True, name="drain-queries")
    drainer.start()
    return drainer


def wait_until(
    ready: Callable[[], bool],
    what: str,
    timeout: float,
    *,
    failed: Callable[[], str | None] = lambda: None,
    error: type[Exception] = TimeoutError,
    poll: float = 0.1,
) -> None:
    """Poll until ``ready()``. Raise ``error`` naming ``what`` after ``timeout`` seconds, or with
    ``failed()``'s reason as soon as it gives one (why ``ready()`` never will be true)."""
    deadline = time.monotonic() + timeout
    while not ready():
        reason = failed()
        if reason:
            raise error(reason)
        if time.monotonic() >= deadline:
            raise error(f"{what} did not happen within {timeout:g} s")
        time.sleep(poll)


def stop_between_batches(query, wait: float = STOP_WAIT_SECONDS) -> None:
    """Stop ``query`` between two micro-batches: once it is idle, or as soon as the batch it is
    running has committed (at most ``wait`` seconds).

    Stopping mid-batch cancels its Spark jobs; with a Python foreachBatch sink Spark then
    prints a StackOverflowError with a thousand-line trace while it inspects the
    cancelled job's error. Nothing is lost either way (an uncommitted batch runs again after
    a restart), but waiting for the commit keeps the output clean. A query with a backlog
    (``availableNow``) or a real-time query is never idle: the next batch starts at once,
    so "between batches" is the moment its last progress report changes.
    """
    last = query.lastProgress
    seen = last["batchId"] if last else None
    deadline = time.monotonic() + wait
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        last = query.lastProgress
        if last is not None and last["batchId"] != seen:
            break
        time.sleep(0.02)
    if query.isActive:
        query.stop()


def is_real_time(query) -> bool:
    """True for a query in real-time mode (Spark 4.1+; ``trigger(realTime=...)`` in pyspark 4.2)."""
    try:
        trigger = (
            query._jsq.streamingQuery().trigger()
        )  # the JVM query's Trigger; no Python API says it
    except Exception:  # Spark Connect, or a query object without a JVM side
        return False
    return trigger.getClass().getSimpleName() == "RealTimeTrigger"


def drain(queries: Sequence, timeout: float = AVAILABLE_NOW_TIMEOUT) -> None:
    """Let every query process all the input there is now, then stop it between batches.

    For a finite input with a trigger that never ends by itself (the default, processingTime):
    the counterpart of ``finish``. Raises a query's failure; TimeoutError after ``timeout`` s.
    """
    drainer = drain_in_background([query for query in queries if query.isActive])
    deadline = time.monotonic() + timeout
    with ctrl_c_between_calls() as check_ctrl_c:
        try:
            while drainer.is_alive() and time.monotonic() < deadline:
                drainer.join(POLL_SECONDS)
                check_ctrl_c()
        finally:
            for query in queries:
                stop_between_batches(query)
    raise_failure(queries)
    if drainer.is_alive():
        raise TimeoutError(f"the queries did not process their input within {timeout} s")


# Java exceptions that mean "this thread was interrupted": what a stopped query's jobs raise.
INTERRUPTIONS = (
    "java.lang.InterruptedException",
    "java.io.InterruptedIOException",
    "java.nio.channels.ClosedByInterruptException",
)


def foreach_batch(handler: Callable) -> Callable:
    """Wrap a foreachBatch function so that stopping its query mid-batch ends quietly.

    A stop interrupts the batch's Spark jobs. Spark recognises the interruption by a
    regular expression over the Python error, which overflows the JVM's stack on the
    long Java trace it carries. Re-raising it as a one-line error lets Spark recognise
    it. Every other error passes through unchanged.
    """

    @functools.wraps(handler)
    def run(batch, batch_id: int):
        try:
            return handler(batch, batch_id)
        except Exception as error:
            interruption = next((name for name in INTERRUPTIONS if name in str(error)), None)
            if interruption is None:
                raise
            raise RuntimeError(
                f"py4j.protocol.Py4JJavaError: An error occurred while calling a Spark job: "
                f"{interruption}"
            ) from None

    return run


class _HidePy4JInterruptTraceback(logging.Filter):
    """py4j logs a traceback whenever Ctrl-C interrupts a call into the JVM, and often a
    second one when it then closes that connection (a broken pipe, during the Ctrl-C); for
    a learner pressing Ctrl-C that is noise. Other errors pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("KeyboardInterrupt while sending command"):
            return False
        return not (
            message.startswith("Exception occurred while shutting down connection")
            and _during_ctrl_c(record.exc_info[1] if record.exc_info else None)
        )


def _during_ctrl_c(error: BaseException | None) -> bool:
    """True when ``error`` is a KeyboardInterrupt or happened while one was being handled."""
    while error is not None:
        if isinstance(error, KeyboardInterrupt):
            return True
        error = error.__context__
    return False


def run_lesson(
    main: Callable[[list[str] | None], int | None], argv: list[str] | None = None
) -> None:
    """Run a lesson's main(): exit 0 at its end, 130 on Ctrl-C, 1 with advice on a known failure."""
    hide = _HidePy4JInterruptTraceback()
    logging.getLogger().addFilter(hide)  # py4j's logging.exception(...) goes to the root logger
    logging.getLogger("py4j.clientserver").addFilter(
        hide
    )  # a logger's filters see only its own records
    try:
        code = main(argv) or 0
    except KeyboardInterrupt:
        print(
            "\nStopped with Ctrl-C: queries and Spark shut down; checkpoints are kept.",
            file=sys.stderr,
        )
        code = 130
    except Exception as error:
        from common.session import run_log

        advice = explain(error) or damaged_checkpoint_advice()
        log = run_log()  # None when the JVM logged nothing (or never started)
        where = ""
        if log is not None:
            where = f"The JVM's log of this run, with its stack traces: {paths.display(log)}"
        if advice is None:
            if where:  # shown under the traceback, which has Spark's own message
                error.add_note(where)
            raise
        print("\n" + advice, file=sys.stderr)
        if where:
            print(where, file=sys.stderr)
        code = 1
    sys.exit(code)


def damaged_checkpoint_advice() -> str | None:
    """After a failure errors.explain does not know: the advice for a checkpoint of this lesson
    that is damaged now (e.g. a log entry Spark could not parse, whose message names no file),
    or None. It was whole when the lesson started."""
    damages = [damage for root in CHECKED_ROOTS for damage in checkpoint_health.diagnose_all(root)]
    return checkpoint_health.advice(damages) if damages else None
