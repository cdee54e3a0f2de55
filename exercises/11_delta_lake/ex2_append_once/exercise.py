"""Exercise 11.2 · Exactly once into Delta (build) — practises lesson 11, txnAppId and txnVersion.

Lesson 11's Delta sink appends each micro-batch exactly once: it commits the batch's files
together with (query id, batch id) in the table's log, and a batch that runs again after a crash
finds its id there and is skipped. A write in foreachBatch is a plain batch write, with no such
record. Write ``write_events_once``, the foreachBatch function that appends the batch's events,
as they are, to the Delta table at ``table``, exactly once per batch of the query.

The check runs your function in a real query over the first micro-batches, and batch 1 a second
time (what Spark does when it crashed after the sink wrote but before it recorded the batch as
done; the retry comes from a fresh import of your file, as in a restarted process). It stops
each query's batch 0 inside your function, right after one of its writes, and runs it again.
Then a SECOND query, with a new checkpoint (a new query id, batch ids from 0 again), appends the
last micro-batch to the same table. The table is read after each batch: the check's batches 0
and 1 are the first query's, its batch 2 the second query's.

Expected: every row of every batch once. Exactly once is about batches, not events: an event
the source itself sent twice, in two batches, is two rows (removing such duplicates is another
job, lesson 15's). The check shows each event's event_id, user_id and event_type, with
``copies``: how many rows of the table hold it (1 is right, 2 for an event sent twice).

Input: micro-batches of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA (event_id,
user_id, event_type, product_id, product_name, category, price, quantity, timestamp).

The check takes about 10 seconds (measured on 2 cores).

Check it:  python course.py exercises check 11.2
Stuck?     python course.py exercises hint 11.2
"""

from pathlib import Path

from pyspark.sql import DataFrame

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)
from common.batch_ids import query_id  # noqa: F401  (the query's id, the same after a restart)


def write_events_once(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Append the micro-batch to the Delta table ``table``, once per batch of this query: the
    same batch id again must add nothing."""
    raise NotImplementedError("TODO: append the batch so that a replayed batch id adds nothing")
