"""Check a learner's foreachBatch sink: run it in a real query and read its target after each batch.

The sink exercises (lessons 10 and 11) ask for a function that writes one micro-batch somewhere:
a Delta table, a folder of files. Their check runs it as a job would: each batch of the scenario
is one JSON file, the file source reads one file per trigger, the learner's function runs in
``foreachBatch`` and ``availableNow`` ends the query when the files are read. After each batch
the check reads the target; the :class:`Observation` has one :class:`Batch` per micro-batch,
the target's rows after it.

A retry tests idempotency without killing anything: one batch is written twice in a row, as
Spark does after a crash between the sink's write and the batch's commit. How much the second
write changed is a fact the check compares (it must be nothing). The second write is made as a
restarted process would make it: by the learner's function from a fresh import of their file
(whatever it kept in memory is gone), with the same rows in another order and other partitions.

The check file says what differs per exercise, as small functions: how to call the learner's
function (``write(batch, batch_id)``), how to read the target (``read_target() ->
Snapshot``), and how to measure a retry's changes (:class:`Retry`). A one-query exercise calls
:func:`run_sink`; one that needs more queries builds them from :class:`SinkRun` and
:func:`run_query`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from delta.tables import DeltaTable

from common import paths
from practice.observe import Batch, Observation, plain, scenario_files, sort_rows
from practice.spec import Exercise, Scenario
from practice.writes import SimulatedCrash, WriteCounter, counting_writes
from teaching.microbatch import stream_batches

QUERY_TIMEOUT_SECONDS = 120  # a scenario of a few small batches ends far sooner
RETRY_PARTITIONS = 3  # a replayed batch's rows, in other partitions than the first time's


@dataclass
class Snapshot:
    """What the target holds at one moment: its columns, and its rows (sorted plain values)."""

    columns: list
    rows: list


@dataclass
class Retry:
    """Write batch ``batch_id`` twice in a row, and keep how much the second write changed.

    ``measure(rows before, rows after)`` is that change, kept as the fact named ``fact``.
    ``crashed_batch``: a batch whose first write is stopped between two of the sink's writes,
    as a crash would stop it (``practice.writes``), then written again as a restarted process
    writes it; the target after it is compared as every batch's is.
    """

    batch_id: int
    fact: str
    measure: Callable[[list, list], int]
    crashed_batch: int | None = None

    def damaged_by_crash(self, mine: Observation, wanted: Observation) -> bool:
        """A Mistake's ``when``: the target is right after every batch before the crashed one,
        and not after it."""
        number = self.crashed_batch
        if number is None or min(len(mine.batches), len(wanted.batches)) <= number:
            return False
        pairs = zip(mine.batches[:number], wanted.batches[:number], strict=True)
        if any(got.rows != want.rows for got, want in pairs):
            return False
        return mine.batches[number].rows != wanted.batches[number].rows

    def changed_target(self, mine: Observation, wanted: Observation) -> bool:
        """A Mistake's ``when``: the second write of the batch changed the learner's target."""
        return mine.facts.get(self.fact, 0) > 0


def rows_changed(before: list, after: list) -> int:
    """Rows gone and rows added between two snapshots' rows, each copy counted."""
    old = Counter(before)
    new = Counter(after)
    return (old - new).total() + (new - old).total()


def rows_with_copies(rows) -> list:
    """Each distinct row once, with its number of copies as a last column; sorted.

    A target that may hold a row twice shows it as such, and a retry's change is a count.
    """
    copies = Counter(rows)
    return sort_rows([(*row, count) for row, count in copies.items()])


def copy_count(rows: list) -> int:
    """How many copies a rows_with_copies result holds in all."""
    return sum(row[-1] for row in rows)


def copies_changed(before: list, after: list) -> int:
    """Copies added or removed between two rows_with_copies results."""
    old = {row[:-1]: row[-1] for row in before}
    new = {row[:-1]: row[-1] for row in after}
    return sum(abs(new.get(key, 0) - old.get(key, 0)) for key in old.keys() | new.keys())


def copies_added(before: list, after: list) -> int:
    """Copies after less copies before, between two rows_with_copies results."""
    return copy_count(after) - copy_count(before)


def read_delta_table(spark, table: Path) -> Snapshot:
    """The Delta table's columns and sorted plain rows; no columns and no rows before it exists."""
    if not DeltaTable.isDeltaTable(spark, paths.uri(table)):
        return Snapshot([], [])
    frame = spark.read.format("delta").load(paths.uri(table))
    return Snapshot(list(frame.columns), sort_rows([plain(tuple(row)) for row in frame.collect()]))


