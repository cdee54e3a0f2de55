"""Exercise 01.1 · Large payments (build) — practises lesson 01, transformations on a stream.

Keep only the large payments, those of MORE than LARGE_AMOUNT (a payment of exactly 500.0 is
not large), and add the fee the shop pays on each: the amount times FEE_RATE, rounded to 2
decimals. Write it as lesson 01's build_number_facts is written: filter keeps rows, select
picks and computes columns. Nothing here knows it is a stream.

Expected columns, in this order:
  timestamp        when the payment was made (as read)
  transaction_id   the payment's id
  user_id          who paid
  amount           the amount paid
  fee              amount * FEE_RATE, rounded to 2 decimals (F.round)

Input: a stream of payments with common.schemas.TRANSACTION_SCHEMA
(transaction_id, user_id, amount, category, timestamp). category is optional: a payment
without one (null) is still a payment.

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 01.1
Stuck?     python course.py exercises hint 01.1
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

LARGE_AMOUNT = 500.0  # a payment is large above this amount (not at it)
FEE_RATE = 0.02  # the shop pays 2% of each payment


def build_large_payments(transactions: DataFrame) -> DataFrame:
    """The payments above LARGE_AMOUNT, with the fee on each."""
    raise NotImplementedError("TODO: write the query")
