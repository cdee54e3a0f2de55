"""Lesson 15's demo machinery: small finite runs whose checkpoints the lesson reads back.

The lesson's subject (its processors, its state-store settings, its state reads) is in
15_state_store.py. What is here only runs things for it:

- ``views_of_u1``, ``views_by``: hand-written scenarios as shop events;
- ``session_conf``: session settings for a block (e.g. the state store provider, which
  a query reads when it starts from a fresh checkpoint), restored afterwards;
- ``run_scenario``: a query over a small finite input, for the checkpoint it leaves;
- ``run_afresh``: the same, with what each micro-batch output;
- ``start_restarted``: run a query, then start another version of it on the same checkpoint
  (what a changed state schema meets); ``rows_of`` its output once it has ended;
- ``run_twice``: run a query, then start it again on the same checkpoint once the wall clock
  has moved on (what a processing-time TTL needs); ``wait_until`` the clock;
- ``print_batches``: what each micro-batch of a run output, one line each (``describe_new_users``
  for part 9's windows).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from common import paths
from infra.files import json_lines, write_atomically
from infra.runner import finish
from teaching.demos import Output, replay_streams
from teaching.microbatch import (
    Run,
    collect_batches,
    finish_run,
    start_collecting,
    stream_batches,
    write_batches,
)

AVAILABLE_NOW_TIMEOUT = 120  # a small availableNow query still running after this long is stuck
CLOCK_POLL_SECONDS = 0.05  # how often wait_until looks at the clock


def views_of_u1(batches: Sequence[Sequence[tuple[str, str]]]) -> list[list[dict]]:
    """Micro-batches of (event id, time of day) as views of product P001 by user U1, on the
    course's day (2025-01-15, UTC)."""
    return [
        [
            {
                "event_id": event,
                "user_id": "U1",
                "event_type": "view",
                "product_id": "P001",
                "timestamp": f"2025-01-15T{time}Z",
            }
            for event, time in batch
        ]
        for batch in batches
    ]


def views_by(batches: Sequence[Sequence[tuple[str, str]]]) -> list[list[dict]]:
    """Micro-batches of (user, time of day) as views of product P001, on the course's day
    (2025-01-15, UTC); event ids V1, V2, ... in order."""
    numbered = []
    number = 0
    for batch in batches:
        records = []
        for user, time_of_day in batch:
            number += 1
            records.append(
                {
                    "event_id": f"V{number}",
                    "user_id": user,
                    "event_type": "view",
                    "product_id": "P001",
                    "timestamp": f"2025-01-15T{time_of_day}Z",
                }
            )
        numbered.append(records)
    return numbered


