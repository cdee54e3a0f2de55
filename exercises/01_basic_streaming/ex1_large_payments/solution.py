"""Exercise 01.1 · Large payments — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

LARGE_AMOUNT = 500.0  # a payment is large above this amount (not at it)
FEE_RATE = 0.02  # the shop pays 2% of each payment


def build_large_payments(transactions: DataFrame) -> DataFrame:
    """The payments above LARGE_AMOUNT, with the fee on each."""
    # The same code as on a batch DataFrame: filter keeps rows (strictly above the limit),
    # select picks the columns and computes the new one.
    return transactions.filter(F.col("amount") > LARGE_AMOUNT).select(
        "timestamp",
        "transaction_id",
        "user_id",
        "amount",
        F.round(F.col("amount") * FEE_RATE, 2).alias("fee"),
    )
