"""Exercise 05.1 · Word counts — a reference solution."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

# Anything that is not a letter, a digit or an apostrophe separates two words.
WORD_SEPARATOR = r"[^\p{L}\p{N}']+"


def parse_words(lines: DataFrame) -> DataFrame:
    """One row per word of every line, in lower case, in a column called word."""
    # lower() first, so "Spark" and "spark" are one word; split() turns each line into an array
    # of words; explode() turns the array into rows.
    words = lines.select(F.explode(F.split(F.lower(F.col("value")), WORD_SEPARATOR)).alias("word"))
    # A separator at the start or the end of a line, or a blank line, yields an empty string.
    return words.where(F.col("word") != "")


def build_word_counts(words: DataFrame) -> DataFrame:
    """A running count per word."""
    # The count per word is the query's state: complete mode sends the whole table each batch.
    return words.groupBy("word").count()
