"""What an exercise's check says: its scenarios, what to compare, its hints and known mistakes.

Each exercise has a folder, ``exercises/<lesson>/ex<N>_<name>/`` (see ``practice.catalog``),
whose ``check.py`` defines ``EXERCISE = Exercise(...)``. Beside it: ``exercise.py``, the file
``exercises start`` copies to ``my_exercises/<lesson>/ex<N>_<name>.py``; ``solution.py``, the
reference answer; the known mistakes and other right answers as diffs against it
(``mistakes/``, ``alternatives/``); and ``expected.json``, what Spark really emits for each
scenario (``python -m practice.record ID`` writes it from the reference solution; review its
diff).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

KINDS = ("build", "predict", "fix", "survive")


@dataclass
class Scenario:
    """A finite input, one inner list of records per micro-batch.

    ``batches`` is that list for a query with one input; for several inputs (a join), a dict
    ``{input name: batches}`` in the order the query's function takes them.
    ``hidden`` scenarios are never shown: other ids, another order, so a hard-coded answer
    fails.
    ``scrambled`` (the default for a hidden scenario) reads it as a job on real data would: each
    batch's rows in reverse order, split into several input partitions, and several shuffle
    partitions (``SCRAMBLED_SETTINGS``), so an answer that leans on the order rows arrive in, or
    on one partition, gets another result.
    ``settings``: Spark settings for this scenario's run only (on top of the exercise's), e.g.
    a session time zone other than UTC.
    """

    batches: list | dict
    hidden: bool = False
    scrambled: bool | None = None  # None: as hidden
    settings: dict = field(default_factory=dict)

    @property
    def reads_scrambled(self) -> bool:
        return self.hidden if self.scrambled is None else self.scrambled


# A scrambled scenario's Spark settings: a JSON Lines file is split every 256 bytes (about two
# records), and a shuffle has three partitions (the exercises' session has one).
SCRAMBLED_SETTINGS = {
    "spark.sql.files.maxPartitionBytes": "256",
    "spark.sql.shuffle.partitions": "3",
}


@dataclass
class Mistake:
    """A known wrong answer, shipped as ``mistakes/<name>.diff`` in the exercise's folder.

    The check recognises it by what it does, not by its file: by Spark's error (``error``, a
    regular expression searched in the error's text), or by what it emitted (``when``,
    given the learner's observation and the expected one), or by the learner's source
    (``source``, a regular expression). Then it prints ``hint``, which names the mistake.
    In a predict exercise ``when`` gets the learner's prediction and Spark's answer instead,
    both normalised (lists of rows sorted, values as the check shows them).
    """

    name: str
    hint: str
    error: str | None = None
    when: Callable | None = None
    source: str | None = None


@dataclass
class Exercise:
    """One exercise's check.

    kind: build (write the query), predict (fill in what Spark emits), fix (make a given
    query right) or survive (a query killed mid-scenario must lose and duplicate nothing).
    """

    title: str
    kind: str
    practises: str  # what the exercise practises, one line: the lesson's concept
    hints: list[str]
    scenarios: list[Scenario]
    schemas: object  # a StructType, or {input name: StructType} for several inputs
    # Shown after a pass: why the right answer works, the concept behind it (2-4 sentences),
    # not a restatement of the task.
    why: str = ""
    function: str = ""  # the function the learner writes (build, fix) or reads (predict)
    output_mode: str = "append"
    # How to get the query from the learner's module: default ``getattr(module, function)``.
    # E.g. ``lambda module: lambda df: build_sessions(df, module.Processor())``.
    query: Callable | None = None
    # predict: the name the learner fills in, and how a run becomes the value they predict
    # (default: the rows of each micro-batch).
    prediction: str = "PREDICTION"
    predicted: Callable | None = None
    # Spark settings for the check's queries (e.g. the RocksDB state store transformWithState
    # needs), set around each run and restored after it.
    settings: dict = field(default_factory=dict)
    check_dropped: bool = True  # compare the rows each batch's watermark dropped
    # Compare each batch's watermark: False where the exercise is not about watermarks, so a
    # harmless one a learner adds (to a stateless query, say) is no failure.
    check_watermark: bool = True
    check_state: bool = False  # compare the state rows left after the last batch
    mirrors: str = ""  # "07_watermarking:build_x": the lesson function the exercise mirrors
    mistakes: list[Mistake] = field(default_factory=list)
    # survive (or anything the standard run does not cover): run(spark, exercise, module,
    # scenario, workdir) -> Observation.
    run: Callable | None = None
    # The check runs its queries on a real Kafka broker (its run finds or starts one); the tests
    # give it the test run's broker.
    kafka: bool = False
    # Filled in by the catalog from the check file's place.
    lesson: str = ""
    stem: str = ""
    check_file: Path | None = None

    @property
    def id(self) -> str:
        """'07.1': the lesson's number and the exercise's."""
        return f"{self.lesson[:2]}.{self.stem.split('_')[0].removeprefix('ex')}"

    @property
    def relative(self) -> Path:
        """The learner's file's path under my_exercises/."""
        return Path(self.lesson) / f"{self.stem}.py"

    def input_names(self) -> list[str]:
        if isinstance(self.schemas, dict):
            return list(self.schemas)
        return ["input"]

    def schema_of(self, name: str):
        if isinstance(self.schemas, dict):
            return self.schemas[name]
        return self.schemas
