"""16.2: the learner predicts what each code change does to a restart on the old checkpoint.

The scenario is the pristine file's PAYMENTS_BEFORE and PAYMENTS_AFTER (the learner reads them
there). The check runs start_counts on the files before, adds the files after, then for each
function of CHANGES:

- the restart: the change on a copy of the checkpoint and of the output folder (so no change
  sees another's), until it has read every file (availableNow). An error is "refused", with
  Spark's error class;
- the fresh start: the same change from nothing, on the files before, then again on all of
  them (its own folder, checkpoint and input), as if the changed code had always run.

The restart RESUMES when it ends as the fresh start did: the same rows in the folder it writes
(columns by name), the same rows read by each micro-batch that read any, and its state in the
same number of partitions. Otherwise it DIFFERS, and the facts say in what. Nothing is looked
up in a table.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from common import paths
from practice import catalog
from practice.observe import Batch, Observation, plain, sort_rows
from practice.scenarios import at
from practice.spec import Exercise, Mistake, Scenario
from teaching.microbatch import write_batches

PRISTINE = catalog.load_module(
    catalog.EXERCISES_DIR / "16_fault_tolerance" / "ex2_changed_query" / catalog.STUB, "pristine"
)
RESUMES, DIFFERS = PRISTINE.RESUMES, PRISTINE.DIFFERS
OUTCOMES = "what each restart does"
DIFFERENCES = "how a restart differs from a fresh start"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
RUN_SECONDS = 120  # an availableNow run of four small files takes about a second
# What Spark did, by session, pristine file and scenario (run_changes).
OBSERVED: dict = {}


def payments(files: list) -> list:
    """The pristine file's tuples as records, one list per file."""
    return [
        [
            {"record_id": ident, "user_id": user, "amount": amount, "event_time": at(time)}
            for ident, user, amount, time in records
        ]
        for records in files
    ]


def error_class(error: BaseException) -> str:
    """The first error class in Spark's message that is not the STREAM_FAILED wrapper."""
    for found in re.finditer(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]", str(error)):
        if found.group(1) != "STREAM_FAILED":
            return found.group(1)
    return type(error).__name__


def run_change(spark, start, folder: Path, output: Path, checkpoint: Path):
    """Start ``start`` (a change, or start_counts) and wait until it has read everything.

    Returns ("", what it did) or (Spark's error class, None). What it did: what the folder it
    wrote to holds, the rows each micro-batch that read any read, and its state's partitions.
    The session's
    shuffle partitions are put back afterwards, whatever ``start`` set them to.
    """
    from pyspark.errors import PySparkException

    before = spark.conf.get(SHUFFLE_PARTITIONS)
    try:
        query = start(spark, folder, output, checkpoint)
        try:
            if not query.awaitTermination(RUN_SECONDS):
                raise TimeoutError(f"{start.__name__} did not read its files in {RUN_SECONDS} s")
        finally:
            if query.isActive:
                query.stop()
    except PySparkException as error:
        return error_class(error), None
    finally:
        spark.conf.set(SHUFFLE_PARTITIONS, before)
    reports = query.recentProgress
    sink = reports[-1]["sink"]["description"]  # FileSink[file:/...]
    return "", {
        "folder": folder_rows(spark, sink[sink.index("[") + 1 : -1]),
        "rows read per batch": [
            report["numInputRows"] for report in reports if report["numInputRows"]
        ],
        "state partitions": sorted(
            {
                state["numShufflePartitions"]
                for report in reports
                for state in report["stateOperators"]
            }
        ),
    }


def folder_rows(spark, folder: str) -> tuple[list, list]:
    """(columns, rows) of the JSON files Spark's file sink committed in ``folder``, columns in
    name order; ([], []) when it committed none. A folder Spark cannot read gives
    (["unreadable"], [its error's first line]).
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import AnalysisException

    try:
        written = spark.read.json(folder)
    except AnalysisException as error:
        if "UNABLE_TO_INFER_SCHEMA" in str(error):  # no file committed yet
            return [], []
        return ["unreadable"], [first_line(error)]
    except Py4JJavaError as error:  # e.g. a file sink log that does not start at batch 0
        return ["unreadable"], [first_line(error.java_exception)]
    columns = sorted(written.columns)
    rows = [plain(tuple(row[name] for name in columns)) for row in written.collect()]
    return columns, sort_rows(rows)


def first_line(error) -> str:
    """The error's first line, without the folder's path (it differs from run to run)."""
    return re.sub(r"file:\S*/(_spark_metadata/)", r"\1", str(error).strip().splitlines()[0])


def differences(restarted: dict, fresh: dict) -> list[str]:
    """What the restart did otherwise than the fresh start, in words; [] for nothing."""
    found = []
    if restarted["folder"][0] == ["unreadable"]:
        found.append(f"spark.read cannot read its output folder: {restarted['folder'][1][0]}")
    elif restarted["folder"] != fresh["folder"]:
        found.append(
            f"its output folder holds {restarted['folder']}, a fresh start's {fresh['folder']}"
        )
    for fact in ("rows read per batch", "state partitions"):
        if restarted[fact] != fresh[fact]:
            found.append(f"{fact}: {restarted[fact]}, a fresh start {fresh[fact]}")
    return found


def fresh_start(spark, change, place: Path) -> dict:
    """``change`` on the files in place/input, on a checkpoint of its own: what it did."""
    error, done = run_change(spark, change, place / "input", place / "output", place / "checkpoint")
    if error:
        raise RuntimeError(f"{change.__name__} failed from a fresh start: {error}")
    return done


def run_changes(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The exercise's run: start_counts on the files before, then every change twice (restarted
    from what the first run left, and from a fresh start). One row (change, outcome) each.

    The queries are the pristine file's, whatever the learner's says: in one session (watch
    mode, the tests of the shipped mistakes) the first run's observation serves every check.
    """
    key = (spark.sparkContext.applicationId, catalog.pristine(exercise).read_text(), repr(scenario))
    if key not in OBSERVED:
        OBSERVED[key] = observe_changes(spark, exercise, scenario, workdir)
    return OBSERVED[key]


def observe_changes(spark, exercise, scenario, workdir: Path) -> Observation:
    """run_changes' work, done once per session."""
    query_module = catalog.load_module(catalog.pristine(exercise), "pristine")
    before, after = scenario.batches["before"], scenario.batches["after"]
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    folder, restart, saved = workdir / "input", workdir / "restart", workdir / "first-run"
    # One clock for every file: the files after are newer than the files before.
    oldest = time.time() - 600
    write_batches(folder, before, first_number=0, first_mtime=oldest, name="payments")
    error, _ = run_change(
        spark, query_module.start_counts, folder, restart / "output", restart / "checkpoint"
    )
    if error:
        raise RuntimeError(f"start_counts failed on the files before: {error}")
    shutil.copytree(restart, saved)
    write_batches(folder, after, first_number=len(before), first_mtime=oldest, name="payments")
    outcomes, found = {}, {}
    for change in query_module.CHANGES:
        # Each restart starts from the checkpoint and folder the first run left, at their own
        # paths: the file sink's log names its files by absolute path.
        paths.remove_tree(restart, allow_outside=True)
        shutil.copytree(saved, restart)
        error, restarted = run_change(
            spark, change, folder, restart / "output", restart / "checkpoint"
        )
        if error:
            outcomes[change.__name__] = error
            continue
        fresh = workdir / "fresh" / change.__name__
        write_batches(fresh / "input", before, first_number=0, first_mtime=oldest, name="payments")
        fresh_start(spark, change, fresh)
        write_batches(
            fresh / "input", after, first_number=len(before), first_mtime=oldest, name="payments"
        )
        found[change.__name__] = differences(restarted, fresh_start(spark, change, fresh))
        outcomes[change.__name__] = DIFFERS if found[change.__name__] else RESUMES
    return Observation(
        ["change", "outcome"],
        [Batch(sort_rows([(name, outcome) for name, outcome in outcomes.items()]))],
        facts={
            OUTCOMES: outcomes,
            DIFFERENCES: {name: what for name, what in found.items() if what},
        },
    )


