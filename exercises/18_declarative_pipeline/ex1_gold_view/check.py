"""Check of 18.1: the learner's gold view in lesson 18's own pipeline, run by spark-pipelines.

The hidden scenario runs the real pipeline. It needs a Spark Connect endpoint whose session
keeps a Hive catalog (lesson 18's ``server_conf``): settings read when a JVM starts, which the
exercises' warm session was started without. So it runs in a child process, as lesson 18 runs
it: a session serving Spark Connect, a copy of streaming_tutorial/pipelines/shop whose gold.sql
is replaced by the learner's view, ``spark-pipelines run`` on the first files, then again once
the last file has landed. After each run the child reads gold_category_sales, and what kind of
table the catalog says it is, and hands them back as JSON. That takes about 30 s on 2 cores (the
child's JVM 3 s; the first run 13 s; each later command about 6 s, 3-4 of them the command's
own start and end). So the visible scenario, checked first, runs the view's query itself in the
check's session, in a second or two: Spark's parser reads the statement (the kind of dataset it
declares, its name, its SELECT), and the SELECT runs over a silver_events built from the files
by the code silver.py runs (common.parsing), after each run's files. The pipeline runs only
for an answer that has passed that, and the suite's quick check of the reference solution
(visible scenarios only) never starts it.

Run as a script (the child): python check.py WORKDIR
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.scenarios import shop_event
from practice.spec import Exercise, Mistake, Scenario

VIEW = "gold_category_sales"  # the table the learner's statement must create
RESULT = "result.json"  # what the child writes in the workdir
SQL_FILE = "gold_category_sales.sql"
CHILD_TIMEOUT_SECONDS = 240
# The commands of each run (the datasets each refreshes; () for all). Run 1 creates the tables,
# and spark-pipelines orders them by what each reads. On a later run, with bronze_events in the
# catalog, Spark 4.2 did not count silver.py's readStream.table("bronze_events") as a dependency
# and started silver_events first, one flow at a time too (measured: silver then missed the new
# lines; apache/spark issue 57897). A read in SQL (the view's FROM silver_events) is an
# unresolved relation the pipeline resolves itself, a dependency it keeps. So run 2 refreshes
# bronze first, then silver and the view.
RUN_STEPS = {
    "1": [()],
    "2": [("bronze_events",), ("silver_events", VIEW)],
}
# A materialized view is a table the runs write (the Hive catalog lists it as MANAGED); a view
# (CREATE VIEW) would be computed at each read instead.
MATERIALIZED = "gold_category_sales is a table each run writes (not a view)"


def line(text: str) -> str:
    """A line of a scenario's file that is no JSON event: written as it is."""
    return text


class PipelineFailed(Exception):
    """spark-pipelines failed on the learner's definition: its own words."""


def file_text(records: list, scrambled: bool) -> str:
    """A scenario's file: a dict as a JSON line, a str as it is (rows reversed when scrambled)."""
    if scrambled:
        records = list(reversed(records))
    return "".join(
        (record if isinstance(record, str) else json.dumps(record)) + "\n" for record in records
    )


def write_runs(workdir: Path, files: list, scrambled: bool) -> None:
    """Every file but the last in runs/1, the last in runs/2."""
    from infra.files import write_atomically

    for number, records in enumerate(files):
        run = 1 if number < len(files) - 1 else 2
        text = file_text(records, scrambled)
        write_atomically(workdir / "runs" / str(run), f"events-{number + 1:04d}.json", text)


def learner_sql(module) -> str:
    from practice.checking import NotStarted

    try:
        sql = module.gold_category_sales_sql()
    except NotImplementedError as error:
        raise NotStarted() from error
    if not isinstance(sql, str) or not sql.strip():
        raise TypeError(f"gold_category_sales_sql must return the SQL statement, not {sql!r}")
    return sql


