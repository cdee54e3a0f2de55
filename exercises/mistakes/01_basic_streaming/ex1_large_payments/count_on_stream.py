"""A known mistake: count() on the stream, to print how many large payments there are."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

LARGE_AMOUNT = 500.0
FEE_RATE = 0.02


def build_large_payments(transactions: DataFrame) -> DataFrame:
    large = transactions.filter(F.col("amount") > LARGE_AMOUNT)
    print(f"{large.count()} large payments")
    return large.select(
        "timestamp",
        "transaction_id",
        "user_id",
        "amount",
        F.round(F.col("amount") * FEE_RATE, 2).alias("fee"),
    )
