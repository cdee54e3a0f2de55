from common.schemas import TRANSACTION_SCHEMA
from practice.scenarios import transaction
from practice.spec import Exercise, Mistake, Scenario


def batches_of(value) -> list[list[tuple]] | None:
    """A prediction as one list of row tuples per micro-batch; None when it is not so shaped."""
    if not isinstance(value, list):
        return None
    if not all(isinstance(batch, (list, tuple)) for batch in value):
        return None
    if not all(isinstance(row, (list, tuple)) for batch in value for row in batch):
        return None
    return [[tuple(row) for row in batch] for batch in value]


def resends_unchanged_row(guess, actual) -> bool:
    """A batch of the guess holds a row that Spark's batch does not but an earlier Spark batch
    does: a row the batch did not change, sent again (complete mode's answer)."""
    guessed = batches_of(guess)
    if guessed is None:
        return False
    for number in range(1, min(len(guessed), len(actual))):
        earlier = [row for batch in actual[:number] for row in batch]
        if any(row not in actual[number] and row in earlier for row in guessed[number]):
            return True
    return False


def counts_batch_alone(guess, actual) -> bool:
    """A category's orders in a batch of the guess are that batch's orders alone: Spark's
    running count minus the count Spark sent for the category before."""
    guessed = batches_of(guess)
    if guessed is None:
        return False
    sent = {}  # category: the orders Spark last sent for it
    for number in range(min(len(guessed), len(actual))):
        guessed_orders = {row[0]: row[1] for row in guessed[number] if len(row) == 3}
        for category, orders, _ in actual[number]:
            before = sent.get(category)
            if before and guessed_orders.get(category) == orders - before:
                return True
            sent[category] = orders
    return False


EXERCISE = Exercise(
    title="What update mode sends",
    kind="predict",
    practises="update mode: each micro-batch sends only the aggregate rows that changed",
    function="build_category_stats",
    schemas=TRANSACTION_SCHEMA,
    output_mode="update",
    mirrors="02_output_modes:build_category_stats",
    why=(
        "A streaming groupBy keeps its result table in the state store, so every number is "
        "over all the orders so far, never one batch's share. Update mode sends, after each "
        "micro-batch, only the rows of that table the batch changed: a category without a new "
        "order stays silent, one with new orders comes out with its new running totals. A sink "
        "that upserts those rows by category ends up holding the whole table."
    ),
    hints=[
        "Is a category's row the result of this micro-batch's payments alone, or of every payment "
        "so far? And which rows of that result did a given batch change?",
        "lesson 02, `main`: part 1 replays `WALKTHROUGH_BATCHES` through this very query (lesson "
        "02, `build_category_stats`) in complete and in update mode; the docstring's 'What you'll "
        "see' shows what each batch sent. In batch 1, which categories does update send, and "
        "which does it leave out?",
        "A method: keep a running table per category (orders, sum of amounts). For each batch in "
        "turn, add its payments to the table, then write down only the categories this batch "
        "touched, each with its orders and average (sum / orders, rounded to 2 places) over "
        "everything so far.",
    ],
    scenarios=[
        # The file's scenario: books is touched in batches 0 and 2, toys in 0 and 1.
        Scenario(
            [
                [
                    transaction("T1", "U1", 12.0, "10:30:01", "books"),
                    transaction("T2", "U2", 8.0, "10:30:02", "toys"),
                    transaction("T3", "U3", 4.0, "10:30:03", "books"),
                ],
                [
                    transaction("T4", "U1", 10.0, "10:30:05", "toys"),
                    transaction("T5", "U2", 30.0, "10:30:06", "games"),
                ],
                [
                    transaction("T6", "U3", 20.0, "10:30:08", "books"),
                    transaction("T7", "U1", 5.0, "10:30:09", "books"),
                ],
            ]
        ),
    ],
    mistakes=[
        Mistake(
            "whole_table_each_batch",
            "books (2 orders, avg 8.0) is sent again in a later batch: that is complete mode, "
            "which re-sends the whole table. Update sends only the rows the batch changed.",
            when=resends_unchanged_row,
        ),
        Mistake(
            "counts_per_batch",
            "books in batch 2 with 2 orders, avg 12.5: those are batch 2's orders alone. The "
            "aggregation's state keeps every order seen so far, so each row sent is the running "
            "total over the whole stream.",
            when=counts_batch_alone,
        ),
    ],
)