def run_view(spark, exercise, module, scenario, workdir: Path):
    """The exercise's run: the view's own query for the visible scenario, the real pipeline for
    the hidden one; the view's rows after each run as one Batch."""
    from common import paths

    sql = learner_sql(module)
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    workdir.mkdir(parents=True)
    write_runs(workdir, scenario.batches, scenario.reads_scrambled)
    if scenario.hidden:
        return run_pipeline(exercise, sql, workdir)
    return run_query(spark, sql, workdir)


def run_pipeline(exercise, sql: str, workdir: Path):
    """The pipeline's two runs in a child process (``child``)."""
    import lesson16_crash_harness as crash

    from practice.observe import Batch, Observation, sort_rows

    (workdir / SQL_FILE).write_text(sql, encoding="utf-8")
    log = workdir / "child.log"
    with open(log, "w", encoding="utf-8") as output:
        subprocess.run(
            [sys.executable, str(exercise.check_file), str(workdir)],
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": crash.python_path()},
            timeout=CHILD_TIMEOUT_SECONDS,
            check=False,
        )
    if not (workdir / RESULT).exists():
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
        raise RuntimeError(f"the pipeline's process ended without a result:\n{tail}")
    result = json.loads((workdir / RESULT).read_text(encoding="utf-8"))
    if result.get("error"):
        raise PipelineFailed(result["error"])
    runs = result["runs"]
    batches = [Batch(sort_rows([tuple(row) for row in run["rows"]])) for run in runs]
    facts = {MATERIALIZED: all(run["kind"] == "MANAGED" for run in runs)}
    return Observation(runs[-1]["columns"], batches, facts=facts)


class DeclarationError(Exception):
    """The learner's statement declares something else than the pipeline needs."""


def view_query(spark, sql: str) -> str:
    """The SELECT of the learner's CREATE MATERIALIZED VIEW gold_category_sales, as Spark's parser
    reads it. What the pipeline would not make into that table is said as the pipeline says it."""
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)
    declared = plan.getClass().getSimpleName()
    if declared == "CreateStreamingTableAsSelect":
        raise DeclarationError("the statement declares a streaming table (CREATE STREAMING TABLE)")
    if declared == "CreateView":
        raise DeclarationError("the statement declares a view (CREATE VIEW)")
    if declared == "CreateViewCommand":
        raise DeclarationError(
            f"[TABLE_OR_VIEW_NOT_FOUND] The table or view `{VIEW}` cannot be found after the run: "
            "the statement declares a temporary view"
        )
    if declared != "CreateMaterializedViewAsSelect":
        raise DeclarationError(
            f"the statement is no CREATE MATERIALIZED VIEW (Spark reads a {declared})"
        )
    parts = plan.name().nameParts()
    name = parts.apply(parts.size() - 1)
    if name.lower() != VIEW:
        raise DeclarationError(
            f"[TABLE_OR_VIEW_NOT_FOUND] The table or view `{VIEW}` cannot be found after the run: "
            f"the statement declares `{name}`"
        )
    return plan.originalText()


def run_query(spark, sql: str, workdir: Path):
    """The view's query on silver_events as silver.py makes it, after each run's files."""
    from pyspark.sql import functions as F

    from common import parsing, paths
    from practice.observe import Batch, Observation, plain, sort_rows

    query = view_query(spark, sql)
    events = workdir / "events"
    batches = []
    columns = []
    try:
        for folder in sorted((workdir / "runs").glob("[0-9]")):
            for path in sorted(folder.iterdir()):
                (events / path.name).parent.mkdir(parents=True, exist_ok=True)
                (events / path.name).write_text(path.read_text(encoding="utf-8"))
            # What bronze.py and silver.py do, as a batch: the lines, parsed, the good ones kept.
            lines = spark.read.text(paths.uri(events)).withColumn(
                "source_file", F.col("_metadata.file_name")
            )
            parsed = parsing.parse_json(lines, ECOMMERCE_EVENT_SCHEMA)
            silver = parsing.valid_records(parsed, ECOMMERCE_EVENT_SCHEMA, "source_file")
            silver.createOrReplaceTempView("silver_events")
            view = spark.sql(query)
            columns = list(view.columns)
            batches.append(Batch(sort_rows([plain(tuple(row)) for row in view.collect()])))
    finally:
        spark.catalog.dropTempView("silver_events")
    return Observation(columns, batches, facts={MATERIALIZED: True})


