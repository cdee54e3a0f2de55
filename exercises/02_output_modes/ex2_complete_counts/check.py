from itertools import pairwise

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


def leaves_out_unchanged_row(guess, actual) -> bool:
    """A batch of the guess sends some rows but not a category that Spark sent in that batch
    and, unchanged, in the one before: only the rows the batch changed (update mode's answer).
    A category with another value (a wrong average) is no such mistake, nor an empty batch
    (empty_batch_sends_nothing)."""
    guessed = batches_of(guess)
    if guessed is None:
        return False
    for number in range(1, min(len(guessed), len(actual))):
        if not guessed[number]:
            continue
        categories = {row[0] for row in guessed[number] if row}
        unchanged = [row for row in actual[number] if row in actual[number - 1]]
        if any(row[0] not in categories for row in unchanged):
            return True
    return False


def empty_batch_sends_nothing(guess, actual) -> bool:
    """The guess has a batch empty where Spark sent its table again unchanged (the micro-batch
    of an empty file)."""
    guessed = batches_of(guess)
    if guessed is None:
        return False
    return any(
        not guessed[number] and actual[number] and actual[number] == actual[number - 1]
        for number in range(1, min(len(guessed), len(actual)))
    )


def skips_repeated_batch(guess, actual) -> bool:
    """The guess has fewer batches than Spark, whose answer repeats a batch unchanged (the
    micro-batch of an empty file), and at most that many fewer: the empty file's batch left
    out."""
    guessed = batches_of(guess)
    if guessed is None:
        return False
    repeats = sum(1 for before, after in pairwise(actual) if before == after)
    return repeats > 0 and len(actual) - repeats <= len(guessed) < len(actual)


EXERCISE = Exercise(
    title="What complete mode sends",
    kind="predict",
    practises="complete mode: every micro-batch sends the whole result table, changed or not",
    function="build_category_stats",
    schemas=TRANSACTION_SCHEMA,
    output_mode="complete",
    mirrors="02_output_modes:build_category_stats",
    why=(
        "Complete mode sends the whole result table after every micro-batch, changed or not, "
        "so a sink can simply replace what it had. A micro-batch runs whenever the source has "
        "something new, and a new file is new even when it is empty: that batch changes no row "
        "and still re-sends the table. The price is output that grows with the table (every "
        "key ever seen, in every batch), which is why complete mode needs an aggregation and "
        "suits small result tables."
    ),
    hints=[
        "After a micro-batch, does complete mode send what the batch changed, or the whole result "
        "so far? And does a new file that holds no payment still make a micro-batch?",
        "lesson 02, `main`: in part 1 (the docstring's 'What you'll see'), each batch's complete "
        "line holds every category seen so far, changed or not. lesson 03, `write_batch`: read "
        "its comment on an empty file.",
        "A method: keep a running table per category (orders, sum of amounts). For each of the "
        "four batches, add its payments (none for the empty file), then write down the WHOLE "
        "table: every category seen so far, with its orders and average (sum / orders, rounded to "
        "2 places) over everything so far.",
    ],
    scenarios=[
        # The file's scenario: batch 1 changes books only, batch 2 is an empty file.
        Scenario(
            [
                [
                    transaction("T1", "U1", 10.0, "10:30:01", "books"),
                    transaction("T2", "U2", 30.0, "10:30:02", "games"),
                ],
                [transaction("T3", "U3", 20.0, "10:30:04", "books")],
                [],
                [transaction("T4", "U1", 6.0, "10:30:08", "music")],
            ]
        ),
    ],
    mistakes=[
        Mistake(
            "only_changed_rows",
            "A batch without games, which only batch 0 changed: that is update mode, which "
            "sends only the rows a batch changed. Complete re-sends the whole table every "
            "batch, even after an empty file.",
            when=leaves_out_unchanged_row,
        ),
        Mistake(
            "empty_batch_sends_nothing",
            "The empty file's batch sends nothing in your prediction: no new payment, so "
            "nothing changed, but complete mode sends the whole result table after every "
            "micro-batch, changed or not (only update mode would send nothing there).",
            when=empty_batch_sends_nothing,
        ),
        Mistake(
            "no_batch_for_empty_file",
            "Three batches instead of four: the empty file is a new file too, so it gets its "
            "own micro-batch, and complete mode sends the whole table in it again.",
            when=skips_repeated_batch,
        ),
    ],
)
