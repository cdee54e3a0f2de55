"""18 · The shop pipeline declared: Spark Declarative Pipelines (``spark-pipelines``) instead of queries.

What you'll learn
  - Declare tables, not queries: a streaming table (bronze: the event files' lines), streaming
    tables that parse and quarantine (silver), materialized views (gold: lesson 17's figures),
    in Python and SQL files under streaming_tutorial/pipelines/shop/.
  - ``spark-pipelines dry-run`` checks the whole graph without reading data; ``run`` updates every
    table in the order their reads imply, with the checkpoints it manages itself.
  - A pipeline is submitted to a running Spark Connect endpoint (``--remote sc://host:port``), as
    to a cluster: here the lesson's own session serves one, so no command starts a Spark of its own.
  - A second run is incremental: streaming tables read only new input; materialized views are
    recomputed in full. The gold views equal lesson 17's queries on the same input.
  - When a declarative pipeline beats hand-written queries, and when it does not.

Run
  python streaming_tutorial/18_declarative_pipeline.py          # --reset: start with empty tables
  It writes 3 event files into a folder of its own, output/18_declarative_pipeline/events, if none
  are there (the shop simulator, a fixed seed and start time), starts its session with a Spark
  Connect server in it, runs spark-pipelines dry-run and run against that server, adds 2 files and
  a file with broken lines, and runs again. Each command's whole output:
  output/18_declarative_pipeline/logs; --reset deletes all of it (and the event files) first.

What you'll see
  (a first run, its events folder empty; times, seconds and the port vary)
    ... .venv/bin/spark-pipelines run --spec .../spark-pipeline.yml --remote sc://localhost:36879
    18:29:33  bronze_events: completed
    18:29:35  silver_events: completed
    ...
    18:29:39  Run is COMPLETED.
  run 1 read: events-0001.json, events-0002.json, events-0003.json
  ...
  run 2 read: events-0004.json, events-0005.json, events-typos.json
    table                  after run 1  after run 2
    bronze_events          60           103
    silver_events          60           100
    silver_quarantine      0            3
    gold_category_revenue  4            4
    gold_funnel            2            3
  gold_category_revenue: 4 rows, lesson 17's build_category_revenue: 4 rows, equal: True
  gold_funnel: 3 rows, lesson 17's build_funnel: 3 rows, equal: True
  ... (each command here: dry-run 7 s (3 CPU-s, 1 JVM), run 12 s (3 CPU-s, 1 JVM), run 10 s ...
"""

from __future__ import annotations

import subprocess
import sys

import lesson18_pipeline_runner as pipelines
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import parsing, paths, storage
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from infra import cli, files
from infra.runner import banner, checkpoint_root, lesson_session, run_lesson, say
from teaching.narration import print_table

LESSON = "18_declarative_pipeline"
PIPELINE = "shop"  # the folder streaming_tutorial/pipelines/shop: its spec and its definitions
INPUT = paths.output_for(
    LESSON, "events"
)  # its own input: the other lessons' data/ecommerce_events stays as it is
BRONZE = "bronze_events"  # the streaming table that reads the files: its checkpoint lists them
TABLES = (
    "bronze_events",
    "silver_events",
    "silver_quarantine",
    "gold_category_revenue",
    "gold_funnel",
)
# The shop simulator, run to its end: a fixed seed and start time, so a fresh run shows the same figures.
GENERATOR = [
    sys.executable,
    str(paths.GENERATORS_DIR / "generate_ecommerce_events.py"),
    "--interval",
    "0",
    "--seed",
    "42",
    "--base-time",
    "2025-01-15T10:30:00Z",
    "--output-dir",
    str(INPUT),
]
FIRST_FILES, NEW_FILES = 3, 2
# Lines no event can be made of, in a file of their own: the quarantine's input (written once).
TYPOS_FILE = "events-typos.json"
TYPOS = (
    '{"event_id":"EVT-900001","user_id":"USER-2001","event_type":"purchase","product_id":"P001",\n'
    '{"event_id":"EVT-900002","user_id":"USER-2002","event_type":"purchase","category":"Home","price":-5.0,'
    '"quantity":1,"timestamp":"2025-01-15T10:31:00.000Z"}\n'
    '{"event_id":"EVT-900003","event_type":"view","category":"Home","price":10.0,"quantity":1,'
    '"timestamp":"2025-01-15T10:32:00.000Z"}\n'
)
COMPARED = {"gold_category_revenue": "build_category_revenue", "gold_funnel": "build_funnel"}
SHOW_ROWS = 12


def add_event_files(count: int) -> None:
    """``count`` more files of shop events in INPUT, numbered on after those there."""
    storage.require_local_input("The shop simulator", INPUT)
    subprocess.run([*GENERATOR, "--count", str(count)], check=True)


def read_table(spark, table: str) -> DataFrame:
    """A pipeline table, read from the catalog the pipeline wrote it to (the session's own)."""
    spark.catalog.refreshTable(table)  # a run changed its files since this session last listed them
    return spark.table(table)


def count_rows(spark) -> dict[str, int]:
    return {table: read_table(spark, table).count() for table in TABLES}


