"""Bronze: every line of the shop's event files, as it arrived, with the file it came from.

A streaming table: each run appends only the lines of files it has not read yet (its
checkpoint lives under the spec's ``storage``). ``spark`` is a global that spark-pipelines
sets before it imports this file; the course's ``common`` package is on PYTHONPATH.
"""

from pyspark import pipelines as dp
from pyspark.sql import functions as F

from common import paths

spark = globals()["spark"]  # set by spark-pipelines (named here so linters and readers see where it comes from)


@dp.table(comment="Raw lines of data/ecommerce_events, one row per line, never parsed or dropped")
def bronze_events():
    # The same reader as the lessons' read_json_lines: text first, so no line is ever lost.
    return spark.readStream.text(str(paths.ECOMMERCE_DIR)).withColumn("source_file", F.col("_metadata.file_name"))
