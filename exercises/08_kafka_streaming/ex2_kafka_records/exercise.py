"""Exercise 08.2 · Kafka records with headers (build) — practises lesson 08, writing to Kafka.

Turn a stream of shop events into the records the Kafka sink writes. Each event becomes one
record with three columns:

  key      the event's user_id: Kafka sends a key's records to one partition, so one user's
           events stay in order. A string is fine: the sink writes its UTF-8 bytes.
  value    the whole event as a JSON object: every field of the input, in the input's order.
           A field that is null is written as null ("category":null), never left out: the
           consumers of this topic read a fixed set of fields.
  headers  two headers, in this order: "event-type", the event's event_type, and
           "schema-version", SCHEMA_VERSION (below). Kafka's header values are bytes.

The check writes your records with the real Kafka sink (writeStream.format("kafka")) to a new
topic of 3 partitions, one micro-batch at a time, reads them back with Spark's Kafka source
(includeHeaders) and compares each record, with the partition the sink put it in, batch by
batch. It uses KAFKA_BOOTSTRAP_SERVERS, or the broker python local_kafka.py start runs, or
starts the course's own for the check and stops it after.

Input: a stream with common.schemas.ECOMMERCE_EVENT_SCHEMA (event_id, user_id, event_type,
product_id, product_name, category, price, quantity, timestamp). Some user ids are not ASCII
(Zoë); some fields are null.

The check takes about 10 seconds (measured on 2 cores; when no broker runs, about 5 of them are
the course's own, started and stopped for each of the two scenarios).

Check it:  python course.py exercises check 08.2
Stuck?     python course.py exercises hint 08.2
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

SCHEMA_VERSION = "2"  # the value's layout: a consumer reads this header before parsing the value


def to_kafka_records(events: DataFrame) -> DataFrame:
    """Each event as a Kafka record: key (user_id), value (JSON), headers (event-type,
    schema-version)."""
    raise NotImplementedError("TODO: write the query")
