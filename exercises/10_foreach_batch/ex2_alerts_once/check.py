"""Check of 10.2: the learner's foreachBatch function in a real query, with batch 1 run twice.

The run feeds the scenario's micro-batches to a query whose foreachBatch calls the learner's
``write_alerts``, and after each batch reads every line of every file in the alert folder, as
the alerting job would. Batch 1 is written twice in a row, as Spark does after a crash between
the sink's write and the batch's commit; what the second write changed is a fact the check
compares (it must be nothing).
"""

import json
from itertools import pairwise
from pathlib import Path

from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.observe import Observation, plain
from practice.scenarios import shop_event
from practice.sinks import Retry, Snapshot, copies_changed, reimported, rows_with_copies, run_sink
from practice.spec import Exercise, Mistake, Scenario

RETRIED_BATCH = 1  # the batch the check writes twice
CRASHED_BATCH = 2  # the batch the check stops between two of the sink's writes, then runs again
RETRY = Retry(
    RETRIED_BATCH,
    f"alert lines the retry of batch {RETRIED_BATCH} added or removed",
    copies_changed,
    crashed_batch=CRASHED_BATCH,
)
KEYS = ["event_id", "user_id", "amount"]  # what each alert line holds
# The rows the check compares: each alert with the number of lines that hold it, so that an
# alert written twice shows as such.
COLUMNS = [*KEYS, "lines"]


def purchase(event_id: str, user: str, time_of_day: str, price: float, units: int = 1) -> dict:
    return shop_event(event_id, user, "purchase", time_of_day, price=price, quantity=units)


def view(event_id: str, user: str, time_of_day: str, price: float) -> dict:
    return shop_event(event_id, user, "view", time_of_day, price=price)


def read_alerts(folder: Path) -> list:
    """Every line of every file under ``folder`` (not hidden, not Spark's _SUCCESS): one row per
    alert, with the number of lines that hold it."""
    if not folder.is_dir():
        return []
    alerts = []
    for path in sorted(folder.rglob("*")):
        hidden = any(part.startswith((".", "_")) for part in path.relative_to(folder).parts)
        if hidden or not path.is_file() or path.suffix == ".crc":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                alerts.append(plain(tuple(record.get(name) for name in KEYS)))
    return rows_with_copies(alerts)


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The scenario through the learner's sink: the alert lines after each batch, and the
    retry's changes."""
    folder = workdir / "alerts"

    def write_with(learner):
        def write(batch, batch_id: int) -> None:
            learner.write_alerts(batch, batch_id, folder)

        return write

    def read_target() -> Snapshot:
        return Snapshot(COLUMNS, read_alerts(folder))

    return run_sink(
        spark,
        exercise,
        scenario,
        workdir,
        write_with(module),
        read_target,
        retry=RETRY,
        rewrite=lambda: write_with(reimported(module)),
        target=folder,
    )


def alerts_disappear(mine, wanted) -> bool:
    """A batch left the folder without alerts an earlier batch had written."""
    for earlier, later in pairwise(mine.batches):
        alerts = {row[:-1] for row in later.rows}
        if any(row[:-1] not in alerts for row in earlier.rows):
            return True
    return False


EXERCISE = Exercise(
    title="Alerts sent twice",
    kind="fix",
    practises="an idempotent foreachBatch write: what a batch writes is named after its batch id",
    function="write_alerts",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    run=run,
    check_dropped=False,
    why=(
        "A replayed batch has the same id and the same rows, but an append to one log cannot "
        "tell a replay from a new batch, so its alerts are added again. Naming what a batch "
        "writes after its batch id makes the write idempotent: a replay rewrites "
        "batch-<id>.json with the same lines and touches no other batch's file. Writing it "
        "elsewhere and renaming it (files.write_atomically) means neither a reader nor a crash "
        "ever leaves half a file."
    ),
    hints=[
        "When Spark runs batch N again after a crash, what tells your write that its alerts are "
        "already in the folder? What does adding lines to one shared file do then?",
        "lesson 10, `write_lines`: each batch id gets a file of its own, named after it, so a "
        "replay rewrites the same file with the same lines and touches no other batch's.",
        "lesson 10, `write_lines` writes with files.write_atomically, not open(): the file "
        "appears whole or not at all, even when the process stops in the middle. A batch without "
        "an alert needs no file.",
    ],
    scenarios=[
        # Batch 0: one alert (1299.99); 79.99 and a view are none. Batch 1 (written twice): 4 x
        # 159.0 = 636.0 is one, 2 x 249.99 = 499.98 is not. Batch 2: exactly 500.0 is one.
        Scenario(
            [
                [
                    purchase("E-1", "U-1", "10:30:00", 1299.99),
                    purchase("E-2", "U-2", "10:30:02", 79.99),
                    view("E-3", "U-3", "10:30:04", 1299.99),
                ],
                [
                    purchase("E-4", "U-3", "10:30:10", 249.99, units=2),
                    purchase("E-5", "U-4", "10:30:12", 159.0, units=4),
                ],
                [purchase("E-6", "U-2", "10:30:20", 500.0)],
            ]
        ),
        # Two alerts in batch 1 (written twice), none in batch 0, one in batch 2.
        Scenario(
            [
                [purchase("X-7", "B", "09:00:00", 120.0)],
                [
                    purchase("X-2", "C", "09:00:05", 750.123),
                    purchase("X-3", "A", "09:00:06", 300.0, units=3),
                    view("X-4", "A", "09:00:07", 999.0),
                ],
                [purchase("X-5", "B", "09:00:09", 1000.0)],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "one_file_replaced",
            "One file, replaced by every batch: a replay no longer doubles anything, but each "
            "batch also deletes the alerts of the batches before it. Give each batch id a file "
            "of its own (batch-<id>.json).",
            when=alerts_disappear,
        ),
        Mistake(
            "adds_on_replay",
            "A replayed batch adds its alerts again (run here from a fresh import of your file, "
            "as a restarted process has it): its write goes to a new place each time it runs "
            "(the end of a log, a new file name), or a guard kept in Python memory forgot it. "
            "Name what a batch writes after its batch_id, so that running it again replaces it.",
            when=RETRY.changed_target,
        ),
        Mistake(
            "done_recorded_apart",
            "Batch 2 was stopped inside your sink, right after one of its writes, and run "
            "again, as after a crash there: it came out different from a batch written once "
            "(rows twice, or missing). A sink that writes its data, then in a second write what "
            "says the batch is done (a marker file, a list of batch ids, another table), leaves "
            "one without the other when it stops between the two. Make the one write that holds "
            "the data say it is done: a file named for the batch id, written whole "
            "(files.write_atomically).",
            when=RETRY.damaged_by_crash,
        ),
    ],
)
