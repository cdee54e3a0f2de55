"""A known mistake: >= keeps a payment of exactly LARGE_AMOUNT, which is not large."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

LARGE_AMOUNT = 500.0
FEE_RATE = 0.02


def build_large_payments(transactions: DataFrame) -> DataFrame:
    return transactions.filter(F.col("amount") >= LARGE_AMOUNT).select(
        "timestamp",
        "transaction_id",
        "user_id",
        "amount",
        F.round(F.col("amount") * FEE_RATE, 2).alias("fee"),
    )
