import re

from pyspark.sql.types import StringType, StructField, StructType

from practice.spec import Exercise, Mistake, Scenario

# The socket source's shape: one line of text per row.
LINE_SCHEMA = StructType([StructField("value", StringType())])


def lines(*texts):
    """One micro-batch of lines, as the socket source gives them."""
    return [{"value": text} for text in texts]


def words_of(observation):
    """Every word the learner's table holds, in any batch ([] without a word column)."""
    if "word" not in observation.columns:
        return []
    index = observation.columns.index("word")
    return [row[index] for batch in observation.batches for row in batch.rows]


def punctuation_in_words(mine, wanted):
    """A word keeps a comma, a full stop...: the lines were split on spaces only."""
    return any(word and re.search(r"[^\w']", word) for word in words_of(mine))


def empty_word(mine, wanted):
    """The empty string is counted as a word."""
    return "" in words_of(mine)


def upper_case_words(mine, wanted):
    """A word with a capital letter: the lines were not lower-cased."""
    return any(word and word != word.lower() for word in words_of(mine))


EXERCISE = Exercise(
    title="Word counts",
    kind="build",
    practises="split + explode turn lines into words; groupBy().count() keeps a running count",
    function="build_word_counts",
    # The learner writes both of lesson 05's steps: lines -> words -> counts.
    query=lambda module: lambda lines: module.build_word_counts(module.parse_words(lines)),
    schemas=LINE_SCHEMA,
    check_watermark=False,  # not an exercise about watermarks: a harmless one is no failure
    output_mode="complete",
    mirrors="",
    why=(
        "split and explode are stateless: each line becomes its words on its own, whatever "
        "batch brings it. groupBy('word').count() is stateful: the count per word lives in the "
        "state store across micro-batches, so a word seen in batch 0 and again in batch 3 has "
        "one running count, and complete mode re-sends that whole table each batch. lower() "
        "before the split makes 'Spark' and 'spark' one key, and the filter removes the empty "
        "strings split leaves where a line starts or ends with a separator."
    ),
    hints=[
        "What must one line become before its words can be counted, and which of the two steps "
        "keeps something from one micro-batch to the next? What does splitting a line that starts "
        "with a separator leave at its front?",
        "lesson 05, `parse_words`: split() turns a line into an array of words, explode() the "
        "array into rows; its comments say why a filter follows.",
        "lesson 05, `build_word_counts`: the count per word is the query's state. Split with the "
        "WORD_SEPARATOR given here, in lower case, and name the words' column 'word'.",
    ],
    scenarios=[
        # "words." and "words!" end in a separator (an empty string after the split); "Spark"
        # and "SPARK" are the word spark; batch 1 has two spaces in a row and an apostrophe;
        # batch 2 has a blank line.
        Scenario(
            [
                lines("Spark streams words.", "Words, words!"),
                lines("It's a stream:  Spark keeps counting"),
                lines("", "SPARK"),
            ]
        ),
        # Other words: a line starting with separators, an ampersand, an apostrophe-s; an
        # apostrophe at a word's start or end stays in it ("'tis", "readers'"); 23 words by
        # batch 2, more than a top-20 table would show.
        Scenario(
            [
                lines("  Kafka, Delta & Spark"),
                lines("delta DELTA delta's", "   "),
                lines(
                    "kafka-kafka",
                    "'Tis the readers' count: one two three four five six seven eight nine ten "
                    "eleven twelve thirteen fourteen fifteen",
                ),
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "split_on_space",
            "The lines are split on a single space: 'words.' and 'words,' keep their punctuation "
            "and count as other words than 'words', and two spaces in a row give an empty word. "
            "Split on WORD_SEPARATOR, the regular expression for anything that is not part of a "
            "word.",
            when=punctuation_in_words,
        ),
        Mistake(
            "empty_words_counted",
            "The empty string is counted as a word: split() leaves one where a line starts or "
            "ends with a separator, and for a blank line. Keep only the words that are not "
            "empty: .where(F.col('word') != '').",
            when=empty_word,
        ),
        Mistake(
            "not_lower_cased",
            "The words are not lower-cased, so 'Spark' and 'spark' are counted apart. Apply "
            "F.lower() to the line (or the word) before grouping.",
            when=upper_case_words,
        ),
    ],
)
