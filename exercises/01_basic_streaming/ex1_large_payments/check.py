from common.schemas import TRANSACTION_SCHEMA
from practice.scenarios import transaction
from practice.spec import Exercise, Mistake, Scenario

LARGE_AMOUNT = 500.0


def column_values(observation, name):
    """Every value of one column, over all micro-batches ([] when there is no such column)."""
    if name not in observation.columns:
        return []
    index = observation.columns.index(name)
    return [row[index] for batch in observation.batches for row in batch.rows]


def keeps_the_limit(mine, wanted):
    """A payment of exactly LARGE_AMOUNT came out: >= where > was meant."""
    return LARGE_AMOUNT in column_values(mine, "amount")


def fee_not_rounded(mine, wanted):
    """The same payments, but some fee has more than 2 decimals."""
    if mine.columns != wanted.columns:
        return False
    mine_ids = column_values(mine, "transaction_id")
    fees = column_values(mine, "fee")
    return mine_ids == column_values(wanted, "transaction_id") and any(
        isinstance(fee, float) and round(fee, 2) != fee for fee in fees
    )


EXERCISE = Exercise(
    title="Large payments",
    kind="build",
    practises="filter and select on a stream, written exactly as on a batch DataFrame",
    function="build_large_payments",
    schemas=TRANSACTION_SCHEMA,
    check_watermark=False,  # not an exercise about watermarks: a harmless one is no failure
    output_mode="append",
    mirrors="",
    why=(
        "filter and select are stateless: Spark runs them on each micro-batch's new rows on "
        "their own and remembers nothing between batches. That is why the code is the batch "
        "code, line for line, and why append mode can send each row as soon as its batch runs. "
        "'> LARGE_AMOUNT' and F.round are ordinary column expressions: they mean on a stream "
        "exactly what they mean on a table."
    ),
    hints=[
        "Does anything in this query need to remember an earlier micro-batch, or can each batch "
        "be filtered and computed on its own, as a batch job would do it? And is a payment of "
        "exactly LARGE_AMOUNT a large one?",
        "lesson 01, `build_number_facts`: filter keeps the rows, then one select picks the "
        "columns to keep and computes a new one, named with alias.",
        "The same shape here: keep the amounts strictly above LARGE_AMOUNT, then select the four "
        "columns in the order asked and the fee, amount times FEE_RATE rounded to 2 places with "
        "F.round, named 'fee'.",
    ],
    scenarios=[
        # T2 is exactly 500.0, not large. T5's fee is 10.0002 before rounding, T6's 39.9998.
        Scenario(
            [
                [
                    transaction("T1", "U1", 120.0, "10:30:01"),
                    transaction("T2", "U2", 500.0, "10:30:02", "games"),
                    transaction("T3", "U1", 812.5, "10:30:03"),
                ],
                [
                    transaction("T4", "U3", 49.99, "10:30:05", "music"),
                    transaction("T5", "U2", 500.01, "10:30:07", "games"),
                ],
                [
                    transaction("T6", "U1", 1999.99, "10:30:09"),
                    transaction("T7", "U3", 499.99, "10:30:11"),
                ],
            ]
        ),
        # Other ids; the 500.0 boundary again; P-4 has no category (it is optional): still a
        # large payment; a batch with no large payment at all.
        Scenario(
            [
                [
                    transaction("P-9", "USER-7", 2500.0, "11:02:00", "toys"),
                    transaction("P-8", "USER-3", 500.0, "11:02:01", "toys"),
                    transaction("P-4", "USER-1", 730.0, "11:02:02", None),
                ],
                [transaction("P-7", "USER-3", 75.0, "11:02:04")],
                [
                    transaction("P-5", "USER-1", 500.5, "11:02:09", "games"),
                    transaction("P-6", "USER-7", 640.37, "11:02:05"),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "count_on_stream",
            "count() (or show(), collect()) on a stream: a stream has no end, so there is "
            "nothing to count yet, and Spark refuses. build_large_payments only describes the "
            "query; the sink (here the check's foreachBatch) receives each micro-batch.",
            error=r"Queries with streaming sources must be executed with writeStream\.start",
        ),
        Mistake(
            "greater_or_equal",
            "A payment of exactly LARGE_AMOUNT came out: the filter uses >= where large means "
            "MORE than 500.0. Use F.col('amount') > LARGE_AMOUNT.",
            when=keeps_the_limit,
        ),
        Mistake(
            "fee_not_rounded",
            "The fee is not rounded: amount * FEE_RATE gives 10.0002 for 500.01. Wrap it in "
            "F.round(..., 2).",
            when=fee_not_rounded,
        ),
    ],
)