@dataclass
class SinkRun:
    """The foreachBatch function of a check's queries, and what it saw.

    ``sink`` calls ``write`` (the learner's function), then reads the target with
    ``read_target`` into ``snapshots``, one a batch. A failure of the learner's function is
    kept, not raised: raised inside foreachBatch, Spark would fail the query and log its whole
    trace. The batches after it are skipped; :meth:`observation` raises it once the queries
    have ended.
    """

    write: Callable  # write(batch, batch_id): the learner's function on the check's target
    read_target: Callable[[], Snapshot]
    retry: Retry | None = None
    # () -> write, from a fresh import of the learner's file: how a restarted process writes.
    rewrite: Callable[[], Callable] | None = None
    target: Path | None = None  # where the sink writes: its file writes there are counted
    previous_writes: int = 0  # how many writes the sink made for the batch before
    snapshots: list[Snapshot] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    failures: list[Exception] = field(default_factory=list)

    def sink(self, batch, batch_id: int) -> None:
        if self.failures:
            return  # the learner's function failed on an earlier batch: the run is over
        try:
            if self.retry is not None and batch_id == self.retry.crashed_batch:
                self.write_crashed(batch, batch_id)
            else:
                self.write_counted(batch, batch_id)
            if self.retry is not None and batch_id == self.retry.batch_id:
                self.write_again(batch, batch_id)
        except Exception as error:
            self.failures.append(error)
            return
        self.snapshots.append(self.read_target())

    def write_counted(self, batch, batch_id: int) -> None:
        """The learner's write, its writes counted (for the crash of a later batch)."""
        counter = WriteCounter(self.target, lambda number: None)
        with counting_writes(counter):
            self.write(batch, batch_id)
        self.previous_writes = counter.count

    def write_crashed(self, batch, batch_id: int) -> None:
        """The learner's write stopped after the write numbered one less than the previous
        batch's count (at least the first): between the data and what the sink writes after
        them. Then the batch again, as a restarted process writes it."""
        stop_at = max(1, self.previous_writes - 1)

        def crash(number: int) -> None:
            if number == stop_at:
                raise SimulatedCrash()

        try:
            with counting_writes(WriteCounter(self.target, crash)):
                self.write(batch, batch_id)
        except SimulatedCrash:
            pass
        write = self.rewrite() if self.rewrite is not None else self.write
        write(replayed(batch), batch_id)

    def write_again(self, batch, batch_id: int) -> None:
        """The retry: the same batch id and rows again, as a restarted process writes them (a
        fresh import of the learner's file, the rows in another order), and what that
        changed as a fact."""
        before = self.read_target().rows
        write = self.rewrite() if self.rewrite is not None else self.write
        write(replayed(batch), batch_id)
        after = self.read_target().rows
        self.facts[self.retry.fact] = self.retry.measure(before, after)

    def observation(self) -> Observation:
        """The target after each batch, and the facts; or the learner's failure, raised."""
        from practice.checking import NotStarted  # not at the top: checking loads check files

        if self.failures and isinstance(self.failures[0], NotImplementedError):
            raise NotStarted()
        if self.failures:
            raise self.failures[0]  # the learner's error, with the line of their file it came from
        # The columns of the last snapshot that has any: a table may not exist after batch 0.
        columns = next(
            (snapshot.columns for snapshot in reversed(self.snapshots) if snapshot.columns), []
        )
        batches = [Batch(snapshot.rows) for snapshot in self.snapshots]
        return Observation(columns, batches, facts=self.facts)


def replayed(batch):
    """The batch's rows as a replay may bring them: in reverse order, in RETRY_PARTITIONS
    partitions. An answer that leans on the order of the rows (the first alert names a file)
    writes something else the second time."""
    from pyspark.sql import functions as F

    order = "_course_arrival"
    numbered = batch.withColumn(order, F.monotonically_increasing_id())
    reverse = F.col(order).desc()
    return (
        numbered.repartitionByRange(RETRY_PARTITIONS, reverse)
        .sortWithinPartitions(reverse)
        .drop(order)
    )


def reimported(module):
    """The learner's module imported again from its file, as a restarted process has it: a
    guard it kept in memory (a set of batch ids it has seen) is empty again."""
    from practice.catalog import load_module

    return load_module(Path(module.__file__), "restarted")


def start_afresh(workdir: Path) -> None:
    """Remove what an earlier check left in ``workdir``: every run starts from nothing."""
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)


def run_query(spark, source: Path, schema, checkpoint: Path, sink: Callable) -> None:
    """``source``'s files through ``sink`` in foreachBatch, one file per batch, until read."""
    query = (
        stream_batches(spark, source, schema)
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(QUERY_TIMEOUT_SECONDS)
    finally:
        if query.isActive:
            query.stop()


def run_sink(
    spark,
    exercise: Exercise,
    scenario: Scenario,
    workdir: Path,
    write: Callable,
    read_target: Callable[[], Snapshot],
    *,
    retry: Retry | None = None,
    rewrite: Callable[[], Callable] | None = None,
    target: Path | None = None,
) -> Observation:
    """The scenario through ``write`` in one query: the target after each batch.

    ``write(batch, batch_id)`` calls the learner's function on a target under ``workdir``;
    ``read_target()`` reads that target; ``rewrite()`` gives ``write`` from a fresh import of
    the learner's file, for the retry; ``target`` is where the sink writes. ``workdir`` is
    emptied first.
    """
    start_afresh(workdir)
    source = scenario_files(workdir / "input", scenario.batches, scenario)
    sink_run = SinkRun(write, read_target, retry, rewrite, target)
    run_query(spark, source, exercise.schema_of("input"), workdir / "checkpoint", sink_run.sink)
    return sink_run.observation()
