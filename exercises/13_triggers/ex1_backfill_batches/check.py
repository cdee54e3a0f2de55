import threading
import time

from common import paths
from common.schemas import TRANSACTION_SCHEMA
from practice import catalog
from practice.observe import Batch, Observation, plain, sort_rows
from practice.scenarios import transaction
from practice.spec import Exercise, Mistake, Scenario
from teaching.microbatch import write_batches

RUNS_FACT = "micro-batches in each run"


def payments(file_number: int, count: int) -> list[dict]:
    """``count`` payments for one file: ids F<file>-<n>, one second apart."""
    return [
        transaction(f"F{file_number}-{n}", f"U{n}", 10.0 * n, f"10:{file_number:02d}:{n:02d}")
        for n in range(1, count + 1)
    ]


def run_two_backfills(spark, exercise, module, scenario, workdir) -> Observation:
    """Each run of the scenario (``{run name: files}``) writes its files, then starts the
    pristine file's start_backfill on the same checkpoint and waits until it stops.

    One Batch per micro-batch, over both runs (its rows: the transaction ids it read); the
    fact RUNS_FACT says how many micro-batches each run had.
    """
    query_module = catalog.load_module(catalog.pristine(exercise), "pristine")
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    folder = workdir / "input"
    folder.mkdir(parents=True)
    first_mtime = time.time() - 600
    received = {}
    lock = threading.Lock()

    def keep(batch_df, batch_id: int) -> None:
        rows = [plain((row.transaction_id,)) for row in batch_df.collect()]
        with lock:
            received[batch_id] = rows

    batches_per_run = []
    written = 0
    for files in scenario.batches.values():
        write_batches(folder, files, first_number=written, first_mtime=first_mtime, name="payments")
        written += len(files)
        before = len(received)
        payments_df = query_module.read_payments(spark, folder)
        query = query_module.start_backfill(payments_df, workdir / "checkpoint", keep)
        try:
            finished = query.awaitTermination(120)
        finally:
            if query.isActive:
                query.stop()
        if not finished:
            raise TimeoutError("the availableNow query did not stop within 120 s")
        batches_per_run.append(len(received) - before)
    batches = [Batch(sort_rows(received[batch_id])) for batch_id in sorted(received)]
    return Observation(["transaction_id"], batches, facts={RUNS_FACT: batches_per_run})


def payments_per_batch(observation: Observation) -> dict:
    """{run name: the number of payments each of its micro-batches read}."""
    counts = [len(batch.rows) for batch in observation.batches]
    first_run = observation.facts[RUNS_FACT][0]
    return {"first run": counts[:first_run], "second run": counts[first_run:]}


def runs_of(guess, actual) -> dict[str, list] | None:
    """The guess as {run name: payments per micro-batch}, for Spark's runs; None when it is
    not so shaped."""
    if not isinstance(guess, dict):
        return None
    runs = {}
    for run in actual:
        counts = guess.get(run)
        if not isinstance(counts, list) or not all(isinstance(n, (int, float)) for n in counts):
            return None
        runs[run] = counts
    return runs


def one_batch_per_run(guess, actual) -> bool:
    """A run that Spark split into several micro-batches is guessed as one batch of all its
    payments (trigger(once=True)'s answer)."""
    runs = runs_of(guess, actual)
    if runs is None:
        return False
    return any(len(counts) > 1 and runs[run] == [sum(counts)] for run, counts in actual.items())


def files_per_trigger() -> int:
    """The pristine file's MAX_FILES_PER_TRIGGER (the query the learner predicts)."""
    return catalog.load_module(catalog.pristine(EXERCISE), "pristine").MAX_FILES_PER_TRIGGER


def batches_of_limit_rows(guess, actual) -> bool:
    """A run's payments are all there, but in batches of at most MAX_FILES_PER_TRIGGER
    payments, where Spark's batches held more: the limit taken for rows."""
    limit = files_per_trigger()
    runs = runs_of(guess, actual)
    if runs is None:
        return False
    return any(
        max(counts, default=0) > limit
        and sum(runs[run]) == sum(counts)
        and all(n <= limit for n in runs[run])
        for run, counts in actual.items()
    )


def rereads_first_run(guess, actual) -> bool:
    """The second run's guessed payments add up to both runs' payments: the files of the first
    run read again."""
    runs = runs_of(guess, actual)
    if runs is None or len(actual) < 2:
        return False
    first, second = list(actual)[:2]
    everything = sum(actual[first]) + sum(actual[second])
    return sum(runs[second]) == everything


EXERCISE = Exercise(
    title="A backfill in batches",
    kind="predict",
    practises="availableNow: what is there, in batches that respect maxFilesPerTrigger, then stop",
    function="start_backfill",
    schemas=TRANSACTION_SCHEMA,
    run=run_two_backfills,
    predicted=payments_per_batch,
    why=(
        "trigger(availableNow=True) fixes the end when the query starts: it processes what the "
        "source holds then, and stops. It still works in micro-batches that respect the "
        "source's limits (maxFilesPerTrigger counts files, not rows), unlike the deprecated "
        "once trigger, which reads everything in one batch. The file source records in the "
        "checkpoint which files it has read, so a second run on the same checkpoint reads "
        "only the files that came since: a scheduled backfill that picks up where it stopped."
    ),
    hints=[
        "This trigger reads what is in the folder when the query starts, then stops. Does it read "
        "it all in one micro-batch, or in as many as the source's limit per batch needs? What "
        "does that limit count, files or rows? And on the second run, on the same checkpoint, "
        "which files are there to read?",
        "lesson 13, `start_available_now` and lesson 13, `start_once`: their docstrings, and the "
        "docstring's table, where one reads the same rows in several batches and the other in "
        "one. lesson 03, `read_transactions`: the limit of new files per micro-batch, and, in its "
        "comment, the checkpoint: the writer's, which remembers the files already read.",
        "A method: list each run's new files, oldest first, with their payment counts. Cut the "
        "list into groups of MAX_FILES_PER_TRIGGER files, the last group maybe smaller: each "
        "group is one micro-batch, and its payments are its files' added up. The second run's "
        "list holds only the files that arrived after the first run.",
    ],
    scenarios=[
        # First run: five files, 3, 1, 2, 4 and 1 payments. Second run: three new files.
        Scenario(
            {
                "first run": [payments(n, count) for n, count in enumerate([3, 1, 2, 4, 1], 1)],
                "second run": [payments(n, count) for n, count in enumerate([2, 1, 2], 6)],
            }
        ),
    ],
    mistakes=[
        Mistake(
            "one_batch_for_all",
            "One batch of everything: that is the deprecated trigger(once=True), which ignores "
            "the source's limits. availableNow reads the same files, but in batches of at most "
            "MAX_FILES_PER_TRIGGER files.",
            when=one_batch_per_run,
        ),
        Mistake(
            "limit_counts_rows",
            "Two payments per batch: maxFilesPerTrigger limits the number of FILES per "
            "micro-batch, not rows. A batch reads two whole files, however many lines they hold.",
            when=batches_of_limit_rows,
        ),
        Mistake(
            "rereads_old_files",
            "The second run reads the old files again: the checkpoint lists every file already "
            "read, so a query restarted on it reads only the files that arrived since.",
            when=rereads_first_run,
        ),
    ],
)
