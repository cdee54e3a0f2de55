"""A known mistake: the fee is computed but not rounded to 2 decimals."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

LARGE_AMOUNT = 500.0
FEE_RATE = 0.02


def build_large_payments(transactions: DataFrame) -> DataFrame:
    return transactions.filter(F.col("amount") > LARGE_AMOUNT).select(
        "timestamp",
        "transaction_id",
        "user_id",
        "amount",
        (F.col("amount") * FEE_RATE).alias("fee"),
    )
