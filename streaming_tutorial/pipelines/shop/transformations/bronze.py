"""Bronze: every line of the shop's event files, as it arrived, with the file it came from.

A streaming table: each run appends only the lines of files it has not read yet (its
checkpoint lives under the spec's ``storage``). The folder it reads is the spec's
configuration ``shop.events_dir`` (lesson 18 sets it to output/18_declarative_pipeline/events).
``spark`` is a global that spark-pipelines sets before it imports this file.
"""

from pyspark import pipelines as dp
from pyspark.sql import functions as F

# Set by spark-pipelines before it imports this file (named here so linters and readers see
# where it comes from).
spark = globals()["spark"]
# From the spec's configuration: the folder of event files.
EVENTS_DIR = spark.conf.get("shop.events_dir")


@dp.table(comment="Raw lines of the shop's event files, one row per line, never parsed or dropped")
def bronze_events():
    # A definition returns the stream and starts nothing: spark-pipelines writes it to the table,
    # with a checkpoint of its own, in the order the graph needs.
    return (
        # Text, not JSON: every line becomes a row, so no line is ever lost (silver parses it).
        spark.readStream.text(EVENTS_DIR)
        # _metadata is the hidden per-file column of file sources: which file each line came from.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )
