"""Check of 17.2: the learner's run_pipeline, run twice on the same tables and checkpoints.

Run 1 reads every file but the last two, one file per micro-batch; then the last two files
land, and run 2 (the restart) reads them two per micro-batch: other batch boundaries, so a
query started over instead of resumed would not even cut the input as run 1 did. After each
run both Delta tables are read back whole. Facts say what rows cannot: each query resumed (the
same query id in both runs), each has a checkpoint of its own (ids of their own), each stopped
by itself once it had read its input, and the alerts query's source is the revenue table.
"""

import threading
import time
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql.streaming import StreamingQuery

from common import paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.observe import Batch, Observation, plain, sort_rows, trigger_of
from practice.scenarios import shop_event
from practice.spec import Exercise, Mistake, Scenario
from teaching.microbatch import write_batches

COLUMNS = ["table", "window_start", "window_end", "category", "purchases", "revenue"]
TABLE_COLUMNS = COLUMNS[1:]  # what both tables hold, in this order
REVENUE_TARGET = 500.0  # the stub's: a window whose revenue reached this gets an alert
RESTART_FILES = 2  # the last files of a scenario: they land before run 2, which reads them
# The triggers that stop a query once it has read its input (availableNow; once, deprecated).
STOPS_BY_ITSELF = ("AvailableNowTrigger", "OneTimeTrigger")
# run_pipeline's whole run, at most (a correct run takes a few seconds).
RUN_SECONDS = 120

RESUMED = "the restart resumed each query (the same query ids)"
OWN_IDS = "each query has an id of its own (a checkpoint of its own)"
STOPPED = "each query stopped by itself once it had read its input"
ALERTS_READ_REVENUE = "the alerts query reads the revenue table (readStream from Delta)"
ALERT_COLUMNS = "the alerts table's columns"


def purchase(event_id: str, time_of_day: str, category: str, price: float, units: int = 1):
    return shop_event(
        event_id, "U-1", "purchase", time_of_day, category=category, price=price, quantity=units
    )


def view(event_id: str, time_of_day: str, category: str, price: float) -> dict:
    return shop_event(event_id, "U-2", "view", time_of_day, category=category, price=price)


def read_events(spark, folder: Path, files_per_trigger: int):
    """The shop events of ``folder``'s files, ``files_per_trigger`` files per micro-batch."""
    return (
        spark.readStream.schema(ECOMMERCE_EVENT_SCHEMA)
        .option("maxFilesPerTrigger", files_per_trigger)
        .json(paths.uri(folder))
    )


class PipelineDidNotEnd(Exception):
    """run_pipeline was still running, waiting on a query that never stops by itself."""


def never_stops(queries) -> bool:
    """A query still running with a trigger that does not stop it once it has read its input:
    waiting for it would wait for ever."""
    return any(
        query.isActive and not trigger_of(query).startswith(STOPS_BY_ITSELF) for query in queries
    )


def new_queries(spark, before: set) -> list:
    return [query for query in spark.streams.active if query.id not in before]


def call_run_pipeline(spark, module, events, workdir: Path) -> list:
    """Call the learner's run_pipeline. A query's awaitTermination() without a timeout, on a
    query whose trigger never stops it, would wait for ever: it raises PipelineDidNotEnd there
    instead (the check stops every query run_pipeline started). The call runs in a thread, so
    that a wait the check cannot see (a loop on isActive) still ends, after RUN_SECONDS."""
    from practice.checking import NotStarted

    before = {query.id for query in spark.streams.active}
    outcome = {}
    original_wait = StreamingQuery.awaitTermination

    def await_termination(query, timeout=None):
        if timeout is None and not trigger_of(query).startswith(STOPS_BY_ITSELF):
            raise PipelineDidNotEnd(NEVER_RETURNED)
        return original_wait(query, timeout)

    def call() -> None:
        try:
            outcome["queries"] = module.run_pipeline(
                events, workdir / "revenue", workdir / "alerts", workdir / "checkpoints"
            )
        except BaseException as error:  # handed to the check's thread, raised there
            outcome["error"] = error

    StreamingQuery.awaitTermination = await_termination
    try:
        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        thread.join(RUN_SECONDS)
        while thread.is_alive():  # a wait of another kind: stop its queries until it returns
            outcome.setdefault("error", PipelineDidNotEnd(NEVER_RETURNED))
            for query in new_queries(spark, before):
                query.stop()
            thread.join(0.5)
    finally:
        StreamingQuery.awaitTermination = original_wait
    if "error" in outcome:
        if isinstance(outcome["error"], PipelineDidNotEnd):
            for query in new_queries(spark, before):
                query.stop()
        if isinstance(outcome["error"], NotImplementedError):
            raise NotStarted() from outcome["error"]
        raise outcome["error"]
    queries = outcome.get("queries")
    if not isinstance(queries, (list, tuple)) or not all(
        isinstance(query, StreamingQuery) for query in queries
    ):
        raise TypeError(f"run_pipeline must return the queries it started, not {queries!r}")
    return list(queries)


