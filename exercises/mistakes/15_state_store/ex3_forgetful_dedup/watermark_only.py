"""A known mistake: a watermark added, but dropDuplicates on the id never forgets one."""

from pyspark.sql import DataFrame

DEDUP_DELAY = "20 seconds"


def build_unique_payments(payments: DataFrame) -> DataFrame:
    return payments.withWatermark("timestamp", DEDUP_DELAY).dropDuplicates(["transaction_id"])
