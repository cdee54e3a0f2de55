"""Lesson 15's demo machinery: small finite runs whose checkpoints the lesson reads back.

The lesson's subject (its processors, its state-store settings, its state reads) is in
15_state_store.py. What is here only runs things for it:

- ``views_of_u1``: the hand-written scenario of parts 5 and 6 as shop events;
- ``session_conf``: session settings for a block (e.g. the state store provider, which
  a query reads when it starts from a fresh checkpoint), restored afterwards;
- ``run_scenario``: a query over a small finite input, for the checkpoint it leaves;
- ``start_restarted``: run a query, then start another version of it on the same checkpoint
  (what a changed state schema meets); ``rows_of`` its output once it has ended.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from common import paths
from infra.files import json_lines, write_atomically
from infra.runner import finish
from teaching.demos import Output, replay_streams
from teaching.microbatch import (
    collect_batches,
    finish_run,
    start_collecting,
    stream_batches,
    write_batches,
)

AVAILABLE_NOW_TIMEOUT = 120  # a small availableNow query still running after this long is stuck


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