NEVER_RETURNED = "run_pipeline did not return: it waited on a query whose trigger never stops it"


def finish(queries: list) -> bool:
    """Wait until every query whose trigger stops it has stopped by itself; stop the others.
    Whether all stop by themselves."""
    stopped = not never_stops(queries)
    for query in queries:
        if query.isActive and trigger_of(query).startswith(STOPS_BY_ITSELF):
            query.awaitTermination()  # it stops once it has read its input
        query.stop()
    for query in queries:
        if query.exception():
            raise query.exception()
    return stopped


def role(query, workdir: Path) -> str:
    """'revenue' or 'alerts': the table the query writes (its sink's description names it)."""
    progress = query.lastProgress or {}
    sink = progress.get("sink", {}).get("description", "")
    for name in ("revenue", "alerts"):
        if str((workdir / name).resolve()) in sink:
            return name
    return sink or "?"


def reads_revenue(queries: list, workdir: Path) -> bool:
    """The query that writes the alerts table reads the revenue table (a Delta source)."""
    revenue = str((workdir / "revenue").resolve())
    for query in queries:
        if role(query, workdir) != "alerts":
            continue
        sources = (query.lastProgress or {}).get("sources", [])
        return any(
            source["description"].startswith("DeltaSource") and revenue in source["description"]
            for source in sources
        )
    return False


def read_table(spark, table: Path, name: str) -> tuple[list, list]:
    """(columns, rows) of a Delta table: each row ('<name>', its TABLE_COLUMNS values)."""
    if not DeltaTable.isDeltaTable(spark, paths.uri(table)):
        return [], []
    frame = spark.read.format("delta").load(paths.uri(table))
    columns = list(frame.columns)
    rows = [
        (name, *(plain(row[column]) if column in columns else "-" for column in TABLE_COLUMNS))
        for row in frame.collect()
    ]
    return columns, rows


