"""Two ways a lesson shows Spark's rules instead of describing them.

- ``show_refusal``: try a query Spark does not allow, and print Spark's own message.
- ``replay``: run a small, fixed scenario micro-batch by micro-batch (one file per
  batch, ``common.microbatch``) and print what the sink received in each.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from . import paths
from .errors import CourseError
from .microbatch import Run, collect_batches, stream_batches, write_batches
from .narration import first_line

REFUSAL_TIMEOUT_SECONDS = 120  # a refused query that started must fail within this long


def show_refusal(attempt: Callable[[], object], what: str) -> str:
    """Run ``attempt`` (which Spark must refuse), print Spark's message, and return it.

    ``what`` names the attempt for the learner ("Append on an aggregation without a
    watermark"). Most refusals come from ``start()`` (an AnalysisException); some
    only when the query runs: if ``attempt`` returns a started query, its failure is
    awaited and shown. Spark accepting the attempt is a bug in the lesson: CourseError.
    """
    try:
        query = attempt()
        if query is not None and hasattr(query, "awaitTermination"):
            try:
                query.awaitTermination(REFUSAL_TIMEOUT_SECONDS)
            finally:
                if query.isActive:
                    query.stop()
            if query.exception() is not None:
                raise query.exception()
    except Exception as error:  # AnalysisException at start(), StreamingQueryException when it runs
        message = first_line(error)
        print(f"{what} fails:\n  {message}", flush=True)
        return str(error)
    raise CourseError(f"{what} unexpectedly worked: this Spark version allows what the lesson says it refuses.")


@dataclass
class Output:
    """One query of a replay: how to build it from the scenario's stream, and its output mode."""

    build: Callable  # streaming DataFrame -> streaming DataFrame
    mode: str = "append"
    sort_key: Callable | None = None


def replay(spark, batches: Sequence[Sequence[dict]], schema, outputs: dict[str, Output], workdir: Path, *,
           describe_input: Callable[[Sequence[dict]], str],
           describe_rows: Callable[[list], str],
           show: bool = True) -> dict[str, Run]:
    """Run each output over the scenario, one input file per micro-batch, from a fresh start.

    Prints, batch by batch, what the batch read, the watermark it ran with, and what
    each output sent to its sink. Returns the runs (rows and progress per batch).
    The scenario starts afresh every time (input and checkpoints under ``workdir``),
    so a lesson shows the same table on every run.
    """
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    stream = stream_batches(spark, write_batches(workdir / "input", batches), schema)

    def run(label: str, output: Output) -> Run:
        return collect_batches(output.build(stream), workdir / "checkpoints" / label,
                               output_mode=output.mode, sort_key=output.sort_key)

    # Independent queries: running them at once takes about half the time on two cores.
    with ThreadPoolExecutor(max_workers=len(outputs)) as pool:
        futures = {label: pool.submit(run, label, output) for label, output in outputs.items()}
        runs = {label: future.result() for label, future in futures.items()}
    if show:
        print_replay(batches, runs, describe_input, describe_rows)
    return runs


def print_replay(batches, runs: dict[str, Run], describe_input, describe_rows) -> None:
    """What each batch read, its watermark, and what each output sent to its sink."""
    ids = sorted({batch.batch_id for run in runs.values() for batch in run.batches})
    width = max(len(label) for label in runs)
    lines = []
    for batch_id in ids:
        read = describe_input(batches[batch_id]) if batch_id < len(batches) else \
            "nothing new (the watermark moved, so Spark runs one more batch)"
        lines.append(f"Batch {batch_id} reads: {read}")
        for label, run in runs.items():
            batch = next((b for b in run.batches if b.batch_id == batch_id), None)
            if batch is None:
                continue
            mark = short_time(batch.watermark)
            rows = describe_rows(batch.rows) if batch.rows else "(nothing)"
            lines.append(f"  {label:<{width}}  {rows}" + (f"   [watermark {mark}]" if mark else ""))
    print("\n".join(lines), flush=True)


def short_time(watermark: str | None) -> str:
    """'2025-01-15T10:30:14.000Z' -> '10:30:14'; '' for no watermark (Spark reports the epoch)."""
    if not watermark or watermark.startswith("1970"):
        return ""
    return watermark[11:19]
