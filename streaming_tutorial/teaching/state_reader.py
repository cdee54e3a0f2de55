"""A stateful query's state, read back from its checkpoint, shown as text.

Spark's state data source reads the state a checkpoint holds, as a batch DataFrame:
``spark.read.format("state-metadata")`` lists the stateful operators, and
``spark.read.format("statestore")`` their rows (a lesson writes those reads itself; see
lesson 15). What is here only shows what they return:

- ``print_rows`` / ``as_text``: state rows (nested structs) as a plain table;
- ``print_metadata``: the state-metadata rows, one line per operator and store;
- ``print_states``: several of those, by title;
- ``print_changes``: a change feed, per micro-batch, which keys were updated or deleted.

Which files a state partition's folder holds is the checkpoint model's
(``infra.checkpoints.state_files``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Callable, Sequence

from teaching.narration import print_table

MAX_ROWS = 8  # rows print_rows shows; the rest are counted


def as_text(value) -> str:
    """A state cell as a reader wants it: a struct's fields joined by ', ' (one field: just it),
    times as 'HH:MM:SS' (the course's scenarios are all on one day, in UTC), None as 'null'."""
    if value is None:
        return "null"
    if isinstance(value, datetime):
        return value.strftime("%H:%M:%S")
    if isinstance(value, tuple):  # a Row is a tuple
        return ", ".join(as_text(field) for field in value)
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    return str(value)


def text_rows(rows: Sequence, columns: Sequence[str]) -> list[tuple[str, ...]]:
    """``rows`` as tuples of ``as_text`` cells in the order of ``columns``, sorted by the first
    (the key); rows of one key keep Spark's order (a list state's elements, in list order)."""
    return sorted(
        (tuple(as_text(row[column]) for column in columns) for row in rows),
        key=lambda cells: cells[0],
    )


def print_rows(
    title: str, df, columns: Sequence[str] | None = None, *, limit: int = MAX_ROWS
) -> list[tuple]:
    """Print a (small) batch DataFrame of state rows under ``title``; returns the rows as text."""
    columns = list(columns or [column for column in df.columns if column != "partition_id"])
    rows = text_rows(df.collect(), columns)
    print(f"{title}: {len(rows)} row{'s' * (len(rows) != 1)}", flush=True)
    if rows:
        shown = rows[:limit]
        if len(rows) > limit:
            shown.append((f"... {len(rows) - limit} more",) + ("",) * (len(columns) - 1))
        print_table(tuple(columns), shown)
    return rows


def metadata_rows(df) -> list[tuple]:
    """The state-metadata rows: (operator id, operator, store, partitions, 'first-last' batch,
    the state variables of a transformWithState operator, or '-')."""
    rows = []
    for row in df.orderBy("operatorId", "stateStoreName").collect():
        properties = json.loads(row.operatorProperties) if row.operatorProperties else {}
        variables = ", ".join(
            f"{v['stateName']} ({v['stateVariableType']}{', TTL' if v['ttlEnabled'] else ''})"
            for v in properties.get("stateVariables", [])
        )
        rows.append(
            (
                row.operatorId,
                row.operatorName,
                row.stateStoreName,
                row.numPartitions,
                f"{row.minBatchId}-{row.maxBatchId}",
                variables or "-",
            )
        )
    return rows


def print_metadata(df) -> list[tuple]:
    rows = metadata_rows(df)
    print_table(("id", "operator", "store", "partitions", "batches", "state variables"), rows)
    return rows


def change_rows(df, key: Callable = as_text) -> list[tuple[int, str, str]]:
    """A change feed as (batch, keys updated, keys deleted), one row per micro-batch that changed
    something; ``key(row.key)`` names a key (a map state's entries are 'key/user key')."""
    by_batch: dict[int, dict[str, set]] = {}
    for row in df.collect():
        name = key(row.key)
        if "user_map_key" in row:
            name += f"/{as_text(row.user_map_key)}"
        kinds = by_batch.setdefault(row.batch_id, {"update": set(), "delete": set()})
        kinds[row.change_type].add(name)
    return [
        (batch, " ".join(sorted(kinds["update"])) or "-", " ".join(sorted(kinds["delete"])) or "-")
        for batch, kinds in sorted(by_batch.items())
    ]


def print_changes(df) -> list[tuple]:
    rows = change_rows(df)
    print_table(("batch", "updated", "deleted"), rows)
    return rows


def print_states(states: dict) -> None:
    """Print each {title: state DataFrame}: state-metadata by operator, a change feed (a
    'change_type' column) by micro-batch, other state as rows."""
    for title, df in states.items():
        if "operatorProperties" in df.columns:  # state-metadata
            print_metadata(df)
        elif "change_type" in df.columns:
            print(f"{title}: what each micro-batch changed", flush=True)
            print_changes(df)
        else:
            print_rows(title, df)
