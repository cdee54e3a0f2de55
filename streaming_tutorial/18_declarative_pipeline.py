"""18 · The shop pipeline declared: Spark Declarative Pipelines (``spark-pipelines``), not queries.

What you'll learn
  - Declare tables, not queries: a streaming table (bronze: the event files' lines), streaming
    tables that parse and quarantine (silver), materialized views (gold: lesson 17's figures),
    in Python and SQL files under streaming_tutorial/pipelines/shop/.
  - ``spark-pipelines dry-run`` checks the whole graph without reading data; ``run`` updates the
    tables in the order their reads imply, with the checkpoints it manages itself; ``--refresh``
    updates only the tables named (in Spark 4.2, a later run did not wait for bronze: each run
    here refreshes bronze first, then the tables that read it).
  - A pipeline is submitted to a running Spark Connect endpoint (``--remote sc://host:port``), as
    to a cluster: here the lesson's own session serves one, so no command starts a Spark of its own
    (without ``--remote``, each command starts a local Spark of its own).
  - A second run is incremental: streaming tables read only new input; materialized views are
    recomputed in full. The gold views equal lesson 17's queries on the same input.
  - When a declarative pipeline beats hand-written queries, and when it does not; what else SDP
    declares in Spark 4.2: sinks (Kafka), several flows into one table, auto CDC, temporary views.

Run
  python streaming_tutorial/18_declarative_pipeline.py          # --reset: start with empty tables
  It writes 3 event files into a folder of its own, output/18_declarative_pipeline/events, if none
  are there (the shop simulator, a fixed seed and start time), starts its session with a Spark
  Connect server in it, runs spark-pipelines dry-run and run (bronze, then the rest) against that
  server, adds 2 files and a file with broken lines, and runs again. Each command's whole output:
  output/18_declarative_pipeline/logs; --reset deletes all of it (and the event files) first.

Practise
  python course.py exercises check 18.1   Sales per category, declared (build)

What you'll see
  (a first run, its events folder empty; times, seconds and the port vary)
    ... .venv/bin/spark-pipelines run --spec .../spark-pipeline.yml --remote sc://localhost:36879
    --refresh bronze_events
    ...
    14:37:34  bronze_events: completed
    14:37:35  Run is COMPLETED.
    ...
    14:37:40  silver_events: completed
    14:37:42  gold_category_revenue: completed
    ...
    14:37:43  Run is COMPLETED.
  run 1 read: events-0001.json, events-0002.json, events-0003.json
  ...
  run 2 read: events-0004.json, events-0005.json, events-typos.json
    table                  after run 1  after run 2
    bronze_events          60           104
    silver_events          60           100
    silver_quarantine      0            4
    gold_category_revenue  4            4
    gold_funnel            2            3
  gold_category_revenue: 4 rows, lesson 17's build_category_revenue: 4 rows, equal: True
  gold_funnel: 3 rows, lesson 17's build_funnel: 3 rows, equal: True
  ... (each command here: dry-run 7 s (3 CPU-s, 1 JVM), run 6 s (3 CPU-s, 1 JVM), run 8 s ...
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
# Its own input: the other lessons' data/ecommerce_events stays as it is.
INPUT = paths.output_for(LESSON, "events")
BRONZE = "bronze_events"  # the streaming table that reads the files: its checkpoint lists them
TABLES = (
    "bronze_events",
    "silver_events",
    "silver_quarantine",
    "gold_category_revenue",
    "gold_funnel",
)
# Each run, layer by layer: one command refreshes bronze, the next every table that reads it. In
# Spark 4.2 a run of every table may start silver before bronze once bronze_events exists (see
# update), so silver would miss the lines bronze appends in that run.
LAYERS = ((BRONZE,), tuple(table for table in TABLES if table != BRONZE))
# The shop simulator, run to its end: a fixed seed and start time, so a fresh run shows the
# same figures.
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
FIRST_FILES = 3  # event files before the first run
NEW_FILES = 2  # and the files that arrive before the second
# Lines no event can be made of, in a file of their own: the quarantine's input (written once).
TYPOS_FILE = "events-typos.json"
TYPOS = (
    '{"event_id":"EVT-900001","user_id":"USER-2001","event_type":"purchase","product_id":"P001",\n'
    '{"event_id":"EVT-900002","user_id":"USER-2002","event_type":"purchase","category":"Home",'
    '"price":-5.0,"quantity":1,"timestamp":"2025-01-15T10:31:00.000Z"}\n'
    '{"event_id":"EVT-900003","event_type":"view","category":"Home","price":10.0,"quantity":1,'
    '"timestamp":"2025-01-15T10:32:00.000Z"}\n'
    # A number where the schema says text: from_json alone would make it "2004" without a word.
    '{"event_id":"EVT-900004","user_id":2004,"event_type":"view","category":"Home","price":10.0,'
    '"quantity":1,"timestamp":"2025-01-15T10:33:00.000Z"}\n'
)
SHOW_ROWS = 12


def add_event_files(count: int) -> None:
    """``count`` more files of shop events in INPUT, numbered on after those there."""
    storage.require_local_input("The shop simulator", INPUT)
    subprocess.run([*GENERATOR, "--count", str(count)], check=True)


def update(pipeline: pipelines.Pipeline) -> list[pipelines.RunResult]:
    """One update of every table: ``spark-pipelines run --refresh ...``, one layer per command.

    A pipeline orders its flows by what they read, and the first run (no table yet) kept
    that order. On a later run, in Spark 4.2, silver.py's streaming read of an existing
    bronze_events did not count as a dependency: the event log showed silver_events
    STARTING while bronze_events was still RUNNING, with several flows at once or one at a
    time, and silver missed the lines bronze appended in that run. Gold's read in SQL kept
    its dependency on silver. So bronze is refreshed first, in a command of its own.
    """
    return [pipelines.run(pipeline, "run", refresh=layer) for layer in LAYERS]


def read_table(spark, table: str) -> DataFrame:
    """A pipeline table, read from the catalog the pipeline wrote it to (the session's own)."""
    spark.catalog.refreshTable(table)  # a run changed its files since this session last listed them
    return spark.table(table)


def count_rows(spark) -> dict[str, int]:
    """How many rows each of the pipeline's tables holds now."""
    return {table: read_table(spark, table).count() for table in TABLES}


def file_list(names: set[str]) -> str:
    """The files a run read, for the learner: "events-0001.json, events-0002.json"."""
    return ", ".join(sorted(names)) or "(no new file)"


def read_events(spark) -> DataFrame:
    """The good events of every file in INPUT, as one batch (what bronze and silver read)."""
    # What bronze does, as a batch: each line as text, with the file it came from.
    lines = (
        spark.read.text(paths.uri(INPUT))
        # _metadata is the hidden per-file column of file sources: which file each line came from.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )
    # What silver does: the parse with quarantine reasons that lesson 03 teaches
    # (common/parsing.py); the lines with a reason are left out.
    parsed = parsing.parse_json(lines, ECOMMERCE_EVENT_SCHEMA)
    return parsing.valid_records(parsed, ECOMMERCE_EVENT_SCHEMA)


def compare_with_lesson_17(spark) -> None:
    """Each gold view next to lesson 17's build_... function on the same events: equal?"""
    # A lesson may import an earlier lesson to reuse what it taught (shared code never does):
    # lesson 17's own queries are the figures the gold views must match, row for row.
    lesson_17 = paths.import_lesson("17_ecommerce_pipeline")
    builders = {
        "gold_category_revenue": lesson_17.build_category_revenue,
        "gold_funnel": lesson_17.build_funnel,
    }
    events = read_events(spark)
    for table, build in builders.items():
        gold_table = read_table(spark, table)
        gold = sorted(gold_table.collect())
        # Lesson 17's columns in the gold view's order, so the rows compare as tuples.
        expected = sorted(build(events).select(*gold_table.columns).collect())
        print(
            f"  {table}: {len(gold)} rows, lesson 17's {build.__name__}: {len(expected)} rows, "
            f"equal: {gold == expected}"
        )
        only_in_gold = [row for row in gold if row not in expected]
        only_in_lesson_17 = [row for row in expected if row not in gold]
        for row in only_in_gold[:3] + only_in_lesson_17[:3]:
            print(f"    differs: {row}")


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, simulator=False).parse_args(argv)
    pipeline = pipelines.Pipeline(
        PIPELINE,
        home=paths.output_for(LESSON),
        storage=checkpoint_root(LESSON, args),
        # The spec's configuration: bronze.py reads the folder of event files from it.
        configuration={"shop.events_dir": paths.uri(INPUT)},
    )
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
            session serves one, as a shared Spark (a cluster) would. Without --remote (its
            default is "local"), or with --remote "local[2]", each command would start a
            private local Spark of its own. As you would type it (--refresh: only these tables;
            section 4 says why bronze gets a command of its own):""")
        for layer in LAYERS:
            print(f"  {pipelines.shell_line(pipeline, 'run', layer)}")

        banner("2. spark-pipelines dry-run: the graph checked, no data read")
        dry = pipelines.run(pipeline, "dry-run")
        say(f"""It imported the definitions, resolved every table's reads and schemas, and wrote
            nothing: a typo in a column or a table that reads a missing one fails here, before
            any data moves ({dry.seconds:.0f} s: the graph went to the lesson's session).""")

        banner("3. spark-pipelines run: bronze -> silver -> gold")
        # On a second run of the lesson, bronze's checkpoint already lists the files read before.
        read_before = pipelines.files_read(pipeline, BRONZE)
        first = update(pipeline)
        after_first = count_rows(spark)
        read_first = pipelines.files_read(pipeline, BRONZE)
        print(f"  run 1 read: {file_list(read_first - read_before)}")

        banner("4. New files arrive; run again: only they are read")
        add_event_files(NEW_FILES)
        if not (INPUT / TYPOS_FILE).exists():
            files.write_atomically(INPUT, TYPOS_FILE, TYPOS)
        second = update(pipeline)
        after_second = count_rows(spark)
        read_second = pipelines.files_read(pipeline, BRONZE)
        print(f"  run 2 read: {file_list(read_second - read_first)}")
        print_table(
            ("table", "after run 1", "after run 2"),
            [(table, after_first[table], after_second[table]) for table in TABLES],
        )
        say("""The streaming tables appended only what was new: their checkpoints (under
            checkpoints/18_declarative_pipeline) remember what they read. The materialized views
            were recomputed from all of silver_events: always the whole answer. A pipeline
            orders its flows by what they read: a flow starts once every flow it reads from has
            finished, as gold waits for silver here. In Spark 4.2 that order did not hold for
            silver's streaming read of bronze_events once the table existed: a run of every
            table started silver while bronze was still running (several flows at once or one
            at a time), and silver missed the lines bronze appended in that run. So each run
            here is two commands: --refresh bronze_events, then the tables that read it.""")
        quarantine = read_table(spark, "silver_quarantine")
        quarantine.select("source_file", "reason").show(truncate=False)

        banner("5. The gold tables, and lesson 17's figures on the same input")
        revenue = read_table(spark, "gold_category_revenue")
        revenue.orderBy("window_start", "category").show(SHOW_ROWS)
        funnel = read_table(spark, "gold_funnel")
        funnel.orderBy("window_start").show(SHOW_ROWS)
        compare_with_lesson_17(spark)

        banner("6. When to declare a pipeline, and when to write the queries")
        costs = pipelines.costs(dry, *first, *second)
        say(f"""Declared wins when tables feed tables: the order, the checkpoints, a full refresh
            (run --full-refresh silver_events empties that table and reads all its input again;
            --full-refresh-all does it for every table), a dry-run in CI, one graph to read.
            It runs as a job sent to a Spark endpoint (each command here: {costs}; the one JVM
            is the command's launcher, the work ran in the lesson's session), so it suits
            refreshes every few minutes or hours. Hand-written queries win for results within
            seconds (a query that keeps running), for what a pipeline's sink cannot be (a
            foreachBatch function, a live dashboard like lesson 17's), and for control over
            triggers and state. Both can compute the same figures, as the comparison above
            shows.""")
        say("""What else SDP declares in Spark 4.2 (pyspark.pipelines), not used here: a sink,
            dp.create_sink("alerts", format="kafka", options={...}), written by a streaming flow,
            @dp.append_flow(target="alerts"): a pipeline can write to Kafka, or any format
            writeStream knows, but not to a Python function. Several flows into one table:
            dp.create_streaming_table("events"), then one @dp.append_flow(target="events") per
            source. dp.create_auto_cdc_flow(target=..., source=..., keys=[...],
            sequence_by=...): a change feed (upserts, and deletes with apply_as_deletes) applied
            to a streaming table, one row per key (SCD type 1 only). @dp.temporary_view: a step
            the flows read, not visible outside the pipeline. And spark-pipelines init --name
            NAME writes a new project: a spec, a Python and a SQL example.""")


if __name__ == "__main__":
    run_lesson(main)
