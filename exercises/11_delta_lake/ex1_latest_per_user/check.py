"""Check of 11.1: the learner's foreachBatch function in a real query; the Delta table is read
after each micro-batch."""

from itertools import pairwise
from pathlib import Path

from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.observe import Batch, Observation
from practice.scenarios import shop_event
from practice.sinks import Snapshot, read_delta_table, run_sink
from practice.spec import Exercise, Mistake, Scenario

LAST_SEEN = 4  # the column of a row that holds the user's latest event time


def event(event_id: str, user: str, kind: str, time_of_day: str, product: str) -> dict:
    return shop_event(event_id, user, kind, time_of_day, product=product)


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The scenario through the learner's sink: the table after each batch."""
    table = workdir / "user_last_event"

    def write(batch, batch_id: int) -> None:
        module.write_latest_per_user(batch, table)

    def read_target() -> Snapshot:
        return read_delta_table(spark, table)

    return run_sink(spark, exercise, scenario, workdir, write, read_target)


def rows_by_user(batch: Batch) -> dict:
    return {row[0]: row for row in batch.rows}


def a_user_went_back_in_time(mine, wanted) -> bool:
    """A user's row holds an older event after a batch than before it."""
    for earlier, later in pairwise(mine.batches):
        before = rows_by_user(earlier)
        for user, row in rows_by_user(later).items():
            if user in before and len(row) > LAST_SEEN and row[LAST_SEEN] < before[user][LAST_SEEN]:
                return True
    return False


def rows_never_change(mine, wanted) -> bool:
    """No user's row ever changed in the learner's table, while some should have."""

    def changes(observation) -> bool:
        for earlier, later in pairwise(observation.batches):
            before = rows_by_user(earlier)
            if any(before.get(user, row) != row for user, row in rows_by_user(later).items()):
                return True
        return False

    return changes(wanted) and not changes(mine)


EXERCISE = Exercise(
    title="The latest event per user",
    kind="build",
    practises="MERGE (upsert) from foreachBatch: one row per key, deduplicated, only forward",
    function="write_latest_per_user",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    run=run,
    check_dropped=False,
    mirrors="11_delta_lake:write_latest_per_user",
    why=(
        "MERGE matches each source row with the target row of the same key: update when "
        "matched, insert when not. Delta refuses a MERGE in which several source rows match one "
        "target row (which should win?), so the batch is first cut to one row per user with "
        "row_number over a window, which foreachBatch allows because the batch is a plain "
        "DataFrame. The update condition (the batch's event is newer) makes the table only move "
        "forward: a late, older event matches its user and changes nothing."
    ),
    hints=[
        "MERGE pairs each row of the batch with the table's row of the same user. What goes wrong "
        "when the batch holds two events of one user? And when an event arrives after a newer one "
        "of the same user is in the table, what should MERGE do with it?",
        "lesson 11, `build_latest_per_user`: one row per user, the latest by time with ties "
        "broken by event id, with row_number over a window per user.",
        "lesson 11, `write_latest_per_user`: it creates the empty table on the first batch, then "
        "MERGEs on user_id: a match is updated only under the condition lesson 11, `NEWER_EVENT` "
        "(the same tie-break), the rest is inserted.",
    ],
    scenarios=[
        # Batch 1 holds two events of U-1 (matched: MERGE refuses two source rows for one
        # target row), a new user U-3, and U-2's late view (10:30:01, older than its 10:30:05
        # cart), which must not replace the cart.
        Scenario(
            [
                [
                    event("E-1", "U-1", "view", "10:30:00", "P001"),
                    event("E-2", "U-2", "cart", "10:30:05", "P002"),
                ],
                [
                    event("E-3", "U-1", "cart", "10:30:10", "P001"),
                    event("E-4", "U-1", "purchase", "10:30:15", "P001"),
                    event("E-5", "U-3", "view", "10:30:12", "P004"),
                    event("E-6", "U-2", "view", "10:30:01", "P009"),
                ],
            ]
        ),
        # A new user twice in batch 0 (both would be inserted); in batch 1 a late event of B,
        # a newer one of A (listed before an older one), and a new user C. C's two events share
        # a time (the greater event id, X-7, counts; the scrambled read brings X-4 first); new
        # user D's event is older than A's row (each user's own row decides, not the table's
        # newest time). In batch 2, C's X-0 has the time of C's row in the table (09:00:07) and
        # a smaller event id: the tie-break keeps X-7 (MERGE's condition, not row_number, decides
        # a tie between the batch and the table).
        Scenario(
            [
                [
                    event("X-8", "A", "cart", "09:00:04", "P7"),
                    event("X-2", "A", "view", "09:00:01", "P7"),
                    event("X-5", "B", "purchase", "09:00:03", "P3"),
                ],
                [
                    event("X-9", "A", "purchase", "09:00:09", "P7"),
                    event("X-1", "B", "view", "09:00:02", "P2"),
                    event("X-6", "A", "view", "09:00:06", "P5"),
                    event("X-7", "C", "view", "09:00:07", "P6"),
                    event("X-4", "C", "cart", "09:00:07", "P3"),
                    event("X-3", "D", "view", "09:00:02", "P1"),
                ],
                [event("X-0", "C", "purchase", "09:00:07", "P8")],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "no_dedupe",
            "No deduplication within the batch: a user with two events in one micro-batch is two "
            "source rows for one target row, and Delta refuses such a MERGE. Keep each user's "
            "latest event of the batch first (row_number over a window per user, rank 1).",
            error=r"MULTIPLE_SOURCE_ROW_MATCHING|multiple source rows matched",
        ),
        Mistake(
            "late_event_wins",
            "A late event wins: an event that arrives after a newer one of the same user "
            "replaced that user's row. Either the update has no condition, or its condition "
            "does not compare event times (an event id says nothing about when the event "
            "happened). Update only when the batch's event is newer by event time: "
            "whenMatchedUpdateAll(condition='s.last_seen > t.last_seen').",
            when=a_user_went_back_in_time,
        ),
        Mistake(
            "insert_only",
            "Insert only: a user's row is written when they first appear and never updated. "
            "Add whenMatchedUpdateAll(...) to the MERGE, so a matched user gets their newer event.",
            when=rows_never_change,
        ),
    ],
)