@contextmanager
def session_conf(spark, settings: dict[str, str]) -> Iterator[None]:
    """Set session confs for the block, then put back what was there (unset if nothing was)."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def run_scenario(
    spark,
    inputs: dict[str, tuple[Sequence[Sequence[dict]], object]],
    build: Callable,
    workdir: Path,
    *,
    output_mode: str = "append",
) -> Path:
    """Run ``build(*streams)`` over a finite scenario (``demos.replay_streams``' inputs: name ->
    (batches, schema)), afresh, without printing: the checkpoint it leaves, to read its state."""
    replay_streams(
        spark, inputs, {"query": Output(build, output_mode)}, workdir, describe_rows=str, show=False
    )
    return workdir / "checkpoints" / "query"


def run_afresh(
    spark,
    build: Callable,
    batches: Sequence[Sequence[dict]],
    schema,
    workdir: Path,
    *,
    output_mode: str = "update",
    settings: dict[str, str] | None = None,
    sort_key: Callable | None = None,
) -> tuple[Run, Path]:
    """Run ``build(stream)`` over ``batches`` (one file per micro-batch, availableNow), afresh,
    with ``settings`` (session confs) held until it ends: (its Run, its checkpoint)."""
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    write_batches(workdir / "input", batches)
    with session_conf(spark, settings or {}):
        run = collect_batches(
            build(stream_batches(spark, workdir / "input", schema)),
            workdir / "checkpoint",
            output_mode=output_mode,
            sort_key=sort_key,
        )
    return run, workdir / "checkpoint"


def wait_until(moment: float) -> None:
    """Poll the wall clock (``time.time()``, the clock Spark stamps its micro-batches with)
    until it is past ``moment`` (seconds since the epoch)."""
    while time.time() <= moment:
        time.sleep(CLOCK_POLL_SECONDS)


def run_twice(
    spark,
    build: Callable,
    batches: Sequence[Sequence[dict]],
    schema,
    workdir: Path,
    *,
    wait_seconds: float,
    settings: dict[str, str] | None = None,
    output_mode: str = "update",
) -> list[Run]:
    """Run ``build(stream)`` with availableNow on batch 0 to its end; once the wall clock is
    ``wait_seconds`` past that end, start it again from the same checkpoint on batch 1, as a
    job restarted later would be: the two Runs. Batch 0 was stamped before its run ended, so
    batch 1 is stamped more than ``wait_seconds`` after it. ``settings`` hold for both runs."""
    if len(batches) != 2:
        raise ValueError("run_twice takes two micro-batches, one per run")
    if workdir.exists():  # from a fresh start every time
        paths.remove_tree(workdir, allow_outside=True)
    write_batches(workdir / "input", batches[:1])
    runs = []
    with session_conf(spark, settings or {}):
        runs.append(
            collect_batches(
                build(stream_batches(spark, workdir / "input", schema)),
                workdir / "checkpoint",
                output_mode=output_mode,
            )
        )
        wait_until(time.time() + wait_seconds)
        write_atomically(workdir / "input", "batch-0001.json", json_lines(batches[1]))
        runs.append(
            collect_batches(
                build(stream_batches(spark, workdir / "input", schema)),
                workdir / "checkpoint",
                output_mode=output_mode,
            )
        )
    return runs


def print_batches(title: str, run: Run, describe: Callable = str) -> None:
    """One line per micro-batch of ``run``: its id and ``describe(row)`` for each row."""
    print(f"{title}:", flush=True)
    for batch in run.batches:
        shown = "  ".join(describe(row) for row in batch.rows) or "-"
        print(f"  batch {batch.batch_id}: {shown}", flush=True)


def describe_new_users(row) -> str:
    """Lesson 15's part 9: a window and its count, as '10:30:00-10:31:00 new users: 2'."""
    start = row.window.start.strftime("%H:%M:%S")
    end = row.window.end.strftime("%H:%M:%S")
    return f"{start}-{end} new users: {row.new_users}"


def rows_of(query, run) -> list:
    """Every row a query started by ``start_restarted`` (or ``microbatch.start_collecting`` with
    availableNow) outputs, once it has ended by itself; its failure is raised."""
    finish([query], AVAILABLE_NOW_TIMEOUT)
    return finish_run(query, run).rows()


def start_restarted(
    spark,
    first: Callable,
    second: Callable,
    batches: Sequence[Sequence[dict]],
    schema,
    workdir: Path,
    *,
    settings: dict[str, str] | None = None,
    output_mode: str = "update",
) -> tuple:
    """Run ``first(stream)`` on batch 0 to its end, then start ``second(stream)`` on batch 1
    from the same checkpoint, as a restart with changed code would: (the started query, its
    Run so far). Wait for it (``rows_of``), or hand the query to ``demos.show_refusal``.
    ``settings`` (session confs, e.g. the state encoding) hold for the first run only: what
    a checkpoint fixes at its start, it keeps."""
    if len(batches) != 2:
        raise ValueError("start_restarted takes two micro-batches, one per run")
    if workdir.exists():  # from a fresh start every time
        paths.remove_tree(workdir, allow_outside=True)
    write_batches(workdir / "input", batches[:1])
    with session_conf(spark, settings or {}):
        collect_batches(
            first(stream_batches(spark, workdir / "input", schema)),
            workdir / "checkpoint",
            output_mode=output_mode,
        )
    # New input after the restart.
    write_atomically(workdir / "input", "batch-0001.json", json_lines(batches[1]))
    return start_collecting(
        second(stream_batches(spark, workdir / "input", schema)),
        workdir / "checkpoint",
        output_mode=output_mode,
        trigger={"availableNow": True},
    )
