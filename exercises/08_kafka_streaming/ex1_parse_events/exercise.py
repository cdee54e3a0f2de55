"""Exercise 08.1 · Parse Kafka events (build) — practises lesson 08, Kafka rows and a quarantine.

A Kafka source gives every message as a row of key, value, topic, partition, offset and
timestamp, with the key and the value as bytes. Turn those rows into shop events: each row
keeps its key and its value as text, says where it came from in Kafka, gets the event's fields
parsed from the JSON value, and a quarantine reason. A value that cannot be used must NOT be
lost: it stays, with null fields and the reason why (so it can be sent to a quarantine topic
and found again by its partition and offset). A good event's reason is null.

Parse the value as lesson 08's parse_events does, with the course's parser:
common.parsing.parse_json(rows, ECOMMERCE_EVENT_SCHEMA) adds the schema's fields and
quarantine_reason (its reasons: "not a JSON object", "missing user_id", ...) and keeps the
columns it is given.

Expected columns, in this order:
  key                the message's key, as a string
  value              the message's value, as a string (the raw JSON text)
  source_topic       the topic it was read from (Kafka's topic)
  source_partition   its partition (Kafka's partition)
  source_offset      its offset in that partition (Kafka's offset)
  kafka_timestamp    the record's Kafka timestamp: by default when the producer created it
                     (CreateTime); the broker's write time only on a topic set to
                     message.timestamp.type=LogAppendTime
  event_id, user_id, event_type, product_id, product_name, category, price, quantity,
  timestamp          the event's fields (common.schemas.ECOMMERCE_EVENT_SCHEMA), null when
                     the value cannot be parsed
  quarantine_reason  why the value cannot be used, or null for a good event

Input: a stream with a Kafka source's columns and types: key BINARY, value BINARY,
topic STRING, partition INT, offset LONG, timestamp TIMESTAMP, timestampType INT (0 for
CreateTime, 1 for LogAppendTime). The key and the value are bytes, as Kafka gives them; a key
may be null, and a value may be null (a tombstone) or bytes that are not UTF-8 text.

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 08.1
Stuck?     python course.py exercises hint 08.1
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

from common import parsing  # noqa: F401  (you will need it)
from common.schemas import ECOMMERCE_EVENT_SCHEMA  # noqa: F401  (you will need it)


def parse_events(messages: DataFrame) -> DataFrame:
    """Kafka rows -> the event's fields, where it came from, and why it cannot be used (or null)."""
    raise NotImplementedError("TODO: write the query")
