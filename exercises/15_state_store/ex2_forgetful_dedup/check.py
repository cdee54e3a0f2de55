from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.scenarios import seconds, shop_event
from practice.spec import Exercise, Mistake, Scenario


def event_ids(observation) -> list:
    """Every event_id the query emitted, in all batches."""
    position = observation.columns.index("event_id") if "event_id" in observation.columns else 0
    return [row[position] for batch in observation.batches for row in batch.rows]


def lets_a_retry_through(mine) -> bool:
    """Some event_id came out twice."""
    ids = event_ids(mine)
    return len(ids) > len(set(ids))


def watermark_lag(mine, wanted) -> float | None:
    """How many seconds the learner's watermarks are ahead of (+) or behind (-) the expected
    ones, if by the same amount in every batch where both have one; None otherwise."""
    lags = {
        seconds(my_batch.watermark) - seconds(want_batch.watermark)
        for my_batch, want_batch in zip(mine.batches, wanted.batches, strict=False)
        if my_batch.watermark and want_batch.watermark
    }
    return lags.pop() if len(lags) == 1 else None


def has_no_watermark(mine, wanted):
    """No batch ran with a watermark."""
    return all(batch.watermark is None for batch in mine.batches)


def watermark_ahead(mine, wanted):
    """Every watermark later than expected by the same amount: a shorter delay."""
    lag = watermark_lag(mine, wanted)
    return lag is not None and lag > 0


def watermark_behind(mine, wanted):
    """Every watermark earlier than expected by the same amount (a longer delay), and more ids
    kept in state."""
    lag = watermark_lag(mine, wanted)
    more = (mine.state_rows or 0) > (wanted.state_rows or 0)
    return lag is not None and lag < 0 and more


def same_rows(mine, wanted) -> bool:
    """The same rows in every batch, a batch one of them did not run counting as empty (a
    query whose deduplication sees no watermark runs no batch without data)."""
    count = max(len(mine.batches), len(wanted.batches))

    def rows(observation) -> list:
        batches = [batch.rows for batch in observation.batches]
        return batches + [[]] * (count - len(batches))

    return rows(mine) == rows(wanted)


def retry_through_and_ids_forgotten_early(mine, wanted):
    """An event_id came out twice, and fewer ids are left in state than expected."""
    fewer = (mine.state_rows or 0) < (wanted.state_rows or 0)
    return lets_a_retry_through(mine) and fewer


def retry_through(mine, wanted):
    return lets_a_retry_through(mine)


def keeps_every_id(mine, wanted):
    """The right rows, but more ids kept in state than expected."""
    return same_rows(mine, wanted) and (mine.state_rows or 0) > (wanted.state_rows or 0)


