"""Exercise 15.3 · A dedup that forgets (fix) — practises lesson 15, dropDuplicatesWithinWatermark.

The payment gateway retries: a payment it could not confirm is sent again with the same
transaction_id, a few seconds later, with the retry's time as its timestamp. A retry never
comes more than 20 seconds (DEDUP_DELAY) of event time after the first copy.

The query below lets each payment through once, but it has a problem: its state grows for
ever. After a day the state store still holds every transaction_id the stream has ever
seen, and each micro-batch reads and writes a bigger state. Fix it so that it still lets
each payment through once (the first copy, whatever the retries' timestamps), and keeps a
transaction_id only until the watermark (the latest event time seen minus DEDUP_DELAY)
has passed that copy's time + DEDUP_DELAY.

Expected columns, in this order: the input's, unchanged (transaction_id, user_id, amount,
category, timestamp), one row per transaction_id.

Input: a stream of payments with common.schemas.TRANSACTION_SCHEMA.

The check also compares how many state rows (ids kept) are left after the last batch.

Check it:  python course.py exercises check 15.3
Stuck?     python course.py exercises hint 15.3
"""

from pyspark.sql import DataFrame

DEDUP_DELAY = "20 seconds"  # a retry comes at most this long (event time) after the first copy


def build_unique_payments(payments: DataFrame) -> DataFrame:
    """Each payment once, whatever the retries' timestamps."""
    # Spark keeps each transaction_id in state, to recognise a retry.
    return payments.dropDuplicates(["transaction_id"])
