"""Another right answer: splits on ONE separator character at a time (no '+'), so runs of
separators give empty strings, which the length filter removes along with the leading/trailing
ones and a blank line's."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

# Anything that is not a letter, a digit or an apostrophe separates two words.
WORD_SEPARATOR = r"[^\p{L}\p{N}']+"


def parse_words(lines: DataFrame) -> DataFrame:
    """One row per word of every line, in lower case, in a column called word."""
    one_separator = r"[^\p{L}\p{N}']"
    lower = F.lower(F.col("value"))
    pieces = lines.select(F.explode(F.split(lower, one_separator)).alias("word"))
    return pieces.where(F.length("word") > 0)


def build_word_counts(words: DataFrame) -> DataFrame:
    """A running count per word."""
    return words.groupBy("word").count()
