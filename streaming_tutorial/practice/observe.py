"""Run a query on a scenario, one micro-batch at a time, and keep what a check compares.

The same machinery as the lesson tests (``teaching.microbatch``): each batch of the scenario
is one JSON file, the file source reads one file per trigger, and ``availableNow`` ends the
query when the files are read. What the sink received in each batch, the watermark it ran
with, the rows the watermark dropped, and the state rows left at the end come back as an
:class:`Observation` of plain values (strings, numbers, tuples) that JSON can hold.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from common import paths
from practice.spec import Exercise, Scenario
from teaching.demos import SCENARIO_DAY, short_time
from teaching.lateness import dropped_by_watermark
from teaching.microbatch import collect_batches, stream_batches, write_batches


@dataclass
class Batch:
    rows: list  # each row a tuple of plain values, sorted
    watermark: str | None = None  # 'HH:MM:SS' (.mmm if any), or None before the first one
    # What the stateful operators report as dropped by the watermark in this batch. An
    # aggregation counts after its partial aggregation: late rows of one group (window and key)
    # in one batch count once.
    dropped: int = 0


@dataclass
class Observation:
    columns: list[str]
    batches: list[Batch]
    state_rows: int | None = None  # state rows left after the last batch (stateful queries)
    facts: dict = field(default_factory=dict)  # anything else a check compares (survive)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Observation":
        batches = [
            Batch(
                [tuple(plain_json(v) for v in row) for row in b["rows"]],
                b["watermark"],
                b["dropped"],
            )
            for b in data["batches"]
        ]
        return cls(data["columns"], batches, data.get("state_rows"), data.get("facts", {}))


def plain_json(value):
    """JSON has lists, not tuples: a nested row read back becomes a tuple again."""
    if isinstance(value, list):
        return tuple(plain_json(item) for item in value)
    return value


def milliseconds(millis: int) -> str:
    """'.300' for 300, '' for 0: a time shows its milliseconds only when it has some."""
    return f".{millis:03d}" if millis else ""


def watermark_shown(watermark: str | None) -> str | None:
    """'2025-01-15T10:30:14.000Z' -> '10:30:14' ('10:30:14.300' with milliseconds); None
    before the first watermark."""
    shown = short_time(watermark)
    if shown and watermark[19:20] == ".":
        shown += milliseconds(int(watermark[20:23]))
    return shown or None


def plain(value):
    """A value Spark returned, as the check compares and shows it.

    A time on the scenarios' day is 'HH:MM:SS' (the day is always the same; 'HH:MM:SS.mmm'
    when it has milliseconds), a struct is a tuple (a window is ('10:30:00', '10:30:10')), a
    float is rounded to 4 places.
    """
    if isinstance(value, dt.datetime):
        if value.date().isoformat() == SCENARIO_DAY:
            return value.strftime("%H:%M:%S") + milliseconds(value.microsecond // 1000)
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, tuple):  # a pyspark Row is a tuple
        return tuple(plain(item) for item in value)
    if isinstance(value, list):
        return tuple(plain(item) for item in value)
    if isinstance(value, decimal.Decimal):
        value = float(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return round(value, 4)
    return value


def sort_rows(rows: list) -> list:
    """Rows in an order that does not depend on Spark's partitions (None sorts first)."""
    return sorted(
        rows, key=lambda row: repr(tuple(("" if v is None else type(v).__name__, v) for v in row))
    )


def scenario_inputs(exercise: Exercise, scenario: Scenario) -> dict[str, list]:
    """{input name: batches}, every input padded with empty batches to the same count."""
    if isinstance(scenario.batches, dict):
        inputs = dict(scenario.batches)
    else:
        inputs = {"input": scenario.batches}
    count = max(len(batches) for batches in inputs.values())
    return {name: list(batches) + [[]] * (count - len(batches)) for name, batches in inputs.items()}


def scenario_files(folder: Path, batches: list, scenario: Scenario) -> Path:
    """Write ``batches`` as one file per micro-batch under ``folder``; a scrambled scenario's
    rows in reverse order within each batch (see ``Scenario.scrambled``)."""
    if scenario.reads_scrambled:
        batches = [list(reversed(records)) for records in batches]
    return write_batches(folder, batches)


def trigger_of(query) -> str:
    """The trigger a (classic) query runs with, as Spark names it: 'AvailableNowTrigger',
    'ProcessingTimeTrigger(0)' for the default... A check reads it from the query itself, never
    from how long the query takes to stop."""
    return query._jsq.streamingQuery().trigger().toString()


def observe(
    spark,
    exercise: Exercise,
    build: Callable,
    scenario: Scenario,
    workdir: Path,
) -> Observation:
    """Run ``build(*streams)`` over ``scenario`` from a fresh start under ``workdir``."""
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    streams = []
    for name, batches in scenario_inputs(exercise, scenario).items():
        folder = workdir / "input" / name
        folder.mkdir(parents=True)
        scenario_files(folder, batches, scenario)
        streams.append(stream_batches(spark, folder, exercise.schema_of(name)))
    query_df = build(*streams)
    run = collect_batches(query_df, workdir / "checkpoint", output_mode=exercise.output_mode)
    dropped = {p["batchId"]: dropped_by_watermark([p]) for p in run.progress}
    batches = [
        Batch(
            sort_rows([plain(tuple(row)) for row in batch.rows]),
            watermark_shown(batch.watermark),
            dropped.get(batch.batch_id, 0),
        )
        for batch in run.batches
    ]
    state_rows = None
    if run.progress and run.progress[-1].get("stateOperators"):
        state_rows = sum(op.get("numRowsTotal", 0) for op in run.progress[-1]["stateOperators"])
    return Observation(list(query_df.columns), batches, state_rows)
