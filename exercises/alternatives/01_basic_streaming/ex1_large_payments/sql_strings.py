"""Another right answer: the same filter and projection written as SQL strings (where +
selectExpr); amount > 500.0 is strict, round(amount * 0.02, 2) is F.round of the same double
product, and the columns come out in the asked order with the asked names."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

LARGE_AMOUNT = 500.0  # a payment is large above this amount (not at it)
FEE_RATE = 0.02  # the shop pays 2% of each payment


def build_large_payments(transactions: DataFrame) -> DataFrame:
    """The payments above LARGE_AMOUNT, with the fee on each."""
    return transactions.where(f"amount > {LARGE_AMOUNT}").selectExpr(
        "timestamp",
        "transaction_id",
        "user_id",
        "amount",
        f"round(amount * {FEE_RATE}, 2) AS fee",
    )