def outcomes(observation: Observation) -> dict:
    return observation.facts[OUTCOMES]


def is_error(outcome) -> bool:
    return isinstance(outcome, str) and outcome not in (RESUMES, DIFFERS)


def predicted(guess, change: str):
    return guess.get(change) if isinstance(guess, dict) else None


def predicted_as(guess, actual, change: str, wrong) -> bool:
    """Spark's outcome for ``change`` is not ``wrong``, and the prediction says ``wrong``."""
    return actual.get(change) != wrong and predicted(guess, change) == wrong


def window_length_resumes(guess, actual) -> bool:
    return predicted_as(guess, actual, "start_with_longer_windows", RESUMES)


def window_length_refused(guess, actual) -> bool:
    change = "start_with_longer_windows"
    return not is_error(actual.get(change)) and is_error(predicted(guess, change))


def watermark_fixed(guess, actual) -> bool:
    return predicted_as(guess, actual, "start_with_a_longer_watermark", DIFFERS)


def rename_resumes(guess, actual) -> bool:
    return predicted_as(guess, actual, "start_with_a_renamed_column", RESUMES)


def partitions_change(guess, actual) -> bool:
    return predicted_as(guess, actual, "start_on_three_partitions", RESUMES)


def new_folder_complete(guess, actual) -> bool:
    return predicted_as(guess, actual, "start_into_another_folder", RESUMES)


def new_aggregate_allowed(guess, actual) -> bool:
    change = "start_with_a_total"
    return is_error(actual.get(change)) and predicted(guess, change) in (RESUMES, DIFFERS)


def any_change_refused(guess, actual) -> bool:
    """A change Spark ran on the old checkpoint, ending as a fresh start did, is predicted
    refused."""
    return isinstance(guess, dict) and any(
        outcome == RESUMES and is_error(guess.get(change)) for change, outcome in actual.items()
    )


