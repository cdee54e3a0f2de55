"""How every lesson runs: a session, bounded queries, a clean stop.

A lesson's ``main()`` reads like this::

    def main(argv=None):
        args = cli.lesson_parser(__doc__).parse_args(argv)
        with lesson_session(LESSON, args) as spark:
            query = build_something(source(spark)).writeStream...start()
            await_queries([query], args.duration)

    if __name__ == "__main__":
        run_lesson(main)

``run_lesson`` turns Ctrl-C into a clean stop and a known failure into one
paragraph of advice instead of a stack trace.
"""

from __future__ import annotations

import functools
import logging
import signal
import sys
import textwrap
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from . import paths
from .errors import explain

BANNER_WIDTH = 72
MIN_WAIT_SECONDS = 0.01  # shorter waits round down to 0 ms, which the JVM refuses
STOP_WAIT_SECONDS = 10  # how long a stop waits for a running micro-batch to finish


def banner(title: str) -> None:
    """A section heading on stdout, so the learner can find each part of the output."""
    print(f"\n{'=' * BANNER_WIDTH}\n{title}\n{'=' * BANNER_WIDTH}", flush=True)


def say(text: str) -> None:
    """A paragraph for the learner, wrapped, on stdout."""
    # Collapse all whitespace first: a triple-quoted paragraph whose first line is not
    # indented would otherwise keep its continuation lines' indentation inside the text.
    print(textwrap.fill(" ".join(text.split()), width=BANNER_WIDTH), flush=True)


def checkpoint_root(lesson: str, args) -> Path:
    """This lesson's checkpoint folder: --checkpoint-dir, or checkpoints/<lesson>."""
    return Path(args.checkpoint_dir).resolve() if getattr(args, "checkpoint_dir", None) else paths.checkpoint_for(lesson)


def reset_lesson(lesson: str, args) -> None:
    """Delete this lesson's checkpoints and output (the --reset flag)."""
    for folder in (checkpoint_root(lesson, args), paths.output_for(lesson)):
        if folder.exists():
            if paths.COURSE_HOME in folder.resolve().parents:
                paths.remove_tree(folder)
            else:  # a --checkpoint-dir the learner chose outside the project
                import shutil

                shutil.rmtree(folder, ignore_errors=True)
            print(f"--reset: deleted {paths.display(folder)}", flush=True)


@contextmanager
def lesson_session(lesson: str, args, **spark_options) -> Iterator:
    """The lesson's SparkSession; on the way out every query and the session stop.

    ``spark_options`` go to :func:`common.session.get_spark` (``kafka=True``,
    ``delta=True``, ``jdbc=True``).
    """
    from .session import get_spark

    # Line-buffered stdout keeps our prints and the JVM's console-sink tables in order.
    sys.stdout.reconfigure(line_buffering=True)
    if getattr(args, "reset", False):
        reset_lesson(lesson, args)
    spark = get_spark(lesson, master=getattr(args, "master", None), **spark_options)
    if threading.current_thread() is threading.main_thread():
        # pyspark's Ctrl-C handler cancels every running Spark job first, killing a
        # micro-batch half-way (with foreachBatch, Spark then prints a thousand-line
        # StackOverflowError). The plain handler only raises KeyboardInterrupt, and
        # await_queries lets the running batch finish before it stops the queries.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield spark
    finally:
        stop_all(spark)
        spark.stop()


def stop_all(spark) -> None:
    for query in spark.streams.active:
        query.stop()


def await_queries(queries: Sequence, duration: float) -> None:
    """Let the queries run until they finish by themselves or ``duration`` seconds pass.

    Queries with ``availableNow`` (or a finite source) finish by themselves; the
    others are stopped when the time is up. A query that failed raises here.
    """
    deadline = time.monotonic() + duration
    try:
        for query in queries:
            remaining = deadline - time.monotonic()
            # awaitTermination takes whole milliseconds and refuses 0: "Timeout has to be positive".
            if remaining < MIN_WAIT_SECONDS:
                break
            query.awaitTermination(remaining)
    finally:
        for query in queries:
            stop_between_batches(query)
    for query in queries:
        failure = query.exception()
        if failure is not None:
            raise failure


def stop_between_batches(query, wait: float = STOP_WAIT_SECONDS) -> None:
    """Stop ``query``, letting the micro-batch it is running (if any) finish first.

    Stopping in the middle of a batch cancels its Spark jobs; when the sink is a Python
    foreachBatch function, Spark then prints a StackOverflowError with a thousand-line
    stack trace while it inspects the cancelled job's error. Waiting (at most ``wait``
    seconds) for the batch to commit avoids that and loses nothing.
    """
    deadline = time.monotonic() + wait
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.1)
    if query.isActive:
        query.stop()


class _HidePy4JInterruptTraceback(logging.Filter):
    """py4j logs a traceback on the root logger whenever Ctrl-C interrupts a call into
    the JVM (it then closes that connection correctly). For a learner pressing Ctrl-C
    that traceback is noise, so this one record is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("KeyboardInterrupt while sending command")


# Java exceptions that mean "this thread was interrupted": what a stopped query's jobs raise.
INTERRUPTIONS = ("java.lang.InterruptedException", "java.io.InterruptedIOException",
                 "java.nio.channels.ClosedByInterruptException")


def foreach_batch(handler: Callable) -> Callable:
    """Wrap a foreachBatch function so that stopping its query mid-batch ends quietly.

    A stop interrupts the batch's Spark jobs. Spark then recognises the interruption by
    matching a regular expression against the Python error, which overflows the JVM's
    stack on the long Java trace it carries: a thousand-line StackOverflowError on
    stderr. Re-raising the interruption as a one-line error lets Spark recognise it.
    Every other error passes through unchanged.
    """

    @functools.wraps(handler)
    def run(batch, batch_id: int):
        try:
            return handler(batch, batch_id)
        except Exception as error:
            if not any(name in str(error) for name in INTERRUPTIONS):
                raise
            interruption = next(name for name in INTERRUPTIONS if name in str(error))
            raise RuntimeError(
                f"py4j.protocol.Py4JJavaError: An error occurred while calling a Spark job: {interruption}"
            ) from None

    return run


def run_lesson(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None) -> None:
    """Run a lesson's main(): exit 0 when it ends, 130 on Ctrl-C, 1 with advice on a known failure."""
    logging.getLogger().addFilter(_HidePy4JInterruptTraceback())
    try:
        code = main(argv) or 0
    except KeyboardInterrupt:
        print("\nStopped with Ctrl-C: queries and Spark shut down; checkpoints are kept.", file=sys.stderr)
        code = 130
    except Exception as error:
        advice = explain(error)
        if advice is None:
            raise
        print("\n" + textwrap.fill(advice, width=BANNER_WIDTH), file=sys.stderr)
        code = 1
    sys.exit(code)
