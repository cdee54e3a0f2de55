"""Another right answer: the same MERGE in SQL: the batch is a temporary view, reduced to each
user's newest event with ROW_NUMBER in a subquery, and MERGE INTO delta.`<path>` updates a
matched user only when the batch's event is newer (ties broken by event id), inserting new
users. The table is created empty first, with the expected column order, from the same query."""

from pathlib import Path

from delta.tables import DeltaTable  # noqa: F401  (you will need it)
from pyspark.sql import DataFrame, Window  # noqa: F401  (Window: you may need it)
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)

LATEST_PER_USER = """
    SELECT user_id, event_id AS last_event_id, event_type AS last_event_type,
           product_id AS last_product_id, `timestamp` AS last_seen
    FROM (
        SELECT *, ROW_NUMBER() OVER (
            PARTITION BY user_id ORDER BY `timestamp` DESC, event_id DESC) AS rn
        FROM latest_events_batch)
    WHERE rn = 1"""


def write_latest_per_user(batch: DataFrame, table: Path) -> None:
    """Upsert one row per user, their latest event, into the Delta table ``table`` (creating
    the table if needed)."""
    spark = batch.sparkSession
    location = paths.uri(table)
    batch.createOrReplaceTempView("latest_events_batch")
    if not DeltaTable.isDeltaTable(spark, location):
        spark.sql(LATEST_PER_USER).limit(0).write.format("delta").save(location)
    spark.sql(f"""
        MERGE INTO delta.`{location}` AS t
        USING ({LATEST_PER_USER}) AS s
        ON t.user_id = s.user_id
        WHEN MATCHED AND (s.last_seen > t.last_seen
            OR (s.last_seen = t.last_seen AND s.last_event_id > t.last_event_id))
            THEN UPDATE SET *
        WHEN NOT MATCHED THEN INSERT *""")
