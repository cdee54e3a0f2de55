"""Exercise 15.3 · A dedup that forgets — a reference solution."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "20 seconds"  # a retry comes at most this long (event time) after the first copy


def build_unique_payments(payments: DataFrame) -> DataFrame:
    """Each payment once, whatever the retries' timestamps."""
    # dropDuplicates(["transaction_id"]) can never forget an id: its key holds no event time,
    # so no watermark can tell it that an id is done. With the watermark, the deduplication
    # keeps an id until the watermark passes its time + DEDUP_DELAY; the key stays the id
    # alone, so a retry with a later timestamp is still caught.
    return payments.withWatermark("timestamp", DEDUP_DELAY).dropDuplicatesWithinWatermark(
        ["transaction_id"]
    )
