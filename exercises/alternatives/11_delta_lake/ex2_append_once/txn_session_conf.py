"""Another right answer: the same (query id, batch id) guard as the writer options, set instead
through the session confs spark.databricks.delta.write.txnAppId / txnVersion, which delta-spark
4.4 reads when the writer has no txn options (DeltaCommand.getTxnVersionAndAppId). The write
commits the pair with the data; a replayed batch id is skipped. The confs are unset afterwards
so no other write of the session inherits them."""

from pathlib import Path

from pyspark.sql import DataFrame

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)
from common.batch_ids import query_id  # noqa: F401  (the query's id, the same after a restart)

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


def write_events_once(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Append the micro-batch to the Delta table ``table``, once per batch of this query: the
    same batch id again must add nothing."""
    conf = batch.sparkSession.conf
    conf.set(TXN_APP_ID, query_id(batch))
    conf.set(TXN_VERSION, str(batch_id))
    try:
        batch.write.format("delta").mode("append").save(paths.uri(table))
    finally:
        conf.unset(TXN_APP_ID)
        conf.unset(TXN_VERSION)
