"""Another right answer: the same record in SQL expressions (named_struct, CAST AS BINARY, and
to_json's options as a map)."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

SCHEMA_VERSION = "2"


def to_kafka_records(events: DataFrame) -> DataFrame:
    return events.selectExpr(
        "user_id AS key",
        "to_json(struct(*), map('ignoreNullFields', 'false')) AS value",
        "array("
        "named_struct('key', 'event-type', 'value', CAST(event_type AS BINARY)), "
        f"named_struct('key', 'schema-version', 'value', CAST('{SCHEMA_VERSION}' AS BINARY))"
        ") AS headers",
    )