def read_events(spark) -> DataFrame:
    """The good events of every file in INPUT, as one batch (what bronze and silver read)."""
    lines = spark.read.text(paths.uri(INPUT)).withColumn(
        "source_file", F.col("_metadata.file_name")
    )
    return parsing.valid_records(
        parsing.parse_json(lines, ECOMMERCE_EVENT_SCHEMA), ECOMMERCE_EVENT_SCHEMA
    )


def compare_with_lesson_17(spark) -> None:
    """Each gold view next to lesson 17's build_... function on the same events: equal, row for row?"""
    lesson_17 = paths.import_lesson("17_ecommerce_pipeline")
    events = read_events(spark)
    for table, builder in COMPARED.items():
        gold = sorted(read_table(spark, table).collect())
        expected = getattr(lesson_17, builder)(events)
        mine = sorted(expected.select(*read_table(spark, table).columns).collect())
        print(
            f"  {table}: {len(gold)} rows, lesson 17's {builder}: {len(mine)} rows, equal: {gold == mine}"
        )
        for row in [row for row in gold if row not in mine][:3] + [
            row for row in mine if row not in gold
        ][:3]:
            print(f"    differs: {row}")


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, simulator=False).parse_args(argv)
    pipeline = pipelines.Pipeline(
        PIPELINE,
        home=paths.output_for(LESSON),
        storage=checkpoint_root(LESSON, args),
        configuration={"shop.events_dir": paths.uri(INPUT)},
    )  # bronze.py reads it
    # The session serves Spark Connect (the plugin and the catalog are read when its JVM starts).
    with lesson_session(LESSON, args, extra_conf=pipelines.server_conf(pipeline)) as spark:
        banner("1. The pipeline: five tables declared in three files")
        if not list(INPUT.glob("events-*.json")):
            add_event_files(FIRST_FILES)
        pipelines.prepare(pipeline)
        for path in sorted((pipeline.source / "transformations").iterdir()):
            print(f"  {paths.display(path)}")
        say("""bronze.py declares a streaming table of the files' lines; silver.py two streaming
            tables over it, the good events and the quarantine; gold.sql two materialized views
            over silver_events. No file starts a query, names a checkpoint or says what runs
            first: spark-pipelines reads the definitions, orders the tables by what each one
            reads, and runs them. The command goes to a Spark Connect endpoint: this lesson's
            session serves one, as a shared Spark (a cluster) would; --remote "local[2]"
            would start a private Spark for each command. As you would type it:""")
        print(f"  {pipelines.shell_line(pipeline, 'run')}")

        banner("2. spark-pipelines dry-run: the graph checked, no data read")
        dry = pipelines.run(pipeline, "dry-run")
        say(f"""It imported the definitions, resolved every table's reads and schemas, and wrote
            nothing: a typo in a column or a table that reads a missing one fails here, before
            any data moves ({dry.seconds:.0f} s: the graph went to the lesson's session).""")

        banner("3. spark-pipelines run: bronze -> silver -> gold")
        read_before = pipelines.files_read(
            pipeline, BRONZE
        )  # on a second run of the lesson: read before
        first = pipelines.run(pipeline, "run")
        after_first, read_first = count_rows(spark), pipelines.files_read(pipeline, BRONZE)
        print(f"  run 1 read: {', '.join(sorted(read_first - read_before)) or '(no new file)'}")

        banner("4. New files arrive; run again: only they are read")
        add_event_files(NEW_FILES)
        if not (INPUT / TYPOS_FILE).exists():
            files.write_atomically(INPUT, TYPOS_FILE, TYPOS)
        second = pipelines.run(pipeline, "run")
        after_second = count_rows(spark)
        read_second = pipelines.files_read(pipeline, BRONZE)
        print(f"  run 2 read: {', '.join(sorted(read_second - read_first)) or '(no new file)'}")
        print_table(
            ("table", "after run 1", "after run 2"),
            [(table, after_first[table], after_second[table]) for table in TABLES],
        )
        say("""The streaming tables appended only what was new: their checkpoints (under
            checkpoints/18_declarative_pipeline) remember what they read. The materialized views
            were recomputed from all of silver_events: always the whole answer. The runs take
            one flow at a time (lesson18_pipeline_runner.py says why): with several, silver started
            alongside bronze and missed what bronze appended in the same run.""")
        read_table(spark, "silver_quarantine").select("source_file", "reason").show(truncate=False)

        banner("5. The gold tables, and lesson 17's figures on the same input")
        read_table(spark, "gold_category_revenue").orderBy("window_start", "category").show(
            SHOW_ROWS
        )
        read_table(spark, "gold_funnel").orderBy("window_start").show(SHOW_ROWS)
        compare_with_lesson_17(spark)

        banner("6. When to declare a pipeline, and when to write the queries")
        say(f"""Declared wins when tables feed tables: the order, the checkpoints, a full refresh of
            one table (run --full-refresh silver_events), a dry-run in CI, one graph to read. It runs
            as a job sent to a Spark endpoint (each command here: {pipelines.costs(dry, first, second)};
            the one JVM is the command's launcher, the work ran in the lesson's session), so it
            suits refreshes every few minutes or hours. Hand-written queries win for results within
            seconds (a query that keeps running), for sinks a pipeline does not write (Kafka,
            foreachBatch, a live dashboard like lesson 17's), and for control over triggers and
            state. Both can compute the same figures, as the comparison above shows.""")


if __name__ == "__main__":
    run_lesson(main)