EXERCISE = Exercise(
    title="A dedup that forgets",
    kind="fix",
    practises="dropDuplicatesWithinWatermark: each event once, its id forgotten after the delay, "
    "not kept for ever",
    function="build_unique_events",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    output_mode="append",
    check_state=True,
    mirrors="15_state_store:build_dedup_within_watermark",
    why=(
        "dropDuplicates(['event_id']) must keep every id for ever: its key holds no event time, "
        "so no watermark can say an id is done, and putting the timestamp in the key would let "
        "a retry with a later time through as a new event. dropDuplicatesWithinWatermark keeps "
        "the id alone as the key and stores with it an expiry, its first copy's time + the "
        "watermark's delay; once the watermark passes it, the id leaves the state. That is safe "
        "because the delay is the input's promise: no retry comes more than 30 s after the first "
        "copy. A shorter delay forgets ids their retries still need; a longer one keeps them for "
        "nothing."
    ),
    hints=[
        "Why can this deduplication never forget an event_id? What would have to tell Spark "
        "that no retry of it can still come? And would putting the timestamp in the key still "
        "keep the retries out?",
        "lesson 15, `build_dedup_forever` is this query; lesson 15, "
        "`build_dedup_within_watermark` is the one whose state forgets: compare the two.",
        "lesson 15, `build_dedup_within_watermark`: a watermark on the event-time column with "
        "DEDUP_DELAY, then the deduplication made for retries, keyed by the one column that names "
        "an event, without the timestamp.",
    ],
    scenarios=[
        # E1 twice in batch 0 (an exact copy). E3 (10:30:20) moves the watermark far enough that
        # a delay of 10 s or less forgets E1 at the end of batch 1, so E1's retry at 10:30:25
        # (batch 2) gets through there; with 30 s E1 is kept until 10:30:30. E2's retry crosses
        # a minute (and a 30 s window): a key with the minute or the window lets it through.
        # Batch 3 brings E1 once more: its watermark (10:30:40) is past E1's time + 30 s, but
        # ids are forgotten at the end of a batch, so this copy is still caught. E6 (10:30:45)
        # is kept after the last batch (watermark 10:30:50): with the timestamp in a
        # dropDuplicates key it would leave the state at 10:30:50, not 10:31:15. E4, E5 and E6
        # are left in state; the query as given keeps all six ids.
        Scenario(
            [
                [
                    shop_event("E1", "U1", "view", "10:30:00"),
                    shop_event("E2", "U2", "cart", "10:29:58"),
                    shop_event("E1", "U1", "view", "10:30:00"),
                    shop_event("E3", "U1", "purchase", "10:30:20", price=25.0),
                ],
                [
                    shop_event("E1", "U1", "view", "10:30:03"),
                    shop_event("E2", "U2", "cart", "10:30:04"),
                ],
                [
                    shop_event("E1", "U1", "view", "10:30:25"),
                    shop_event("E4", "U2", "view", "10:31:10"),
                    shop_event("E3", "U1", "purchase", "10:30:26", price=25.0),
                ],
                [
                    shop_event("E5", "U1", "view", "10:31:20"),
                    shop_event("E1", "U1", "view", "10:30:03"),
                    shop_event("E6", "U3", "cart", "10:30:45", product="P002"),
                ],
            ]
        ),
        # Other ids and users, read scrambled. A-9 twice in batch 1 (an exact copy). A-12
        # (11:00:28) lets a short delay forget A-7 before its retry at 11:00:32; A-12's own retry
        # crosses a 30 s window. A-7's and A-9's last retries come in the batch whose end
        # forgets them (still caught). A-13 is kept to the end, as E6 is.
        Scenario(
            [
                [
                    shop_event("A-7", "U9", "cart", "11:00:10", product="P004"),
                    shop_event("A-8", "U5", "view", "11:00:12"),
                    shop_event("A-12", "U7", "view", "11:00:28", category="Books"),
                ],
                [
                    shop_event("A-9", "U5", "purchase", "11:00:30", price=12.5, quantity=2),
                    shop_event("A-7", "U9", "cart", "11:00:14", product="P004"),
                    shop_event("A-9", "U5", "purchase", "11:00:30", price=12.5, quantity=2),
                    shop_event("A-12", "U7", "view", "11:00:33", category="Books"),
                ],
                [
                    shop_event("A-10", "U9", "view", "11:01:30"),
                    shop_event("A-8", "U5", "view", "11:00:17"),
                    shop_event("A-7", "U9", "cart", "11:00:32", product="P004"),
                ],
                [
                    shop_event("A-7", "U9", "cart", "11:00:20", product="P004"),
                    shop_event("A-9", "U5", "purchase", "11:00:35", price=12.5, quantity=2),
                    shop_event("A-11", "U5", "view", "11:01:31"),
                    shop_event("A-13", "U7", "cart", "11:00:45", category="Books"),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "no_watermark",
            "No batch ran with a watermark, so Spark keeps every event_id for ever (compare the "
            "state rows). withWatermark returns a new DataFrame, and only a deduplication of "
            "that DataFrame sees the watermark: add withWatermark('timestamp', DEDUP_DELAY) to "
            "the chain, then deduplicate within it.",
            when=has_no_watermark,
        ),
        Mistake(
            "delay_too_short",
            "Every watermark is later than expected by the same amount: the watermark's delay is "
            "shorter than DEDUP_DELAY. dropDuplicatesWithinWatermark forgets an id once the "
            "watermark passes its time + that delay, so an id can be forgotten before its last "
            "retry comes; that retry is then let through again (or dropped as late). The "
            "delay is the retries' promise, DEDUP_DELAY.",
            when=watermark_ahead,
        ),
        Mistake(
            "delay_too_long",
            "Every watermark is earlier than expected by the same amount, and more ids are left "
            "in state: the watermark's delay is longer than DEDUP_DELAY. The watermark is the "
            "latest event time minus the delay, and an id is kept until it passes the id's "
            "time + the same delay: one delay, DEDUP_DELAY, not the two added up.",
            when=watermark_behind,
        ),
        Mistake(
            "time_in_key",
            "A retry got through (an event_id came out twice), and fewer ids are left in state "
            "than expected: ids left the state when the watermark passed their own time, not "
            "their time + DEDUP_DELAY. That is dropDuplicates with the event time in its key "
            "(the timestamp, or its window): a retry carries a later timestamp, so it is another "
            "key. Keep the key event_id alone and deduplicate within the watermark.",
            when=retry_through_and_ids_forgotten_early,
        ),
        Mistake(
            "window_in_key",
            "Spark stopped the query: more than one event-time column. The deduplication's "
            "input holds the watermarked timestamp and a column computed from it that carries "
            "the watermark too (its window), and Spark 4.2 allows one per stream. A key with the "
            "event time in it would let through a retry whose later timestamp falls in the next "
            "window anyway: deduplicate within the watermark, on event_id alone.",
            error=r"More than one event time columns",
        ),
        Mistake(
            "all_columns",
            "A retry got through: an event_id came out twice, though the watermarks are the "
            "expected ones. The key holds more than event_id: every column (a deduplication "
            "given no columns), the timestamp, or something computed from it (its minute): a "
            "retry carries a later timestamp, so it is another key. Deduplicate on "
            "['event_id'] alone.",
            when=retry_through,
        ),
        Mistake(
            "ids_kept_forever",
            "The right rows, but more ids left in state than expected: ids are kept for ever. "
            "A watermark (before or after it) does not make dropDuplicates(['event_id']) "
            "forget: dropDuplicates forgets a key only when the key holds the watermarked "
            "event-time column itself, and event_id alone does not (nor does a column computed "
            "from the timestamp). Deduplicate within the watermark instead, on event_id alone.",
            when=keeps_every_id,
        ),
    ],
)
