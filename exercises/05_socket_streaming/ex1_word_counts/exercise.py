"""Exercise 05.1 · Word counts (build) — practises lesson 05, split + explode + a running count.

Lines of text arrive as a stream, one line per row in a column called value (the socket
source's shape). Count every word, over all the lines so far, in complete mode: after every
micro-batch the whole table of counts comes out again. Write it in two steps, as lesson 05
does: parse_words turns lines into words, build_word_counts counts them.

A word is what lies between separators: anything that is not a letter, a digit or an
apostrophe separates two words (WORD_SEPARATOR, a regular expression), so an apostrophe stays
in its word, at the start or the end too ("'tis", "readers'"). "Spark" and "spark"
are the same word: count words in lower case. A line that starts or ends with a separator,
or is blank, must not produce an empty word. The order of the rows is not checked.

Expected columns, in this order:
  word    a word, in lower case
  count   how many times it occurred in all the lines so far

Input: a stream of lines with one string column, value
(StructType([StructField("value", StringType())])).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 05.1
Stuck?     python course.py exercises hint 05.1
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: F401  (you will need it)

# Anything that is not a letter, a digit or an apostrophe separates two words.
WORD_SEPARATOR = r"[^\p{L}\p{N}']+"


def parse_words(lines: DataFrame) -> DataFrame:
    """One row per word of every line, in lower case, in a column called word."""
    raise NotImplementedError("TODO: split the lines into words")


def build_word_counts(words: DataFrame) -> DataFrame:
    """A running count per word."""
    raise NotImplementedError("TODO: count the words")