def child(workdir: Path) -> None:
    """Lesson 18's pipeline with the learner's gold view, run twice; the view's rows as JSON."""
    import shutil

    import lesson18_pipeline_runner as pipelines

    from common import paths
    from common.session import get_spark
    from infra.files import write_atomically
    from practice.observe import plain

    events = workdir / "events"
    events.mkdir(parents=True, exist_ok=True)
    pipeline = pipelines.Pipeline(
        "shop",
        home=workdir / "pipeline",
        storage=workdir / "storage",
        configuration={"shop.events_dir": paths.uri(events)},
    )
    spark = get_spark("exercise-18-1", ui=False, extra_conf=pipelines.server_conf(pipeline))
    spark.sparkContext.setLogLevel("ERROR")
    pipelines.prepare(pipeline)
    transformations = pipeline.spec.parent / "transformations"
    (transformations / "gold.sql").unlink()
    shutil.copy(workdir / SQL_FILE, transformations / SQL_FILE)
    result = {"runs": []}
    try:
        # runs/1, runs/2 (write_atomically leaves hidden staging folders beside them).
        for folder in sorted((workdir / "runs").glob("[0-9]")):
            for path in sorted(folder.iterdir()):
                write_atomically(events, path.name, path.read_text(encoding="utf-8"))
            for refresh in RUN_STEPS[folder.name]:
                step = pipelines.run(pipeline, "run", show=print, refresh=refresh)
                print(f"run {folder.name} {refresh or 'all'}: {step.seconds:.1f} s", flush=True)
            spark.catalog.refreshTable(VIEW)
            view = spark.table(VIEW)
            rows = [[plain(value) for value in row] for row in view.collect()]
            kind = spark.catalog.getTable(VIEW).tableType
            result["runs"].append({"columns": list(view.columns), "rows": rows, "kind": kind})
    except pipelines.PipelineError as error:
        result["error"] = str(error)
    except Exception as error:  # the view missing, or of another kind: said in a line
        result["error"] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    (workdir / RESULT).write_text(json.dumps(result), encoding="utf-8")
    spark.stop()


COLUMNS = ["category", "views", "carts", "purchases", "units", "revenue"]
PURCHASES, UNITS, REVENUE = 3, 4, 5  # where a row holds them


def by_category(batch) -> dict:
    return {row[0]: row for row in batch.rows}


def pairs(mine, wanted) -> list:
    """(mine, wanted) for each category in a run of both, when the columns are the expected."""
    if mine.columns != wanted.columns or len(mine.batches) != len(wanted.batches):
        return []
    found = []
    for got, want in zip(mine.batches, wanted.batches, strict=True):
        mine_rows = by_category(got)
        found += [
            (mine_rows[key], row) for key, row in by_category(want).items() if key in mine_rows
        ]
    return found


def drops_categories_without_purchase(mine, wanted) -> bool:
    """A category is missing from some run, and every missing one has no purchase."""
    missing = []
    for got, want in zip(mine.batches, wanted.batches, strict=False):
        mine_rows = by_category(got)
        missing += [row for key, row in by_category(want).items() if key not in mine_rows]
    return bool(missing) and all(row[PURCHASES] == 0 for row in missing)


def null_without_purchase(mine, wanted) -> bool:
    """A null where the expected row has 0 units or 0.0 revenue."""
    return any(
        got[column] is None and want[column] == 0
        for got, want in pairs(mine, wanted)
        for column in (UNITS, REVENUE)
    )


