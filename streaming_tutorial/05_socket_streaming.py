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

What you'll see
  The demo server sends one sentence a second; how many land in each micro-batch
  depends on your machine's speed. Complete mode reprints the whole table each time:
  Started the socket simulator for this run: python data_generators/socket_server.py --demo
  -------------------------------------------
  Batch: 1
  -------------------------------------------
  +---------+-----+
  |word     |count|
  +---------+-----+
  |streaming|4    |
  |spark    |3    |
  |counts   |2    |
  |real     |2    |
  |the      |2    |
  |time     |2    |
  |awesome  |1    |
  ...
  Stopped after 15 s of counting: 6 lines in 2 micro-batches. ...
"""

from __future__ import annotations

import time

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import cli, config, simulators
from common.errors import CourseError
from common.runner import await_queries, banner, lesson_session, run_lesson, say

LESSON = "05_socket_streaming"
# Anything that is not a letter, a digit or an apostrophe separates two words.
WORD_SEPARATOR = r"[^\p{L}\p{N}']+"
TRIGGER_INTERVAL = "1 second"  # about one demo sentence per micro-batch
TOP_WORDS = 20  # rows the console sink prints per batch
SERVER_START_SECONDS = 15  # how long to wait for the server to listen
FIRST_BATCH_SECONDS = 60  # how long the query may take to start, on a busy laptop
DEFAULT_DURATION = 15


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION)
    parser.add_argument("--host", default=config.SOCKET_HOST, help="the text server's host (default: %(default)s)")
    parser.add_argument("--port", type=int, default=config.SOCKET_PORT,
                        help="the text server's port (default: %(default)s, or $SOCKET_PORT)")
    args = parser.parse_args(argv)
    if args.checkpoint_dir:
        print("--checkpoint-dir is ignored: a socket query cannot be recovered from a checkpoint.")
    banner(f"1. The text server on {args.host}:{args.port}")
    listening = simulators.port_open(args.host, args.port)
    with simulators.simulator_for_lesson(
        "socket", "socket_server.py", server_options(args), enabled=not args.no_simulator, already_running=listening
    ) as server:
        if not listening:
            wait_for_server(args, server)
        with lesson_session(LESSON, args) as spark:
            banner(f"2. Word count, complete mode, for {args.duration:g} s")
            # No checkpointLocation, on purpose: the socket source keeps the lines only in
            # memory and has no offsets a restart could replay. With a checkpoint, the
            # second run fails with "Offsets committed out of order". Spark uses a
            # temporary checkpoint and deletes it when the query stops.
            query = (
                build_word_counts(read_lines(spark, args.host, args.port))
                .writeStream.outputMode("complete")  # the whole, re-sorted table every batch
                .format("console")
                .option("truncate", False)
                .option("numRows", TOP_WORDS)
                .trigger(processingTime=TRIGGER_INTERVAL)
                .queryName("socket_word_count")
                .start()
            )
            try:
                # The clock starts once the first micro-batch is done: starting a query
                # takes a few seconds, and the demo sentences should all fit in the run.
                wait_for_first_batch(query)
                await_queries([query], args.duration)
            except StreamingQueryException as error:
                if "Connection refused" in str(error):  # the server went away before Spark connected
                    raise CourseError(connection_advice(args)) from error
                raise
            lines = sum(p["numInputRows"] for p in query.recentProgress)
            say(f"""Stopped after {args.duration:g} s of counting: {lines} lines in
                {len(query.recentProgress)} micro-batches. The counts lived only in this query's
                memory. A socket source cannot replay what it sent, so after a crash or restart
                they start again from zero: fine for trying things out, never for production
                (use Kafka, lesson 08).""")


def read_lines(spark, host: str, port: int) -> DataFrame:
    """One row per line of text the server sends, in a column called ``value``."""
    return spark.readStream.format("socket").option("host", host).option("port", port).load()


def build_word_counts(lines: DataFrame) -> DataFrame:
    """A running count per word, most frequent first (ties in alphabetical order)."""
    # split() turns each line into an array of words; explode() turns the array into rows.
    words = lines.select(F.explode(F.split(F.lower(F.col("value")), WORD_SEPARATOR)).alias("word"))
    # A line that starts or ends with a separator, or is blank, yields empty strings.
    counts = words.where(F.col("word") != "").groupBy("word").count()
    # Sorting a stream is allowed only after an aggregation, in complete mode.
    return counts.orderBy(F.desc("count"), F.asc("word"))


def server_options(args) -> list[str]:
    """socket_server.py's options: the demo sentences, on the lesson's host and port."""
    options = ["--demo"]
    if args.host != config.SOCKET_HOST:
        options += ["--host", args.host]
    if args.port != config.SOCKET_PORT:
        options += ["--port", str(args.port)]
    return options


def wait_for_server(args, server) -> None:
    """Wait until the server listens; it takes a moment to start (or for you to start it)."""
    waited = SERVER_START_SECONDS if server is not None else args.duration
    if server is None:
        print(f"Waiting up to {waited:g} s for a server on {args.host}:{args.port} ...", flush=True)
    deadline = time.monotonic() + waited
    while time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            log = simulators.log_file("socket")
            raise CourseError(
                f"The socket server stopped at once (exit code {server.returncode}); its log "
                f"{log} says: {log.read_text(encoding='utf-8').strip()[-500:]}"
            )
        # The server recognises this quick connect-and-close as a port check.
        if simulators.port_open(args.host, args.port):
            return
        time.sleep(0.2)
    raise CourseError(connection_advice(args))


def wait_for_first_batch(query, timeout: float = FIRST_BATCH_SECONDS) -> None:
    """Return when the query has finished a micro-batch, stopped, or ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.lastProgress is None and time.monotonic() < deadline:
        time.sleep(0.2)


def connection_advice(args) -> str:
    return (
        f"Nothing accepts connections on {args.host}:{args.port}, so the socket source cannot read. "
        f"Start the server in a second terminal with 'python data_generators/socket_server.py' "
        f"(add --port {args.port} if you changed the port), then run this lesson again; or run the "
        "lesson without --no-simulator and it starts the demo server itself."
    )


if __name__ == "__main__":
    run_lesson(main)
