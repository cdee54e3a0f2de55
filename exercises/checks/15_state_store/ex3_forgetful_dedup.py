from common.schemas import TRANSACTION_SCHEMA
from practice.scenarios import transaction
from practice.spec import Exercise, Mistake, Scenario


def transaction_ids(observation) -> list:
    """Every transaction_id the query emitted, in all batches."""
    columns = observation.columns
    position = columns.index("transaction_id") if "transaction_id" in columns else 0
    return [row[position] for batch in observation.batches for row in batch.rows]


def lets_retries_through(mine, wanted):
    """Some transaction_id came out twice: the key holds more than the id."""
    ids = transaction_ids(mine)
    return len(ids) > len(set(ids))


def state_still_grows(mine, wanted):
    """The right rows, but more ids kept in state than the watermark allows."""
    same_rows = [batch.rows for batch in mine.batches] == [batch.rows for batch in wanted.batches]
    return same_rows and (mine.state_rows or 0) > (wanted.state_rows or 0)


EXERCISE = Exercise(
    title="A dedup that forgets",
    kind="fix",
    practises="dropDuplicatesWithinWatermark: a deduplication whose state does not grow for ever",
    function="build_unique_payments",
    schemas=TRANSACTION_SCHEMA,
    output_mode="append",
    check_state=True,
    hints=[
        "dropDuplicates keeps a key until a watermark says it is done, and a watermark can "
        "only say that of a key that holds the event time. transaction_id alone never is: "
        "so it is kept for ever. Adding the timestamp to the key would let retries through.",
        "Spark 3.5+ has a deduplication made for this: a watermark on the event time, then "
        "dropDuplicatesWithinWatermark on the id. It keeps each id until the watermark passes "
        "its time + the watermark's delay.",
        "return payments.withWatermark('timestamp', DEDUP_DELAY)"
        ".dropDuplicatesWithinWatermark(['transaction_id'])",
    ],
    scenarios=[
        # T1 retried in batch 1, T2 in batch 2, each with a later timestamp. Batch 3's
        # watermark (10:30:30) forgets T1 and T2 at its end; a trailing batch with no data
        # (10:30:40) forgets T3: T4 and T5 are left in state, where the broken query keeps 5.
        Scenario(
            [
                [
                    transaction("T1", "U1", 12.5, "10:30:00"),
                    transaction("T2", "U2", 40.0, "10:30:04"),
                ],
                [
                    transaction("T1", "U1", 12.5, "10:30:06"),
                    transaction("T3", "U1", 8.0, "10:30:15"),
                ],
                [
                    transaction("T2", "U2", 40.0, "10:30:09"),
                    transaction("T4", "U3", 99.0, "10:30:50", category="games"),
                ],
                [transaction("T5", "U2", 5.0, "10:31:00")],
            ]
        ),
        # Other ids; P-3 retried twice (once in its own batch, an exact copy), P-2 retried
        # two batches later; P-1, P-2 and P-3 are forgotten by the end, P-4 and P-5 kept.
        Scenario(
            [
                [
                    transaction("P-2", "U7", 3.0, "09:15:02", category="food"),
                    transaction("P-1", "U8", 70.0, "09:15:00"),
                ],
                [
                    transaction("P-3", "U8", 15.0, "09:15:20"),
                    transaction("P-3", "U8", 15.0, "09:15:20"),
                ],
                [
                    transaction("P-3", "U8", 15.0, "09:15:26"),
                    transaction("P-2", "U7", 3.0, "09:15:10", category="food"),
                    transaction("P-4", "U7", 22.0, "09:15:45"),
                ],
                [transaction("P-5", "U9", 1.0, "09:16:00")],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "time_in_key",
            "A retry got through: a transaction_id came out twice. Either the key holds more "
            "than the id (the timestamp: a retry carries a later one, so it is another key), "
            "or the id was forgotten before its retry came (a watermark delay shorter than "
            "DEDUP_DELAY; compare the watermarks). The key is transaction_id alone, within a "
            "watermark of DEDUP_DELAY.",
            when=lets_retries_through,
        ),
        Mistake(
            "watermark_only",
            "The ids are still kept for ever (compare the state rows). A watermark before "
            "dropDuplicates changes nothing unless the key holds the watermarked event-time "
            "column itself: a column computed from it (its minute, say) is not that column, "
            "and the timestamp itself would let retries through. Deduplicate within the "
            "watermark instead, on transaction_id alone.",
            when=state_still_grows,
        ),
    ],
)
