"""A known mistake: the words keep their case, so "Spark" and "spark" are counted apart."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WORD_SEPARATOR = r"[^\p{L}\p{N}']+"


def parse_words(lines: DataFrame) -> DataFrame:
    words = lines.select(F.explode(F.split(F.col("value"), WORD_SEPARATOR)).alias("word"))
    return words.where(F.col("word") != "")


def build_word_counts(words: DataFrame) -> DataFrame:
    return words.groupBy("word").count()
