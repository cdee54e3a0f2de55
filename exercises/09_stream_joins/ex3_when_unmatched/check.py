"""09.3: the learner predicts in which micro-batch the left outer join emits each row.

The scenario is the pristine file's IMPRESSIONS and CLICKS (the learner reads them there).
Each mistake is a wrong model of the join's timing, recognised by a batch of the prediction.
"""

from common.schemas import CLICK_SCHEMA, IMPRESSION_SCHEMA
from practice import catalog
from practice.scenarios import click, impression
from practice.spec import Exercise, Mistake, Scenario

PRISTINE = catalog.load_module(
    catalog.EXERCISES_DIR / "09_stream_joins" / "ex3_when_unmatched" / catalog.STUB, "pristine"
)


def to_impressions(batches: list) -> list:
    """(impression_id, time) pairs as impressions of one ad, batch by batch."""
    return [
        [impression(impression_id, "AD-1", "U1", time) for impression_id, time in batch]
        for batch in batches
    ]


def to_clicks(batches: list) -> list:
    """(click_id, impression_id, time) triples as clicks, batch by batch."""
    return [
        [
            click(click_id, impression_id, "AD-1", "U1", time)
            for click_id, impression_id, time in batch
        ]
        for batch in batches
    ]


def impression_and_click(observation) -> list:
    """Each micro-batch's rows as (impression_id, click_id)."""
    first = observation.columns.index("impression_id")
    second = observation.columns.index("click_id")
    return [[(row[first], row[second]) for row in batch.rows] for batch in observation.batches]


def sent_in(guess, number: int, row: tuple) -> bool:
    """The prediction has ``row`` in micro-batch ``number``."""
    return isinstance(guess, list) and number < len(guess) and row in guess[number]


def thinks_unmatched_at_once(guess, actual):
    """P2 with nulls in batch 0, as a batch join would emit it."""
    return sent_in(guess, 0, ("P2", None))


def thinks_impression_watermark_alone(guess, actual):
    """P2 with nulls in batch 2, as if batch 2 ran with 09:28: the impressions' watermark
    taken for the join's, or the clicks' moved by L3 within batch 2 (the same prediction, so
    the hint names both)."""
    return sent_in(guess, 2, ("P2", None))


def thinks_late_impression_kept(guess, actual):
    """P0 comes out with nulls: but it arrived behind the watermark and was dropped."""
    return isinstance(guess, list) and any(
        isinstance(batch, list) and ("P0", None) in batch for batch in guess
    )


def forgets_trailing_batch(guess, actual):
    """One micro-batch fewer than Spark ran: the last one, without new rows, is missing."""
    return isinstance(guess, list) and len(guess) == len(actual) - 1


EXERCISE = Exercise(
    title="When the nulls come",
    kind="predict",
    practises="a left outer stream-stream join emits an unmatched row once the join's watermark "
    "(the minimum of both streams') passes its time bound",
    function="build_ad_join",
    schemas={"impressions": IMPRESSION_SCHEMA, "clicks": CLICK_SCHEMA},
    output_mode="append",
    predicted=impression_and_click,
    why=(
        "A stream-stream join runs each micro-batch with one watermark, the minimum of its "
        "inputs' (computed at the end of the batch before); a stream that sent nothing keeps "
        "its old one, so a quiet stream holds the whole join back. An unmatched impression "
        "comes out once that watermark has passed impression_time + 10 minutes, even in a "
        "batch Spark runs with no new rows only because the watermark moved. A row already "
        "older than the watermark when it arrives, like P0, is dropped and never comes out."
    ),
    hints=[
        "When can Spark emit an impression that got no click: in the batch it arrives, or once "
        "something tells it that no click can still come? And with two streams, each with its own "
        "watermark, which of the two does the join go by?",
        "lesson 09, `build_ad_join`: its comments say when an impression leaves the join's state. "
        "The docstring's 'What you'll see' shows IMP-2, IMP-3 and IMP-4 coming out with nulls in "
        "a batch that brings no impression (the input: lesson 09, `IMPRESSIONS` and `CLICKS`).",
        "A method: keep each stream's latest event time, batch by batch. Batch N runs with the "
        "watermark computed after batch N-1: each stream's latest time minus 2 minutes, the "
        "smaller of the two (a stream that sent nothing keeps its value). In batch N, a new row "
        "at or before the watermark batch N-1 ran with is dropped as too late (lesson 07's rule); "
        "an impression and a click within its bound come out in the batch where the later of the "
        "two arrives; an impression still without a click comes out with nulls once batch N's "
        "watermark has passed impression_time + CLICK_WINDOW_MINUTES. After the input, if the "
        "watermark moved, count one more batch and apply the same rules.",
    ],
    # A predict exercise needs no hidden scenario: the query and its input are in the file.
    scenarios=[
        Scenario(
            {
                "impressions": to_impressions(PRISTINE.IMPRESSIONS),
                "clicks": to_clicks(PRISTINE.CLICKS),
            }
        )
    ],
    mistakes=[
        Mistake(
            "unmatched_at_once",
            "A stream-stream join cannot emit an impression without a click in the batch it "
            "arrives: its click may still come in a later batch. It waits in the join's state "
            "until the watermark has passed its time bound.",
            when=thinks_unmatched_at_once,
        ),
        Mistake(
            "impression_watermark_alone",
            "P2 with nulls in batch 2 is one batch early: batch 2 ran with the watermark 08:59, "
            "which has not passed P2's bound (09:12). Either you took the impressions' "
            "watermark (09:28) for the join's, which is the MINIMUM of the two streams' (the "
            "clicks' was still 08:59: no click had come since L1 at 09:01), or you let L3 "
            "(09:35) move the clicks' watermark within batch 2, but a batch runs with the "
            "watermark computed at the end of the batch before. P2 comes out in the batch "
            "after.",
            when=thinks_impression_watermark_alone,
        ),
        Mistake(
            "late_impression_kept",
            "P0 (08:50) arrived in batch 2, which ran with the watermark 08:59: its event time is "
            "older than that, so the join drops it as too late, before it looks for a click. It "
            "never comes out, not even with nulls.",
            when=thinks_late_impression_kept,
        ),
        Mistake(
            "no_trailing_batch",
            "After the last input, the watermark had moved (the clicks' to 09:33), so Spark runs "
            "one more micro-batch with no new rows: that is where the impressions it settles "
            "come out.",
            when=forgets_trailing_batch,
        ),
    ],
)