EXERCISE = Exercise(
    title="What an old checkpoint survives",
    kind="predict",
    practises="a restart on an old checkpoint after a code change: what runs on, what runs "
    "otherwise than a fresh start, what the state's schema check refuses",
    function="start_counts",
    schemas=PRISTINE.SCHEMA,
    run=run_changes,
    predicted=outcomes,
    why=(
        "A checkpoint holds every batch's offsets and commits, the state, that state's schema "
        "and a few settings such as spark.sql.shuffle.partitions; a restart plans the new code "
        "and refuses it only when the state's key or value schema no longer fits (another "
        "grouping column, another aggregate). Everything else runs on, which is not the same "
        "as right: a 2-minute window has the key type of a 1-minute one, so the old windows go "
        "on beside the new ones; a new sink folder gets only what closes after the restart; a "
        "renamed column leaves the folder with two schemas; the shuffle partitions stay the "
        "checkpoint's. A filter, a new watermark delay (counted from the watermark already "
        "reached) and another maxFilesPerTrigger take effect from the next batch, as they "
        "would from a fresh start here. For any other change, start again on a new checkpoint."
    ),
    hints=[
        "What does a checkpoint remember of the query that wrote it? Its offsets and commits, "
        "the state (one entry per state key, here per window, holding the aggregates), that "
        "state's schema, and some settings. A restart plans the new code and goes on from what "
        "was remembered: which parts of the new plan must match it, and which can the restart "
        "not tell apart?",
        "lesson 16, `start_by_user` (part 4, 'An incompatible change') on the old checkpoint "
        "fails with STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE; lesson 16, `start_filtered` runs on. "
        "lesson 16, `build_window_counts` shows what the state's key is made of.",
        "For each change, write the state's key schema and value schema before and after (the "
        "window column is a struct of two timestamps; each aggregate is a value column). If "
        "either changed, Spark refuses it: name which. If neither did, it runs: then ask what a "
        "fresh start of the changed query would have done with the same files (which windows, "
        "in which folder, under which column names, in how many partitions) and whether the "
        "restart, carrying what the old run left, can end the same.",
    ],
    # A predict exercise needs no hidden scenario: the query and its input are in the file.
    scenarios=[
        Scenario(
            {
                "before": payments(PRISTINE.PAYMENTS_BEFORE),
                "after": payments(PRISTINE.PAYMENTS_AFTER),
            }
        )
    ],
    mistakes=[
        Mistake(
            "any_change_refused",
            "Spark ran a change you predicted it refuses, and it ended as a fresh start of the "
            "changed query did. Spark refuses a restart only when the state it kept no longer "
            "fits the new query (another key or value schema); a change that leaves both as "
            "they were runs on the old checkpoint.",
            when=any_change_refused,
        ),
        Mistake(
            "window_length_resumes",
            "Spark ran the 2-minute windows on the old checkpoint, but the folder ended up "
            "otherwise than a fresh start's: the state's key is the window, a struct (start, "
            "end) of timestamps whatever its length, so the schema check passes, and the "
            "1-minute windows already in the state go on beside the new 2-minute ones.",
            when=window_length_resumes,
        ),
        Mistake(
            "window_length_refused",
            "Spark did not refuse the 2-minute windows: the state's key is the window, a struct "
            "(start, end) of timestamps, and its schema is the same for any length. The schema "
            "check passes; the 1-minute windows already in the state go on beside the new "
            "2-minute ones, so the folder ends up otherwise than a fresh start's.",
            when=window_length_refused,
        ),
        Mistake(
            "watermark_fixed",
            "The restart with a 2-minute watermark ended as a fresh start with it did. The "
            "checkpoint keeps the watermark reached so far, which never goes back; from there on "
            "each batch's watermark is the latest event time minus the NEW delay, once that is "
            "higher. No payment here falls between the two delays, so nothing differs.",
            when=watermark_fixed,
        ),
        Mistake(
            "rename_resumes",
            "Spark ran the renamed column on the old checkpoint, but its folder ended up "
            "otherwise than a fresh start's: the windows written before the restart have "
            "records, those after have payments, and spark.read gives both columns, each null "
            "where the other is set. The state holds no output column names, so Spark has "
            "nothing to refuse; the sink takes whatever shape it is given.",
            when=rename_resumes,
        ),
        Mistake(
            "partitions_change",
            "The restart did not use 3 shuffle partitions: its state stayed in the checkpoint's 1 "
            "partition, where a fresh start used 3. The checkpoint records "
            "spark.sql.shuffle.partitions (offsets/ holds it with each batch) and a restart "
            "takes it from there, whatever the session says: the state is split that way on "
            "disk. To change it, start on a new checkpoint (or, for RocksDB state, use Spark "
            "4.2's experimental offline repartition: docs/PERFORMANCE.md).",
            when=partitions_change,
        ),
        Mistake(
            "new_folder_complete",
            "The new folder did not end as a fresh start's: the restart goes on from the batch "
            "after the last commit, so the windows earlier batches closed stay in the old "
            "folder, and the file sink's log in the new one starts at that batch id (in Spark "
            "4.2, spark.read then fails on the folder: _spark_metadata/0 doesn't exist).",
            when=new_folder_complete,
        ),
        Mistake(
            "new_aggregate_allowed",
            "Spark refused the total: the state keeps each window's aggregates as its value, and "
            "a new aggregate changes the value's schema. Spark compares the schema in the "
            "checkpoint with the new one at the first batch and stops the query.",
            when=new_aggregate_allowed,
        ),
    ],
)