def units_count_purchases(mine, wanted) -> bool:
    """Where units differ, they equal the number of purchases: the quantities left out."""
    differing = [(got, want) for got, want in pairs(mine, wanted) if got[UNITS] != want[UNITS]]
    return bool(differing) and all(got[UNITS] == got[PURCHASES] for got, _ in differing)


def not_stored(mine, wanted) -> bool:
    return mine.facts.get(MATERIALIZED) is False


EXERCISE = Exercise(
    title="Sales per category, declared",
    kind="build",
    practises="a materialized view in a declarative pipeline: the gold table over silver",
    function="gold_category_sales_sql",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    run=run_view,
    check_dropped=False,
    check_watermark=False,
    why=(
        "A materialized view is its query's answer, written as a table and recomputed from the "
        "whole of its source at every pipeline run (Spark 4.2 has no incremental refresh), so "
        "after the second run it counts the events of both runs, never only the new ones. It "
        "reads silver_events, which silver.py fills with the good events only, so a quarantined "
        "line never reaches gold. Counting each event type with count_if over all of a "
        "category's events (no WHERE) keeps every category, and coalesce turns the sum over no "
        "purchase, which is null, into 0."
    ),
    hints=[
        "Which of the pipeline's tables holds the events to count, and is a new run's answer "
        "built from its new rows only or from all of them? How does a category with views but "
        "no purchase keep its row, with 0 and not nothing?",
        "lesson 18, `compare_with_lesson_17`: the two views of pipelines/shop/transformations/"
        "gold.sql against lesson 17's functions; gold.sql's gold_funnel is the form "
        "(CREATE MATERIALIZED VIEW ... AS SELECT ... FROM silver_events GROUP BY ...), and "
        "lesson 17, `build_funnel` counts each event type in one pass, with count_if.",
        "As gold_funnel, grouped by category instead of a window: one count_if per event type; "
        "units and revenue add up the purchases only (a CASE WHEN event_type = 'purchase' "
        "inside sum), wrapped in coalesce(..., 0), revenue rounded to 2 places; no WHERE.",
    ],
    scenarios=[
        # Run 1: Books has a view, a purchase of 2 units (12.5 each) and one of 7.25: 3 units,
        # 32.25. A purchase at a price below 0 is quarantined by silver: it counts nowhere.
        # Garden has a cart and a view, no purchase: its row says 0 and 0.0. Run 2 adds Garden's
        # first purchase, Toys (a view only) and a line that is no JSON: the view counts the
        # events of both runs.
        Scenario(
            [
                [
                    shop_event("E1", "U1", "view", "10:30:00", category="Books", price=12.0),
                    shop_event(
                        "E2", "U1", "purchase", "10:30:10", category="Books", price=12.5, quantity=2
                    ),
                    shop_event("E3", "U2", "cart", "10:30:20", category="Garden", price=40.0),
                    line(
                        '{"event_id":"E4","user_id":"U2","event_type":"purchase",'
                        '"category":"Books","price":-5.0,"quantity":1,'
                        '"timestamp":"2025-01-15T10:30:30.000Z"}'
                    ),
                ],
                [
                    shop_event("E5", "U3", "view", "10:31:00", category="Garden", price=40.0),
                    shop_event("E6", "U3", "purchase", "10:31:10", category="Books", price=7.25),
                ],
                [
                    shop_event("E7", "U2", "purchase", "10:32:00", category="Garden", price=40.0),
                    shop_event("E8", "U4", "view", "10:32:10", category="Toys", price=3.0),
                    line('{"event_id":"E9","event_type":"purchase"'),
                ],
            ]
        ),
        # The real pipeline, on other categories, read scrambled: Home buys 3 and 1 at 19.99
        # (4 units, 79.96); a purchase with no user_id is quarantined (Sports would get 5 units);
        # Electronics 2 x 250.0 and 0.5; Sports has only a cart until run 2 brings 2 units; Books
        # (a view and a cart) comes in run 2, with a line that is no JSON.
        Scenario(
            [
                [
                    shop_event("H1", "U7", "view", "11:00:00", category="Home", price=19.99),
                    shop_event(
                        "H2", "U7", "purchase", "11:00:05", category="Home", price=19.99, quantity=3
                    ),
                    shop_event("H3", "U8", "cart", "11:00:10", category="Sports", price=30.0),
                    line(
                        '{"event_id":"H4","event_type":"purchase","category":"Sports",'
                        '"price":30.0,"quantity":5,"timestamp":"2025-01-15T11:00:15.000Z"}'
                    ),
                    shop_event(
                        "H5",
                        "U9",
                        "purchase",
                        "11:00:20",
                        category="Electronics",
                        price=250.0,
                        quantity=2,
                    ),
                ],
                [
                    shop_event(
                        "H6", "U9", "purchase", "11:01:00", category="Electronics", price=0.5
                    ),
                    shop_event("H7", "U8", "view", "11:01:05", category="Home", price=19.99),
                    shop_event("H8", "U8", "purchase", "11:01:10", category="Home", price=19.99),
                ],
                [
                    shop_event(
                        "H9",
                        "U8",
                        "purchase",
                        "11:02:00",
                        category="Sports",
                        price=30.0,
                        quantity=2,
                    ),
                    shop_event("H10", "U7", "view", "11:02:05", category="Books", price=8.0),
                    shop_event("H11", "U7", "cart", "11:02:10", category="Books", price=8.0),
                    line("not json at all"),
                ],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "streaming_table",
            "The statement declares a streaming table (or spark-pipelines refused its streaming "
            "aggregation in append mode). A streaming table appends the rows each run adds, but "
            "a category's counts change with every new event, whenever it comes. Declare a "
            "MATERIALIZED VIEW reading silver_events as a table: each run recomputes it whole.",
            error=r"STREAMING_OUTPUT_MODE|streaming aggregations without watermark"
            r"|declares a streaming table",
        ),
        Mistake(
            "temporary_view",
            "After the run the catalog holds no gold_category_sales: the statement declares "
            "another name, or a temporary view (a step inside the pipeline, never written). "
            "Declare CREATE MATERIALIZED VIEW gold_category_sales.",
            error=r"TABLE_OR_VIEW_NOT_FOUND\] The table or view `gold_category_sales`",
        ),
        Mistake(
            "persisted_view",
            "gold_category_sales is a view (CREATE VIEW), not a table the runs write: a view runs "
            "its query again at every read, over whatever silver_events holds then. Declare a "
            "MATERIALIZED VIEW: each run writes its answer, which readers get as it was computed.",
            error=r"declares a view \(CREATE VIEW\)",
            when=not_stored,
        ),
        Mistake(
            "purchases_only",
            "A category without a purchase has no row, in some run: a WHERE on the purchases "
            "removes a category's views and carts before the GROUP BY (and with them the "
            "categories that have nothing else). Keep every event of silver_events; count each "
            "type with count_if and add up only the purchases' quantities and amounts, with a "
            "CASE WHEN inside sum.",
            when=drops_categories_without_purchase,
        ),
        Mistake(
            "revenue_null",
            "A category without a purchase has null units or revenue where 0 is expected: sum "
            "over no value, or over a CASE WHEN that gives only nulls, is NULL. Wrap each sum "
            "in coalesce(..., 0).",
            when=null_without_purchase,
        ),
        Mistake(
            "quantity_ignored",
            "Where a purchase has a quantity of more than 1, units equal the number of "
            "purchases: the quantities are left out (count instead of sum(quantity)), and the "
            "revenue with them if it adds up prices. Units add up the purchases' quantities, "
            "revenue their price x quantity.",
            when=units_count_purchases,
        ),
    ],
)


if __name__ == "__main__":
    child(Path(sys.argv[1]))
