"""A known mistake: the empty strings split() leaves at a line's ends are counted as a word."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WORD_SEPARATOR = r"[^\p{L}\p{N}']+"


def parse_words(lines: DataFrame) -> DataFrame:
    return lines.select(F.explode(F.split(F.lower(F.col("value")), WORD_SEPARATOR)).alias("word"))


def build_word_counts(words: DataFrame) -> DataFrame:
    return words.groupBy("word").count()
