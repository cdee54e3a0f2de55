"""05 · Word count from a TCP socket: text in, a running count out (complete mode).

What you'll learn
  - ``spark.readStream.format("socket")`` connects to a TCP server and turns every line
    it receives into a row with one column, ``value``.
  - ``split()`` + ``explode()`` turn each line into one row per word; ``groupBy().count()``
    keeps a running count across micro-batches (that count is the query's state).
  - Complete mode prints the whole result table after every batch, which is why it may
    be sorted (most frequent word first).
  - Why the socket source is for learning only: it keeps no replayable offsets, so it
    cannot recover after a failure, and a restart from a checkpoint fails.

Run
  python streaming_tutorial/05_socket_streaming.py   # starts the demo server for the run
  Two terminals, typing your own lines:
    python data_generators/socket_server.py                          # terminal 1: type here
    python streaming_tutorial/05_socket_streaming.py --no-simulator  # terminal 2
  Another port: --port 9998 for both commands (or SOCKET_PORT=9998 in the environment).

Practise
  python course.py exercises check 05.1   Word counts (build)

What you'll see
  The demo server sends one sentence a second; how many land in each micro-batch
  depends on your machine's speed. Complete mode reprints the whole table each time:
  Started the socket simulator for this run: python data_generators/socket_server.py --demo ...
  ...
  -------------------------------------------
  Batch: 2
  -------------------------------------------
  +---------+-----+
  |word     |count|
  +---------+-----+
  |streaming|4    |
  |spark    |3    |
  |counts   |2    |
  |real     |2    |
  |time     |2    |
  |awesome  |1    |
  ...
  Stopped (--duration 15): 6 lines counted. The counts lived only in this query's memory. ...
"""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from infra import cli, simulators
from infra.runner import banner, lesson_session, pick_trigger, run_lesson, run_queries, say

LESSON = "05_socket_streaming"
# Anything that is not a letter, a digit or an apostrophe separates two words.
WORD_SEPARATOR = r"[^\p{L}\p{N}']+"
TRIGGER_INTERVAL = "1 second"  # about one demo sentence per micro-batch
TOP_WORDS = 20  # rows the console sink prints per batch
DEFAULT_DURATION = 15  # the demo server sends its six sentences in about 6 s


def read_lines(spark, host: str, port: int) -> DataFrame:
    """One row per line of text the server sends, in a column called ``value``."""
    # The socket source is a TCP client: the server must already listen when the query starts.
    return (
        spark.readStream.format("socket")  # no schema: every row is one line of text
        .option("host", host)
        .option("port", port)
        .load()
    )


def parse_words(lines: DataFrame) -> DataFrame:
    """One row per word of every line, in lower case."""
    # split() turns each line into an array of words; explode() turns the array into rows.
    words = lines.select(F.explode(F.split(F.lower(F.col("value")), WORD_SEPARATOR)).alias("word"))
    # A line that starts or ends with a separator, or is blank, yields empty strings.
    return words.where(F.col("word") != "")


def build_word_counts(words: DataFrame) -> DataFrame:
    """A running count per word."""
    # The count per word is the query's state: it grows with every micro-batch.
    return words.groupBy("word").count()


def build_top_words(counts: DataFrame) -> DataFrame:
    """The counts, most frequent first (ties in alphabetical order)."""
    # Sorting a stream is allowed only after an aggregation, in complete mode.
    return counts.orderBy(F.desc("count"), F.asc("word"))


def start_word_counts(counts: DataFrame, trigger: dict):
    """Print the whole, re-sorted table after every micro-batch."""
    # No checkpointLocation, on purpose: the socket source keeps the lines only in memory
    # and has no offsets a restart could replay, so a second run from a checkpoint fails
    # ("Offsets committed out of order"). Spark uses a temporary one, deleted at the stop.
    return (
        counts.writeStream.format("console")
        .outputMode("complete")  # the whole result table, every micro-batch
        .option("truncate", False)
        .option("numRows", TOP_WORDS)
        .trigger(**trigger)
        .queryName("socket_word_count")
        .start()
    )


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, socket_server=True)
    args = parser.parse_args(argv)
    if args.checkpoint_dir:
        print("--checkpoint-dir is ignored: a socket query cannot be recovered from a checkpoint.")
    with (
        simulators.server_for_lesson(
            "socket",
            "socket_server.py",
            ["--demo"],
            args.host,
            args.port,
            enabled=not args.no_simulator,
        ),
        lesson_session(LESSON, args) as spark,
    ):
        banner(f"Word count from {args.host}:{args.port}, complete mode, for {args.duration:g} s")
        lines = read_lines(spark, args.host, args.port)
        words = parse_words(lines)
        top_words = build_top_words(build_word_counts(words))
        query = start_word_counts(top_words, pick_trigger(args, TRIGGER_INTERVAL))
        run_queries([query], args)
        counted = sum(progress["numInputRows"] for progress in query.recentProgress)
        say(f"""Stopped (--duration {args.duration:g}): {counted} lines counted. The counts
            lived only in this query's memory. A socket source cannot replay what it sent, so
            after a crash or restart they start again from zero: fine for trying things out,
            never for production (use Kafka, lesson 08).""")


if __name__ == "__main__":
    run_lesson(main)
