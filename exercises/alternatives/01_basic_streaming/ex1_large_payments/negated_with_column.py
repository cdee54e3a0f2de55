"""Another right answer: keeps rows where NOT (amount <= LARGE_AMOUNT), which is amount >
LARGE_AMOUNT (a null amount gives null and is dropped either way); the fee is added with
withColumn and the final select puts the five columns in the asked order."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

LARGE_AMOUNT = 500.0  # a payment is large above this amount (not at it)
FEE_RATE = 0.02  # the shop pays 2% of each payment


def build_large_payments(transactions: DataFrame) -> DataFrame:
    """The payments above LARGE_AMOUNT, with the fee on each."""
    large = transactions.where(~(F.col("amount") <= F.lit(LARGE_AMOUNT)))
    with_fee = large.withColumn("fee", F.round(F.col("amount") * F.lit(FEE_RATE), 2))
    return with_fee.select("timestamp", "transaction_id", "user_id", "amount", "fee")
