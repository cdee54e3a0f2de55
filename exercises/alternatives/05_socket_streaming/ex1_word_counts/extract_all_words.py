"""Another right answer: takes the words themselves (runs of letters, digits and apostrophes, the
complement of WORD_SEPARATOR) with regexp_extract_all instead of splitting on separators: there
are no empty strings to filter, a blank line gives an empty array (no row), and the count is
written as agg(count(*)) named "count"."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

# Anything that is not a letter, a digit or an apostrophe separates two words.
WORD_SEPARATOR = r"[^\p{L}\p{N}']+"


def parse_words(lines: DataFrame) -> DataFrame:
    """One row per word of every line, in lower case, in a column called word."""
    word_pattern = r"[\p{L}\p{N}']+"  # what WORD_SEPARATOR separates
    all_words = F.regexp_extract_all(F.lower(F.col("value")), F.lit(word_pattern), 0)
    return lines.select(F.explode(all_words).alias("word"))


def build_word_counts(words: DataFrame) -> DataFrame:
    """A running count per word."""
    return words.groupBy("word").agg(F.count(F.lit(1)).alias("count"))
