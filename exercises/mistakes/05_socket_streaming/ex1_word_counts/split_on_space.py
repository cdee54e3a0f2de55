"""A known mistake: split on a single space, so punctuation sticks to the words."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def parse_words(lines: DataFrame) -> DataFrame:
    words = lines.select(F.explode(F.split(F.lower(F.col("value")), " ")).alias("word"))
    return words.where(F.col("word") != "")


def build_word_counts(words: DataFrame) -> DataFrame:
    return words.groupBy("word").count()
