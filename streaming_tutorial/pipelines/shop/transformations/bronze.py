"""Bronze: every line of the shop's event files, as it arrived, with the file it came from.

A streaming table: each run appends only the lines of files it has not read yet (its
checkpoint lives under the spec's ``storage``). The folder it reads is the spec's
configuration ``shop.events_dir`` (lesson 18 sets it to output/18_declarative_pipeline/events).
``spark`` is a global that spark-pipelines sets before it imports this file.
"""

from pyspark import pipelines as dp
from pyspark.sql import functions as F

spark = globals()[
    "spark"
]  # set by spark-pipelines (named here so linters and readers see where it comes from)
EVENTS_DIR = spark.conf.get(
    "shop.events_dir"
)  # from the spec's configuration: the folder of event files


@dp.table(comment="Raw lines of the shop's event files, one row per line, never parsed or dropped")
def bronze_events():
    # The same reader as the lessons' read_json_lines: text first, so no line is ever lost.
    return spark.readStream.text(EVENTS_DIR).withColumn("source_file", F.col("_metadata.file_name"))
