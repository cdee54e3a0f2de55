"""Exercise 13.2 · What real-time mode runs (predict) — practises lesson 13, real-time limits.

Each function in QUERIES starts one query with trigger(realTime="5 seconds"). All but one read
the same Kafka topic of words, JSON messages like {"id": 1, "word": "spark", "sent_ms": ...}
(lesson 13's), and most write their results to another topic. For each, one of three things
happens in Spark 4.2:

  RUNS                real-time mode runs it: its task passes each message on as it comes;
  REFUSED_AT_START    start() raises: no query ever runs;
  FAILS_ONCE_RUNNING  start() returns a query, which fails as soon as it runs (query.exception()
                      says why; start() does not).

Predict which, for each function. Do not run them: reason it out from lesson 13, then check.
The check starts each one on a real Kafka broker (KAFKA_BOOTSTRAP_SERVERS, or the one that
python local_kafka.py start runs, or the course's own, started for the check and stopped after
it) and watches what happens: a result on the output topic, or Spark's error.

Input: a topic with three words (spark, kafka, spark); for start_shout_files, a folder holding
one file with the same three words.

The check takes about 10 seconds (measured on 2 cores; when no broker runs, about 2.5 of them are
the course's own, started and stopped for the check).

Check it:  python course.py exercises check 13.2
Stuck?     python course.py exercises hint 13.2
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import paths
from infra.kafka import security_options

REALTIME = {"realTime": "5 seconds"}  # the shortest batch Spark accepts
MESSAGE_FIELDS = "id INT, word STRING, sent_ms BIGINT"
# A static table, small enough to broadcast to every task.
WORD_KINDS = "SELECT * FROM VALUES ('spark', 'engine'), ('kafka', 'log') AS kinds(word, kind)"

RUNS = "runs"
REFUSED_AT_START = "refused at start"
FAILS_ONCE_RUNNING = "fails once running"


# The shared pieces. ``where`` says where everything is: where.bootstrap (Kafka), where.topic
# (the words), where.folder (the same words in files), where.results (the output topic) and
# where.checkpoint.


def read_words(spark, where) -> DataFrame:
    """The topic's messages from the first one, as columns: id, word, sent_ms."""
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", where.bootstrap)
        .options(**security_options(where.bootstrap))
        .option("subscribe", where.topic)
        .option("startingOffsets", "earliest")
        .load()
        # The value is JSON in bytes: as text, then its fields as columns.
        .select(F.from_json(F.col("value").cast("string"), MESSAGE_FIELDS).alias("m"))
        .select("m.*")
    )


def as_kafka_records(results: DataFrame) -> DataFrame:
    """key = the word, value = the whole row as JSON: what the Kafka sink writes."""
    return results.select(
        F.col("word").alias("key"), F.to_json(F.struct(*results.columns)).alias("value")
    )


def write_to_kafka(results: DataFrame, where, output_mode: str | None = "update"):
    """Start the query: ``results`` to the output topic, in real-time mode."""
    writer = (
        as_kafka_records(results)
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", where.bootstrap)
        .options(**security_options(where.bootstrap))
        .option("topic", where.results)
        .option("checkpointLocation", paths.uri(where.checkpoint))
    )
    if output_mode is not None:  # None: no .outputMode() call, so append, the default
        writer = writer.outputMode(output_mode)
    return writer.trigger(**REALTIME).start()


# The queries to predict.


def start_shout(spark, where):
    """Every word but 'kafka', in capitals."""
    words = read_words(spark, where)
    shouted = words.where(F.col("word") != "kafka").select("id", F.upper("word").alias("word"))
    return write_to_kafka(shouted, where)


# A Python UDF: Spark sends each word to a Python process and takes back what it returns.
# (No type hints: pyspark 4.2 reads them to choose the kind of UDF, and warns when they are str.)
@F.udf("string")
def shout(word):
    return word.upper()


def start_shout_with_udf(spark, where):
    """The same capitals, from a Python function."""
    words = read_words(spark, where)
    return write_to_kafka(words.select("id", shout("word").alias("word")), where)


def start_count_words(spark, where):
    """How many times each word was seen, each count sent again when it changes."""
    counts = read_words(spark, where).groupBy("word").count()
    return write_to_kafka(counts, where)


def start_first_of_each_word(spark, where):
    """Each word the first time it comes, never again."""
    firsts = read_words(spark, where).dropDuplicates(["word"])
    return write_to_kafka(firsts, where)


def start_tag_words(spark, where):
    """Each word with its kind, from a static table joined to the stream."""
    kinds = spark.sql(WORD_KINDS)
    tagged = read_words(spark, where).join(F.broadcast(kinds), "word")
    return write_to_kafka(tagged, where)


def start_shout_with_watermark(spark, where):
    """The capitals, with a watermark on the time each message was sent."""
    words = read_words(spark, where).withColumn("sent_at", F.timestamp_millis("sent_ms"))
    late_ok = words.withWatermark("sent_at", "10 seconds")
    return write_to_kafka(late_ok.select("id", F.upper("word").alias("word"), "sent_at"), where)


def start_shout_appending(spark, where):
    """The capitals, in the default output mode."""
    words = read_words(spark, where)
    return write_to_kafka(words.select("id", F.upper("word").alias("word")), where, None)


def start_shout_files(spark, where):
    """The capitals, from JSON files instead of Kafka."""
    words = spark.readStream.schema(MESSAGE_FIELDS).json(paths.uri(where.folder))
    return write_to_kafka(words.select("id", F.upper("word").alias("word")), where)


def start_shout_in_batches(spark, where):
    """The capitals, written to Kafka by foreachBatch."""

    def send(batch: DataFrame, batch_id: int) -> None:
        (
            as_kafka_records(batch.select("id", F.upper("word").alias("word")))
            .write.format("kafka")
            .option("kafka.bootstrap.servers", where.bootstrap)
            .options(**security_options(where.bootstrap))
            .option("topic", where.results)
            .save()
        )

    return (
        read_words(spark, where)
        .writeStream.foreachBatch(send)
        .outputMode("update")
        .option("checkpointLocation", paths.uri(where.checkpoint))
        .trigger(**REALTIME)
        .start()
    )


QUERIES = [
    start_shout,
    start_shout_with_udf,
    start_count_words,
    start_first_of_each_word,
    start_tag_words,
    start_shout_with_watermark,
    start_shout_appending,
    start_shout_files,
    start_shout_in_batches,
]

# For each function of QUERIES, by name: RUNS, REFUSED_AT_START or FAILS_ONCE_RUNNING.
PREDICTION = {
    # Spark's own functions, one record at a time: on real-time mode's list.
    "start_shout": RUNS,
    # A Python UDF runs in a Python process (an EvalPython operator): refused once the plan is made.
    "start_shout_with_udf": FAILS_ONCE_RUNNING,
    # An aggregation needs a shuffle and state: refused once the plan is made.
    "start_count_words": FAILS_ONCE_RUNNING,
    # dropDuplicates keeps every word seen: state again.
    "start_first_of_each_word": FAILS_ONCE_RUNNING,
    # A broadcast join with a static table: no shuffle, no state.
    "start_tag_words": RUNS,
    # A watermark alone keeps nothing.
    "start_shout_with_watermark": RUNS,
    # The output mode is known when start() is called: append is refused there.
    "start_shout_appending": REFUSED_AT_START,
    # The source is checked when the first batch is planned: Kafka only.
    "start_shout_files": FAILS_ONCE_RUNNING,
    # The sink is known when start() is called: foreachBatch is not on the list.
    "start_shout_in_batches": REFUSED_AT_START,
}
