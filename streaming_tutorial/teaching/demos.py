"""Two ways a lesson shows Spark's rules instead of describing them.

- ``show_refusal``: try a query Spark does not allow, and print Spark's own message.
- ``replay``: run a small, fixed scenario micro-batch by micro-batch (one file per
  batch, ``teaching.microbatch``) and print what the sink received in each;
  ``replay_streams`` does the same for a query with several inputs (a stream-stream join).
- ``records_from_text`` / ``records_as_text``: a scenario written (and described) compactly.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from common import paths
from infra.errors import CourseError
from infra.files import json_lines, write_atomically
from teaching.microbatch import (
    Run,
    collect_batches,
    finish_run,
    start_collecting,
    stream_batches,
    write_batches,
)
from teaching.narration import first_line

REFUSAL_TIMEOUT_SECONDS = 120  # a refused query that started must fail within this long
# How Spark wraps the error of a query that failed while running (StreamingQueryException).
STREAM_FAILED = re.compile(r"^\[STREAM_FAILED\] Query \[[^\]]*\] terminated with exception: ")
SCENARIO_DAY = "2025-01-15"  # the day of every hand-made scenario (config.BASE_EVENT_TIME's)


def records_from_text(
    batches: Sequence[str], *fields: str, day: str = SCENARIO_DAY
) -> list[list[dict]]:
    """A scenario written compactly: one string per micro-batch, records separated by commas,
    values by spaces, in the order of ``fields``; a field ending in ``_time`` takes a time of
    day (HH:MM or HH:MM:SS) on ``day``, in UTC.

    ``records_from_text(["IMP-1 AD-1 10:00, IMP-2 AD-2 10:01", ""], "impression_id", "ad_id",
    "impression_time")`` is two micro-batches: two impressions, then nothing.
    """

    def value(field: str, text: str) -> str:
        return (
            f"{day}T{text}{':00' if text.count(':') == 1 else ''}Z"
            if field.endswith("_time")
            else text
        )

    return [
        [
            {field: value(field, text) for field, text in zip(fields, item.split(), strict=True)}
            for item in batch.split(",")
            if item.strip()
        ]
        for batch in batches
    ]


def records_as_text(records: Sequence[dict]) -> str:
    """The reverse, for ``describe_input``: 'IMP-1 AD-1 10:00, IMP-2 AD-2 10:01' ('-' for no
    records)."""

    def text(field: str, value) -> str:
        if not field.endswith("_time"):
            return str(value)
        clock = value[11:19]  # '2025-01-15T10:00:00Z' -> '10:00:00' -> '10:00'
        return clock[:5] if clock.endswith(":00") else clock

    return (
        ", ".join(
            " ".join(text(field, value) for field, value in record.items()) for record in records
        )
        or "-"
    )


@contextmanager
def jvm_logs_off() -> Iterator[None]:
    """Silence the JVM's log while a refusal is shown: a query that fails while it runs logs its
    failure at ERROR, with the stack traces of the task, the job and the query (over a hundred
    lines), before Spark gives its message to the lesson, which shows it once, in one line."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        yield
        return
    before = str(
        spark._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel()
    )  # WARN in the course
    spark.sparkContext.setLogLevel("OFF")
    try:
        yield
    finally:
        spark.sparkContext.setLogLevel(before)


def show_refusal(attempt: Callable[[], object], what: str) -> str:
    """Run ``attempt`` (which Spark must refuse), print Spark's message, and return it.

    ``what`` names the attempt for the learner ("Append on an aggregation without a
    watermark"). Most refusals come from ``start()`` (an AnalysisException); some
    only when the query runs: if ``attempt`` returns a started query, its failure is
    awaited and shown ("starts, then fails"). Spark accepting the attempt is a bug in the
    lesson: CourseError.
    """
    started = False
    try:
        with jvm_logs_off():
            query = attempt()
            if query is not None and hasattr(query, "awaitTermination"):
                started = True
                try:
                    query.awaitTermination(REFUSAL_TIMEOUT_SECONDS)
                finally:
                    if query.isActive:
                        query.stop()
                if query.exception() is not None:
                    raise query.exception()
    except Exception as error:  # AnalysisException at start(), StreamingQueryException when it runs
        if started:
            # start() accepted it; the query died afterwards, which query.exception(),
            # awaitTermination() or a listener's onQueryTerminated tells. Show Spark's reason, not
            # the "[STREAM_FAILED] Query [id ...]" wrapper.
            message = first_line(STREAM_FAILED.sub("", str(error).strip(), count=1))
            print(f"{what} starts, then fails (query.exception()):\n  {message}", flush=True)
            return str(error)
        message = first_line(error)
        print(f"{what} fails:\n  {message}", flush=True)
        return str(error)
    raise CourseError(
        f"{what} unexpectedly worked: this Spark version allows what the lesson says it refuses."
    )


@dataclass
class Output:
    """One query of a replay: how to build it from the scenario's stream, and its output mode."""

    build: Callable  # streaming DataFrame -> streaming DataFrame
    mode: str = "append"
    sort_key: Callable | None = None


