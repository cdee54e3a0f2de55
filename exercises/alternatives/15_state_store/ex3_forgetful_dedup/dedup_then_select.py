"""Another right answer: the deduplication on the id alone, then an explicit select of the
payment's columns in their order (a no-op projection)."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "20 seconds"  # a retry comes at most this long (event time) after the first copy


def build_unique_payments(payments: DataFrame) -> DataFrame:
    """Each payment once, whatever the retries' timestamps."""
    unique = payments.withWatermark("timestamp", DEDUP_DELAY).dropDuplicatesWithinWatermark(
        ["transaction_id"]
    )
    return unique.select(*payments.columns)
