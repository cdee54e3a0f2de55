"""Check of 10.1: the learner's foreachBatch function in a real query, with batch 1 run twice.

The run feeds the scenario's micro-batches to a query whose foreachBatch calls the learner's
``write_category_totals`` and reads the Delta table after each batch. Batch 1 is written twice
in a row, as Spark does after a crash between the sink's write and the batch's commit; what the
second write changed is a fact the check compares (it must be nothing).
"""

from pathlib import Path

from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.observe import Observation
from practice.scenarios import shop_event
from practice.sinks import Retry, Snapshot, read_delta_table, reimported, rows_changed, run_sink
from practice.spec import Exercise, Mistake, Scenario

RETRIED_BATCH = 1  # the batch the check writes twice
CRASHED_BATCH = 2  # the batch the check stops between two of the sink's writes, then runs again
RETRY = Retry(
    RETRIED_BATCH,
    f"rows the retry of batch {RETRIED_BATCH} changed",
    rows_changed,
    crashed_batch=CRASHED_BATCH,
)


def purchase(event_id: str, user: str, time_of_day: str, category: str, price: float, units=1):
    return shop_event(
        event_id, user, "purchase", time_of_day, category=category, price=price, quantity=units
    )


def view(event_id: str, user: str, time_of_day: str, category: str) -> dict:
    return shop_event(event_id, user, "view", time_of_day, category=category)


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The scenario through the learner's sink: the table after each batch, and the retry's
    changes."""
    table = workdir / "category_totals"

    def write_with(learner):
        def write(batch, batch_id: int) -> None:
            learner.write_category_totals(batch, batch_id, table)

        return write

    def read_target() -> Snapshot:
        return read_delta_table(spark, table)

    return run_sink(
        spark,
        exercise,
        scenario,
        workdir,
        write_with(module),
        read_target,
        retry=RETRY,
        rewrite=lambda: write_with(reimported(module)),
        target=table,
    )


def two_rows_for_one_category(mine, wanted) -> bool:
    """Some batch left the table with a category twice: rows added, not totals replaced."""
    for batch in mine.batches:
        categories = [row[0] for row in batch.rows]
        if len(categories) != len(set(categories)):
            return True
    return False


EXERCISE = Exercise(
    title="Totals a replay cannot double",
    kind="build",
    practises="an idempotent foreachBatch write: totals that a replayed batch id does not change",
    function="write_category_totals",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    run=run,
    check_dropped=False,
    why=(
        "foreachBatch is at-least-once: after a crash between your write and Spark's commit, "
        "the same batch id runs again with the same rows. Delta records (txnAppId, txnVersion) "
        "in the same commit as the data and skips a write whose txnVersion is not higher than "
        "the one recorded for that app id, so a replayed batch writes nothing; the check and "
        "the write are one atomic step. The new totals (the table's plus the batch's) replace "
        "the table in one commit: a crash leaves the old totals or the new ones, never half."
    ),
    hints=[
        "A replayed batch has the same id and the same rows. What would let your write recognise "
        "a batch id it has already applied? And why must that record be committed together with "
        "the totals, not in a step of its own?",
        "lesson 10, `apply_batch_once`: the claim of (app id, batch id) and the writes commit in "
        "one transaction. lesson 10, `write_delta_once`: Delta does the same with two writer "
        "options, in the very commit that holds the data.",
        "The new totals are the table so far plus build_category_sales(batch), grouped by "
        "category again (the first batch finds no table yet); write them in one overwrite commit "
        "that carries the options of `write_delta_once`. lesson 10, `write_batch` says why the "
        "app id is the query's id, query_id(batch), and not a fixed name.",
    ],
    scenarios=[
        # Batch 1 (written twice) adds to Books and brings a new category, Garden; batch 2 adds
        # to Home only, so Books and Garden keep last_batch 1. Views add nothing.
        Scenario(
            [
                [
                    purchase("E-1", "U-1", "10:30:00", "Books", 12.5, units=2),
                    view("E-2", "U-2", "10:30:02", "Books"),
                    purchase("E-3", "U-3", "10:30:05", "Home", 40.0),
                ],
                [
                    purchase("E-4", "U-2", "10:30:10", "Books", 12.5),
                    purchase("E-5", "U-4", "10:30:12", "Garden", 7.25, units=4),
                ],
                [
                    purchase("E-6", "U-1", "10:30:20", "Home", 60.0),
                    view("E-7", "U-4", "10:30:21", "Garden"),
                ],
            ]
        ),
        # Other categories, two batches (each Delta commit costs the check time); batch 1
        # (written twice) holds two purchases of a category that batch 0 started.
        Scenario(
            [
                [
                    purchase("X-9", "A", "09:00:00", "Toys", 5.0),
                    view("X-6", "A", "09:00:01", "Toys"),
                ],
                [
                    purchase("X-3", "B", "09:00:05", "Toys", 5.0, units=3),
                    purchase("X-4", "C", "09:00:06", "Toys", 2.5),
                    purchase("X-5", "C", "09:00:07", "Sports", 99.994),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "plain_append",
            "A plain append: each batch adds a row per category (and a retry adds them again), "
            "so the table holds a category several times. Replace the table with the new totals "
            "(the totals so far plus this batch's sales), one row per category.",
            when=two_rows_for_one_category,
        ),
        Mistake(
            "no_replay_guard",
            "Running batch 1 again (as Spark does after a crash before its commit; here from a "
            "fresh import of your file, as a restarted process has it) added its sales a second "
            "time. What tells the write it has seen a batch id must outlive the process and be "
            "part of the same commit: .option('txnAppId', query_id(batch))"
            ".option('txnVersion', batch_id) does that; a set of batch ids in memory does not.",
            when=RETRY.changed_target,
        ),
        Mistake(
            "done_recorded_apart",
            "Batch 2 was stopped inside your sink, right after one of its writes, and run "
            "again, as after a crash there: it came out different from a batch written once "
            "(rows twice, or missing). A sink that writes its data, then in a second write what "
            "says the batch is done (a marker file, a list of batch ids, another table), leaves "
            "one without the other when it stops between the two. Make one commit hold both: "
            "txnAppId and txnVersion on the write of the new totals.",
            when=RETRY.damaged_by_crash,
        ),
    ],
)