def run_twice(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """Run 1 on every file but the last RESTART_FILES, run 2 once they have landed; one Batch
    per run: both tables' rows after it."""
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    files = scenario.batches
    first_mtime = time.time() - len(files) - 60
    split = len(files) - RESTART_FILES
    runs, ids, stopped, reads = [], [], [], []
    alert_columns = []
    for numbers, per_trigger in ((range(split), 1), (range(split, len(files)), RESTART_FILES)):
        for number in numbers:
            records = files[number][::-1] if scenario.reads_scrambled else files[number]
            write_batches(
                workdir / "input",
                [records],
                first_number=number,
                first_mtime=first_mtime,
                name="file",
            )
        events = read_events(spark, workdir / "input", per_trigger)
        queries = call_run_pipeline(spark, module, events, workdir)
        stopped.append(finish(queries))
        ids.append(sorted((role(query, workdir), str(query.id)) for query in queries))
        reads.append(reads_revenue(queries, workdir))
        _, revenue_rows = read_table(spark, workdir / "revenue", "revenue")
        alert_columns, alert_rows = read_table(spark, workdir / "alerts", "alerts")
        runs.append(Batch(sort_rows(revenue_rows + alert_rows)))
    facts = {
        # (the table it writes, its id) for each query: the same pairs in both runs.
        RESUMED: ids[0] == ids[1],
        OWN_IDS: all(len({query_id for _, query_id in run}) == len(run) for run in ids),
        STOPPED: all(stopped),
        ALERTS_READ_REVENUE: all(reads),
        ALERT_COLUMNS: alert_columns,
    }
    return Observation(COLUMNS, runs, facts=facts)


def alerts_of(batch: Batch) -> list:
    return [row for row in batch.rows if row[0] == "alerts"]


def revenue_of(batch: Batch) -> list:
    return [row for row in batch.rows if row[0] == "revenue"]


def missing_alerts(mine, wanted) -> list | None:
    """The alerts some run lacks, when the revenue table is right after every run and no run
    has an alert it should not; None otherwise."""
    if len(mine.batches) != len(wanted.batches):
        return None
    missing = []
    for got, want in zip(mine.batches, wanted.batches, strict=True):
        if revenue_of(got) != revenue_of(want):
            return None
        mine_alerts, wanted_alerts = alerts_of(got), alerts_of(want)
        if any(row not in wanted_alerts for row in mine_alerts):
            return None
        missing += [row for row in wanted_alerts if row not in mine_alerts]
    return missing


def misses_the_target_itself(mine, wanted) -> bool:
    """The only alerts missing are those of windows whose revenue is exactly the target."""
    missing = missing_alerts(mine, wanted)
    return bool(missing) and all(row[-1] == REVENUE_TARGET for row in missing)


def alerts_lag_behind(mine, wanted) -> bool:
    """Alerts missing, some of them for windows above the target."""
    missing = missing_alerts(mine, wanted)
    return bool(missing) and any(row[-1] != REVENUE_TARGET for row in missing)


def fact_false(name: str):
    def when(mine, wanted) -> bool:
        return mine.facts.get(name) is False

    return when


EXERCISE = Exercise(
    title="Alerts from the revenue table",
    kind="build",
    practises="two queries working together: one's Delta table is the other's stream, each "
    "resumes from its own checkpoint",
    function="run_pipeline",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    run=run_twice,
    check_dropped=False,
    why=(
        "A Delta table is a sink and a source at once: the revenue query appends each window "
        "once, when the watermark has closed it, and the alerts query streams the table's new "
        "commits. Each keeps its own checkpoint: the revenue query its file offsets and open "
        "windows, the alerts query the last table version it read. So the next run resumes "
        "both where they stopped, and no window and no alert is written twice. availableNow "
        "makes each run a job that ends, and a query reads what is there when it starts: that "
        "is why the alerts start once the revenue query has stopped."
    ),
    hints=[
        "Which query's output is the other's input, and when can the second one start if each "
        "reads only what is there when it starts? What must each query keep, and where, so that "
        "the next run adds only what is new?",
        "lesson 11, `read_delta_stream`: a Delta table as a streaming source; lesson 11, "
        "`start_events`: a Delta append sink with its checkpoint; lesson 17, "
        "`start_revenue_drops`: the revenue windows in append mode, a row once the watermark "
        "closes its window.",
        "lesson 17, `start_queries` gives each query a checkpoint folder of its own under one "
        "root. An availableNow query reads what is there when it starts and then stops: "
        "QUICK_REFERENCE (Triggers) and lesson 14 (awaitTermination) show how to wait for that "
        "stop before the next query, which reads the first one's table, starts.",
    ],
    scenarios=[
        # Run 1 (two files): the window 10:30 closes with Books at exactly 500.0 (250.0 x 2: an
        # alert), Games at 499.99 (none), Home 100.0; the view worth 900.0 counts nowhere. The
        # window 10:35 closes with Books 600.0 (an alert) and Home 300.0: the watermark (10:50:30
        # - 10 min) passes 10:40 in the batch after the data (with 11 min it would not). Home's
        # window 10:45 (300.0) and Electronics' 10:50 stay open, in the revenue query's state.
        # Run 2 (two files, one micro-batch): Home adds 200.0 to 10:45 (500.0 in all: an alert
        # only a query that kept its state can give), a purchase at 10:12 is too late and
        # dropped, and 11:10 closes 10:45 and 10:50.
        Scenario(
            [
                [
                    purchase("E1", "10:31:00", "Books", 250.0, units=2),
                    purchase("E2", "10:32:00", "Games", 499.99),
                    view("E3", "10:33:00", "Electronics", 900.0),
                    purchase("E4", "10:34:00", "Home", 100.0),
                ],
                [
                    purchase("E5", "10:36:00", "Home", 300.0),
                    purchase("E6", "10:38:00", "Books", 600.0),
                    purchase("E7", "10:47:00", "Home", 300.0),
                    purchase("E9", "10:50:30", "Electronics", 1000.0),
                ],
                [
                    purchase("E10", "10:46:00", "Home", 200.0),
                    purchase("E8", "10:12:00", "Home", 900.0),
                ],
                [purchase("E11", "11:10:00", "Sports", 50.0)],
            ]
        ),
        # Other categories, read scrambled. Sports reaches exactly 500.0 with 4 units of 125.0;
        # Toys adds up to 499.99 (rounded) from two purchases; a cart worth 2000.0 counts
        # nowhere. Books' window 11:20 gets 400.0 before the restart and 100.0 after it (500.0).
        # The watermark after run 1 is 11:14:30: Home's window 11:10 closes only in run 2 (with
        # a 9-minute delay it would close in run 1). Garden's purchase at 11:00 comes after the
        # restart, too late.
        Scenario(
            [
                [
                    purchase("P-1", "11:02:00", "Sports", 125.0, units=4),
                    purchase("P-2", "11:01:00", "Toys", 250.0),
                    shop_event(
                        "P-3", "U-3", "cart", "11:03:00", category="Electronics", price=2000.0
                    ),
                ],
                [
                    purchase("P-4", "11:04:00", "Toys", 249.987),
                    purchase("P-5", "11:07:00", "Garden", 700.0),
                    purchase("P-6", "11:24:30", "Books", 400.0),
                    purchase("P-10", "11:12:00", "Home", 60.0),
                ],
                [
                    purchase("P-7", "11:23:00", "Books", 100.0),
                    purchase("P-8", "11:00:00", "Garden", 900.0),
                ],
                [purchase("P-9", "11:40:00", "Sports", 10.0)],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "update_mode",
            "Spark refused the revenue query: a Delta sink takes append or complete mode, not "
            "update. A table that another query reads as a stream should get each window once, "
            "when it is final: append mode, where the watermark closes the window.",
            error=r"DELTA_UNSUPPORTED_OUTPUT_MODE|does not support Update output mode",
        ),
        Mistake(
            "complete_mode",
            "The alerts query failed: the revenue table it reads had rows rewritten (complete "
            "mode replaces the whole table at every micro-batch), and a Delta streaming source "
            "follows appended rows only. Skipping those commits (skipChangeCommits) would skip "
            "every window. Write the revenue windows in append mode: each window once, when the "
            "watermark has closed it, so the table only grows.",
            error=r"DELTA_SOURCE_TABLE_IGNORE_CHANGES|DELTA_SOURCE_IGNORE_DELETE",
        ),
        Mistake(
            "alerts_before_table",
            "Spark refused the alerts query: revenue_table had no schema yet (no commit). The "
            "revenue query commits its first micro-batch a moment after start() returns; the "
            "alerts query can read the table once the revenue query has run, so start it after "
            "revenue.awaitTermination(), not beside it.",
            error=r"DELTA_SCHEMA_NOT_SET|DELTA_TABLE_NOT_FOUND|is not a Delta table",
        ),
        Mistake(
            "shared_checkpoint",
            "A query found in its checkpoint what another query wrote there (a Delta source "
            "given a file source's offsets, or two queries with one id): the two queries share a "
            "checkpoint folder. A checkpoint belongs to one query: give each a folder of its own "
            "under checkpoints, the same on every run.",
            error=r"DELTA_INVALID_SOURCE_VERSION|sourceVersion\(\d+\) is invalid",
            when=fact_false(OWN_IDS),
        ),
        Mistake(
            "no_trigger",
            "run_pipeline never returned: it waited on a query whose trigger never stops it. "
            "Without .trigger(availableNow=True) a query runs micro-batch "
            "after micro-batch until it is stopped, so awaitTermination() waits for ever; with "
            "it, the query reads what is there, then stops.",
            error=r"run_pipeline did not return",
        ),
        Mistake(
            "checkpoint_per_run",
            "The restart did not resume every query: a query of run 2 has a new id, so its "
            "checkpoint was not run 1's (a new or temporary folder each run, or none kept). A "
            "query started over reads its input from the start: the alerts query reads the "
            "whole revenue table again and appends its alerts a second time, the revenue query "
            "reads every file again. Each query's checkpoint is one folder under checkpoints, "
            "the same on every run.",
            when=fact_false(RESUMED),
        ),
        Mistake(
            "left_running",
            "A query was still running after it had read its input: it was not started with "
            ".trigger(availableNow=True). processAllAvailable() waits until the input is read, "
            "but leaves the query running; the run must end by itself.",
            when=fact_false(STOPPED),
        ),
        Mistake(
            "alerts_from_events",
            "The alerts query does not read the revenue table: its source is not revenue_table "
            "read as a Delta stream. Windows computed again from the events give the same rows "
            "today, but the alerts must follow the table others read (its corrections, its "
            "history): spark.readStream.format('delta').load(revenue_table).",
            when=fact_false(ALERTS_READ_REVENUE),
        ),
        Mistake(
            "target_excluded",
            "The revenue table is right, but the windows whose revenue is exactly 500.0 got no "
            "alert: a window that reached REVENUE_TARGET counts, the target itself included.",
            when=misses_the_target_itself,
        ),
        Mistake(
            "alerts_lag_behind",
            "The revenue table is right after each run, but alerts are missing for windows of "
            "it above the target: the alerts query read revenue_table before those windows were "
            "committed (started beside the revenue query, not after it), or its filter leaves "
            "them out. An availableNow query reads the versions there when it starts: start the "
            "alerts once the revenue query has stopped (awaitTermination).",
            when=alerts_lag_behind,
        ),
    ],
)
