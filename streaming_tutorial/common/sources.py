"""The course's sources, each written once: JSON lines from files or Kafka, parsed with a
quarantine reason, and the product catalogue.

Every streaming source of JSON reads *text* first and parses it with ``from_json``:
a line that cannot be used is never lost and never stops the query. It keeps its raw
text and gets a ``quarantine_reason`` (null for a good record), so the lesson can
send it to a quarantine and count it::

    lines = read_json_lines(spark, paths.ECOMMERCE_DIR)           # or kafka_text(read_kafka(...))
    parsed = parse_json(lines, ECOMMERCE_EVENT_SCHEMA)
    good, bad = valid_records(parsed, ECOMMERCE_EVENT_SCHEMA), quarantined(parsed)

Which fields are required is said by the schema itself: ``nullable=False``.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, StringType, StructField, StructType

from . import paths
from .schemas import PRODUCT_SCHEMA

CORRUPT_COLUMN = "_corrupt_record"  # from_json puts the text of a record that does not fit here
REASON_COLUMN = "quarantine_reason"
QUARANTINE_SCHEMA = "reason STRING, raw_line STRING"  # what every quarantine holds (plus any kept columns)


def read_json_lines(spark, folder: Path, *, max_files_per_trigger: int | None = None) -> DataFrame:
    """Each line of the folder's files as text (``value``), with the file it came from (``source_file``)."""
    # No checkpointLocation here: it is an option of writeStream. On a reader Spark
    # silently ignores it, and a restarted query would read every file again.
    reader = spark.readStream
    if max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", max_files_per_trigger)
    folder.mkdir(parents=True, exist_ok=True)
    # _metadata is the hidden per-file column of file sources: which file each line came from.
    return reader.text(str(folder)).withColumn("source_file", F.col("_metadata.file_name"))


def read_kafka(spark, bootstrap: str, topic: str, *, starting_offsets: str = "earliest",
               max_offsets_per_trigger: int | None = None) -> DataFrame:
    """A topic as a stream: key, value (bytes), topic, partition, offset, timestamp."""
    reader = (
        spark.readStream.format("kafka")  # get_spark(kafka=True) put the connector on the classpath
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        # The default is "latest": a new query would skip everything already in the topic.
        .option("startingOffsets", starting_offsets)
    )
    if max_offsets_per_trigger:
        # Bounds each micro-batch, so a backlog is worked off in steady steps, not one huge batch.
        reader = reader.option("maxOffsetsPerTrigger", max_offsets_per_trigger)
    return reader.load()


def kafka_text(raw: DataFrame) -> DataFrame:
    """Kafka rows as text (``key``, ``value``) plus where each came from in the topic."""
    return raw.select(
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        F.col("topic").alias("source_topic"),
        F.col("partition").alias("source_partition"),
        F.col("offset").alias("source_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    )


def parse_json(lines: DataFrame, schema: StructType, *, text: str = "value") -> DataFrame:
    """Add the record's fields (parsed from the ``text`` column) and its ``quarantine_reason``.

    PERMISSIVE parsing never fails the query: a record that does not fit the schema
    comes back with nulls, and its text in ``_corrupt_record``.
    """
    with_corrupt = StructType(list(schema.fields) + [StructField(CORRUPT_COLUMN, StringType())])
    record = F.from_json(F.col(text), with_corrupt, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN})
    parsed = lines.withColumn("_record", record)
    fields = [F.col(f"_record.{field.name}").alias(field.name) for field in schema.fields]
    return parsed.select(*lines.columns, *fields, quarantine_reason(schema, text).alias(REASON_COLUMN))


def quarantine_reason(schema: StructType, text: str = "value") -> Column:
    """Why a parsed record cannot be used, or null when it is good. The first reason wins."""
    reason = (
        F.when(F.col(text).isNull() | (F.trim(F.col(text)) == ""), F.lit("empty line"))
        # json_object_keys is null when the text is not one JSON object (cut off, plain text, a list).
        .when(F.json_object_keys(F.col(text)).isNull(), F.lit("not a JSON object"))
        .when(F.col(f"_record.{CORRUPT_COLUMN}").isNotNull(), F.lit("a field has the wrong type"))
    )
    for field in schema.fields:
        if not field.nullable:
            reason = reason.when(F.col(f"_record.{field.name}").isNull(), F.lit(f"missing {field.name}"))
        if isinstance(field.dataType, (DoubleType, FloatType)):
            # 1e400 parses as Infinity: a number no real amount or reading can be.
            value = F.col(f"_record.{field.name}")
            reason = reason.when(F.isnan(value) | F.abs(value).eqNullSafe(F.lit(float("inf"))),
                                 F.lit(f"{field.name} is not a finite number"))
    return reason


def valid_records(parsed: DataFrame, schema: StructType, *keep: str) -> DataFrame:
    """The good records: the schema's columns, plus any ``keep`` columns (e.g. ``source_file``)."""
    return parsed.where(F.col(REASON_COLUMN).isNull()).select(*schema.fieldNames(), *keep)


def quarantined(parsed: DataFrame, *keep: str, text: str = "value") -> DataFrame:
    """The records that cannot be used, kept whole: the reason and the raw text, plus ``keep``."""
    return parsed.where(F.col(REASON_COLUMN).isNotNull()).select(
        *keep, F.col(REASON_COLUMN).alias("reason"), F.col(text).alias("raw_line"))


def start_quarantine(bad: DataFrame, folder: Path, checkpoint: Path, trigger: dict, *, name: str):
    """Append the ``quarantined`` records to JSON files in ``folder``: kept with their reason, never lost.

    A file sink with its own checkpoint, so a restart adds only the bad lines it has not
    written yet. Returns the started query.
    """
    return (
        bad.writeStream.format("json")
        .outputMode("append")
        .option("path", str(folder))
        .option("checkpointLocation", str(checkpoint))
        .queryName(name)
        .trigger(**trigger)
        .start()
    )


def quarantine_counts(spark, folder: Path) -> list[tuple[str, int]]:
    """(reason, lines) in a folder ``start_quarantine`` wrote, most frequent first; [] before its first batch."""
    if not (folder / "_spark_metadata").is_dir():
        return []
    # The sink's _spark_metadata log lists the files of committed batches only.
    counts = spark.read.schema(QUARANTINE_SCHEMA).json(str(folder)).groupBy("reason").count()
    return [(row.reason, row["count"]) for row in counts.orderBy(F.desc("count"), "reason").collect()]


def quarantine_summary(spark, folder: Path) -> str:
    """What a quarantine folder holds, for the learner: '2 (not a JSON object), 1 (missing event_id)' or 'none'."""
    return ", ".join(f"{lines} ({reason})" for reason, lines in quarantine_counts(spark, folder)) or "none"


def read_products(spark, csv: Path = paths.PRODUCTS_CSV) -> DataFrame:
    """The product catalogue, read in batch (a static DataFrame)."""
    return spark.read.schema(PRODUCT_SCHEMA).option("header", True).csv(str(csv))