def replay(
    spark,
    batches: Sequence[Sequence[dict]],
    schema,
    outputs: dict[str, Output],
    workdir: Path,
    *,
    describe_input: Callable[[Sequence[dict]], str] = records_as_text,
    describe_rows: Callable[[list], str],
    show: bool = True,
    edits: dict[int, Callable[[], str]] | None = None,
) -> dict[str, Run]:
    """Run each output over the scenario, one input file per micro-batch, from a fresh start.

    Prints, batch by batch, what the batch read, the watermark it ran with, and what
    each output sent to its sink. Returns the runs (rows and progress per batch).
    The scenario starts afresh every time (input and checkpoints under ``workdir``),
    so a lesson shows the same table on every run.

    ``edits`` ({batch number: change}) changes the world between micro-batches, e.g. the
    static side of a join: ``change()`` runs after the batch before it has finished, and
    the line it returns is printed before that batch. (The outputs then run one batch at
    a time; use it for queries without a watermark, which run no extra empty batches.)
    """
    return replay_streams(
        spark,
        {"input": (batches, schema)},
        outputs,
        workdir,
        describe_input=lambda inputs: describe_input(inputs["input"]),
        describe_rows=describe_rows,
        show=show,
        edits=edits,
    )


def replay_streams(
    spark,
    inputs: dict[str, tuple[Sequence[Sequence[dict]], object]],
    outputs: dict[str, Output],
    workdir: Path,
    *,
    describe_input: Callable[[dict[str, Sequence[dict]]], str] | None = None,
    describe_rows: Callable[[list], str],
    show: bool = True,
    edits: dict[int, Callable[[], str]] | None = None,
) -> dict[str, Run]:
    """``replay`` for a query with several inputs, e.g. a stream-stream join.

    ``inputs`` maps a name to (batches, schema); micro-batch N reads batch N of every
    input (an input with fewer batches reads nothing). Each output's ``build`` gets one
    stream per input, in the order of ``inputs``; ``describe_input`` gets
    ``{name: that input's records in the batch}`` (default: each input's records as text,
    separated by ' | ').
    """
    if describe_input is None:

        def describe_input(records: dict[str, Sequence[dict]]) -> str:
            return " | ".join(records_as_text(batch) for batch in records.values())

    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    count = max(len(batches) for batches, _ in inputs.values())
    scenario = [
        {
            name: list(batches[n]) if n < len(batches) else []
            for name, (batches, _) in inputs.items()
        }
        for n in range(count)
    ]
    folders = {name: workdir / "input" / name for name in inputs}
    for folder in folders.values():
        folder.mkdir(parents=True)
    if not edits:
        for name, folder in folders.items():
            write_batches(folder, [batch[name] for batch in scenario])
    streams = [stream_batches(spark, folders[name], schema) for name, (_, schema) in inputs.items()]
    notes: dict[int, str] = {}
    if edits:
        runs = _run_step_by_step(streams, outputs, workdir, scenario, folders, edits, notes)
    else:
        runs = _run_at_once(streams, outputs, workdir)
    if show:
        print_replay(scenario, runs, describe_input, describe_rows, notes)
    return runs


def _run_at_once(streams, outputs: dict[str, Output], workdir: Path) -> dict[str, Run]:
    def run(label: str, output: Output) -> Run:
        return collect_batches(
            output.build(*streams),
            workdir / "checkpoints" / label,
            output_mode=output.mode,
            sort_key=output.sort_key,
        )

    # Independent queries: running them at once takes about half the time on two cores.
    with ThreadPoolExecutor(max_workers=len(outputs)) as pool:
        futures = {label: pool.submit(run, label, output) for label, output in outputs.items()}
        return {label: future.result() for label, future in futures.items()}


def _run_step_by_step(
    streams,
    outputs: dict[str, Output],
    workdir: Path,
    scenario,
    folders,
    edits,
    notes: dict[int, str],
) -> dict[str, Run]:
    started = {
        label: start_collecting(
            output.build(*streams),
            workdir / "checkpoints" / label,
            output_mode=output.mode,
            sort_key=output.sort_key,
        )
        for label, output in outputs.items()
    }
    try:
        for number, batch in enumerate(scenario):
            if number in edits:
                notes[number] = edits[number]()
            for name, folder in folders.items():
                write_atomically(folder, f"batch-{number:04d}.json", json_lines(batch[name]))
            for query, _ in started.values():
                query.processAllAvailable()
    finally:
        for query, _ in started.values():
            query.stop()
    for query, _ in started.values():
        if query.exception() is not None:
            raise query.exception()
    return {label: finish_run(query, run) for label, (query, run) in started.items()}


def print_replay(
    batches,
    runs: dict[str, Run],
    describe_input,
    describe_rows,
    notes: dict[int, str] | None = None,
) -> None:
    """What each batch read, its watermark, and what each output sent to its sink (after
    ``notes[N]``, if any).

    ``describe_rows`` may return several lines (e.g. one per row): they line up under the first.
    """
    ids = sorted({batch.batch_id for run in runs.values() for batch in run.batches})
    width = max(len(label) for label in runs)
    lines = []
    for batch_id in ids:
        if batch_id in (notes or {}):
            lines.append(f"Before batch {batch_id}: {notes[batch_id]}")
        read = (
            describe_input(batches[batch_id])
            if batch_id < len(batches)
            else "nothing new (the watermark moved, so Spark runs one more batch)"
        )
        lines.append(f"Batch {batch_id} reads: {read}")
        for label, run in runs.items():
            batch = next((b for b in run.batches if b.batch_id == batch_id), None)
            if batch is None:
                continue
            mark = short_time(batch.watermark)
            first, *more = (describe_rows(batch.rows) if batch.rows else "(nothing)").split("\n")
            lines.append(
                f"  {label:<{width}}  {first}" + (f"   [watermark {mark}]" if mark else "")
            )
            lines.extend(
                f"  {'':<{width}}  {line}" for line in more
            )  # one row a line: under the first
    print("\n".join(lines), flush=True)


def short_time(watermark: str | None) -> str:
    """'2025-01-15T10:30:14.000Z' -> '10:30:14'; '' for no watermark (Spark reports the epoch)."""
    if not watermark or watermark.startswith("1970"):
        return ""
    return watermark[11:19]
