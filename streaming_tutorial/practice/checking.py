"""Check a learner's exercise file: run it on the scenarios, compare, explain what is wrong.

The verdict is one of: passed, failing (with a table of what each micro-batch should have
emitted against what it did, and a hint when the mistake is a known one), or not started
(the file is still the pristine one, or its body still raises the TODO; a fix exercise's
pristine file is run all the same, so the learner sees its symptom first). An ordinary
mistake never shows a traceback: a Spark error the course explains gets its targeted hint,
another Spark error its first line, a Python error the line of the learner's file it
happened on.
"""

from __future__ import annotations

import re
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lesson15_state_demos import session_conf

from infra import errors
from practice import catalog
from practice.observe import Batch, Observation, observe, plain, sort_rows
from practice.spec import SCRAMBLED_SETTINGS, Exercise, Scenario
from teaching.demos import STREAM_FAILED, jvm_logs_off
from teaching.narration import first_line

PASSED, FAILING, NOT_STARTED = "passed", "failing", "not started"
UNTOUCHED = "the file is still the one exercises start copied"

# Spark errors the course explains, and what to do about them (searched in the error's text).
KNOWN_ERRORS = [
    (
        r"Append output mode not supported when there are streaming aggregations"
        r"|STREAMING_OUTPUT_MODE.*append.*aggregat",
        "Append mode sends each aggregate once, when it is final; without a watermark on the "
        "event-time column Spark never knows that a window is final (lesson 07). Add "
        "withWatermark(...) before the groupBy.",
    ),
    (
        r"(LeftOuter|RightOuter|FullOuter|LeftSemi).*join.*not supported without a watermark"
        r"|Stream-stream .*join.*watermark",
        "An outer (or semi) stream-stream join must know when a row can no longer match: give "
        "both sides a watermark and the join a time bound on event time (lesson 09).",
    ),
    (
        r"STATE_STORE_.*SCHEMA|StateSchemaNotCompatible|schema.*not compatible",
        "The checkpoint holds state of another shape than the query now keeps (lesson 15). "
        "The check starts every run afresh, so this comes from two stateful operators that "
        "disagree: see your keys and state columns.",
    ),
    (
        r"Non-time-based windows are not supported",
        "A window over a stream needs an event-time column: window(<timestamp column>, ...) "
        "(lesson 06).",
    ),
    (
        r"STREAMING_OUTPUT_MODE|Complete output mode not supported|Invalid streaming output mode",
        "This output mode does not fit this query (lesson 02): session windows and "
        "stream-stream joins refuse update; complete needs an aggregation.",
    ),
]


class NotStarted(Exception):
    """The learner's function still raises the TODO (NotImplementedError)."""


@dataclass
class Verdict:
    exercise: Exercise
    status: str
    report: str = ""  # what to show: the failing batches, or the error in a line
    hint: str = ""  # a known mistake's or a known error's hint
    mistake: str = ""  # the name of the known mistake it matched
    observations: list = field(default_factory=list)
    # A fix exercise's untouched file: ``report`` is what its query as given gets wrong.
    symptom: bool = False

    @property
    def passed(self) -> bool:
        return self.status == PASSED


def check(
    spark,
    exercise: Exercise,
    path: Path,
    workdir: Path,
    *,
    pristine_ok: bool = False,
    visible_only: bool = False,
) -> Verdict:
    """Check the learner's file ``path`` (or a solution, or a shipped mistake).

    ``visible_only``: the scenarios a learner sees, not the hidden ones (the suite's quick
    check of a reference solution; its lane runs them all)."""
    if not path.exists():
        return Verdict(
            exercise, NOT_STARTED, f"{path} does not exist: python course.py exercises start"
        )
    if not pristine_ok and catalog.untouched(exercise, path):
        if exercise.kind == "fix":
            return symptom(spark, exercise, path, workdir)
        return Verdict(exercise, NOT_STARTED, UNTOUCHED)
    try:
        module = catalog.load_module(path)
    except NotImplementedError:
        return Verdict(exercise, NOT_STARTED, "the file still raises its TODO")
    except Exception as error:  # a SyntaxError, an import of a name that does not exist...
        return Verdict(exercise, FAILING, python_error(error, path))
    source = path.read_text()
    if exercise.kind == "predict" and getattr(module, exercise.prediction, ...) is ...:
        return Verdict(exercise, NOT_STARTED, f"{exercise.prediction} is still ... (the TODO)")
    expected = catalog.expected(exercise)
    observed = []
    for number, (scenario, wanted) in enumerate(zip(exercise.scenarios, expected, strict=True)):
        if visible_only and scenario.hidden:
            continue
        label = "the hidden scenario" if scenario.hidden else f"scenario {number + 1}"
        try:
            # A refused or failing query logs its stack traces at ERROR (a hundred lines and
            # more) before the check explains it in a line: the JVM's log is off meanwhile.
            with jvm_logs_off():
                mine = run_scenario(
                    spark, exercise, module, scenario, workdir / f"scenario-{number}"
                )
        except NotStarted:
            return Verdict(exercise, NOT_STARTED, "the function still raises its TODO")
        except Exception as error:
            if todo_in_worker(error):
                return Verdict(exercise, NOT_STARTED, "the function still raises its TODO")
            return error_verdict(exercise, error, path, source)
        observed.append(mine)
        if exercise.kind == "predict":
            # A predict mistake is recognised by the prediction: when(guess, Spark's answer).
            problems = compare_prediction(exercise, module, mine)
            wanted_then = predicted_value(exercise, mine)
            mine_then = prediction_of(exercise, module, wanted_then)
        else:
            problems = compare(exercise, wanted, mine)
            mine_then, wanted_then = mine, wanted
        if problems:
            mistake = recognise(exercise, mine_then, wanted_then, source)
            report = f"In {label}:\n{problems}"
            if mistake:
                return Verdict(exercise, FAILING, report, mistake.hint, mistake.name, observed)
            return Verdict(exercise, FAILING, report, "", "", observed)
    return Verdict(exercise, PASSED, "", "", "", observed)


def symptom(spark, exercise: Exercise, path: Path, workdir: Path) -> Verdict:
    """A fix exercise not started yet: its query as given, run and compared, so the learner
    sees what is wrong before changing anything. Still "not started", and without the known
    mistake's hint (the broken query is one of them: its hint would give the fix away)."""
    run = check(spark, exercise, path, workdir, pristine_ok=True)
    if run.status != FAILING:
        return Verdict(exercise, NOT_STARTED, UNTOUCHED)
    return Verdict(exercise, NOT_STARTED, run.report, observations=run.observations, symptom=True)


def run_scenario(
    spark, exercise: Exercise, module, scenario: Scenario, workdir: Path
) -> Observation:
    """One scenario's run of the learner's module (the exercise's own ``run``, or the standard
    one), with the exercise's Spark settings (and a scrambled scenario's, and its own)."""
    settings = dict(exercise.settings)
    if scenario.reads_scrambled:
        settings.update(SCRAMBLED_SETTINGS)
    settings.update(scenario.settings)
    with session_conf(spark, settings):
        if exercise.run is not None:
            return exercise.run(spark, exercise, module, scenario, workdir)
        return standard_run(spark, exercise, module, scenario, workdir)


def standard_run(spark, exercise: Exercise, module, scenario: Scenario, workdir: Path):
    """The learner's query function on the scenario, one micro-batch at a time."""
    if exercise.kind == "predict":
        # The query the learner predicts is the pristine file's: editing it changes nothing.
        module_for_query = catalog.load_module(catalog.pristine(exercise), "pristine")
    else:
        module_for_query = module
    build = build_function(exercise, module_for_query)

    def guarded(*streams):
        try:
            return build(*streams)
        except NotImplementedError as error:
            raise NotStarted() from error

    return observe(spark, exercise, guarded, scenario, workdir)


def build_function(exercise: Exercise, module):
    if exercise.query is not None:
        return exercise.query(module)
    return getattr(module, exercise.function)


def compare(exercise: Exercise, wanted: Observation, mine: Observation) -> str:
    """What differs, as text; '' when nothing does."""
    if mine.columns != wanted.columns:
        return f"  the columns should be {wanted.columns}, yours are {mine.columns}"
    lines = [f"  Rows are ({', '.join(wanted.columns)}); - expected but missing, + not expected."]
    count = max(len(wanted.batches), len(mine.batches))
    for number in range(count):
        want = wanted.batches[number] if number < len(wanted.batches) else None
        got = mine.batches[number] if number < len(mine.batches) else None
        if batch_differs(exercise, want, got):
            lines.extend(batch_table(number, want, got, exercise.check_dropped))
    if exercise.check_state and wanted.state_rows != mine.state_rows:
        lines.append(
            f"  state rows left after the last batch: expected {wanted.state_rows}, "
            f"yours {mine.state_rows}"
        )
    for name, value in wanted.facts.items():
        if mine.facts.get(name) != value:
            lines.append(f"  {name}: expected {value}, yours {mine.facts.get(name)}")
    if len(lines) == 1:
        return ""
    if only_watermarks_differ(wanted, mine):
        lines.insert(
            1,
            "  Every batch's rows are right: only the watermarks (or the rows they "
            "dropped) differ.",
        )
    return "\n".join(lines)


def only_watermarks_differ(wanted: Observation, mine: Observation) -> bool:
    """The same batches with the same rows, and some watermark or dropped count not the same."""
    if len(wanted.batches) != len(mine.batches):
        return False
    pairs = list(zip(wanted.batches, mine.batches, strict=True))
    if any(want.rows != got.rows for want, got in pairs):
        return False
    return any(
        (want.watermark, want.dropped) != (got.watermark, got.dropped) for want, got in pairs
    )


def batch_differs(exercise: Exercise, want: Batch | None, got: Batch | None) -> bool:
    if want is None or got is None:
        return True
    if want.rows != got.rows:
        return True
    if exercise.check_watermark and want.watermark != got.watermark:
        return True
    return exercise.check_watermark and exercise.check_dropped and want.dropped != got.dropped


def batch_table(
    number: int, want: Batch | None, got: Batch | None, show_dropped: bool
) -> list[str]:
    """One batch, expected against the learner's, row by row; a row the learner has more times
    than expected shows as extra copies."""
    marks = [batch.watermark for batch in (want, got) if batch is not None]
    show_watermark = any(marks)

    def heading(batch: Batch | None) -> str:
        if batch is None:
            return "(no such batch)"
        parts = []
        if show_watermark:
            parts.append(f"watermark {batch.watermark or '-'}")
        if show_dropped:
            parts.append(f"dropped {batch.dropped}")
        return ", ".join(parts) or "-"

    lines = [f"  Batch {number}:  expected [{heading(want)}]   yours [{heading(got)}]"]
    wanted_rows = want.rows if want else []
    unmatched = Counter(got.rows if got else [])
    for row in wanted_rows:
        if unmatched[row] > 0:
            unmatched[row] -= 1
            lines.append(f"      {format_row(row)}")
        else:
            lines.append(f"    - {format_row(row)}")
    for row in got.rows if got else []:
        if unmatched[row] > 0:
            unmatched[row] -= 1
            extra = "   (one copy too many)" if row in wanted_rows else "   (not expected)"
            lines.append(f"    + {format_row(row)}{extra}")
    if not wanted_rows and not (got and got.rows):
        lines.append("      (no rows in either)")
    return lines


def format_row(row) -> str:
    return "(" + ", ".join(repr(value) for value in row) + ")"


def prediction_of(exercise: Exercise, module, actual=None):
    """The learner's prediction, normalised as Spark's answer is (with ``actual``, Spark's
    answer, a row written as a list where Spark's is a tuple counts as that tuple)."""
    guess = getattr(module, exercise.prediction)
    return normalise_prediction(shaped_like(guess, actual) if actual is not None else guess)


def shaped_like(guess, actual):
    """``guess`` with a list turned into a tuple wherever ``actual`` has a tuple: a prediction's
    rows may be written [1, 'a'] or (1, 'a'). Everything else is left as it was."""
    if isinstance(guess, dict) and isinstance(actual, dict):
        return {key: shaped_like(item, actual.get(key)) for key, item in guess.items()}
    if not isinstance(guess, (list, tuple)) or not isinstance(actual, (list, tuple)) or not actual:
        return guess
    if isinstance(actual, tuple):
        if len(guess) != len(actual):
            return tuple(guess)
        return tuple(shaped_like(item, want) for item, want in zip(guess, actual, strict=True))
    # A list: a batch's rows, or the batches. Its items have one shape: a non-empty one's (the
    # first batch may be empty).
    sample = next((item for item in actual if item not in ([], ())), actual[0])
    return [shaped_like(item, sample) for item in guess]


def compare_prediction(exercise: Exercise, module, mine: Observation) -> str:
    """predict: the learner's PREDICTION against what Spark really emitted."""
    actual = predicted_value(exercise, mine)
    guess = prediction_of(exercise, module, actual)
    if guess == actual:
        return ""
    lines = [f"  Spark's answer and {exercise.prediction} differ:"]
    if isinstance(actual, list) and isinstance(guess, list):
        for number in range(max(len(actual), len(guess))):
            want = actual[number] if number < len(actual) else "(no such batch)"
            got = guess[number] if number < len(guess) else "(no such batch)"
            mark = "  " if want == got else "✗ "
            lines.append(
                f"  {mark}batch {number}: Spark {format_value(want)}   yours {format_value(got)}"
            )
    elif isinstance(actual, dict) and isinstance(guess, dict):
        # One line per key (a query, a run...), Spark's keys first, then any the guess made up.
        for key in [*actual, *(key for key in guess if key not in actual)]:
            want = format_value(actual[key]) if key in actual else "(no such key)"
            got = format_value(guess[key]) if key in guess else "(no such key)"
            mark = "  " if key in actual and key in guess and want == got else "✗ "
            lines.append(f"  {mark}{key}: Spark {want}   yours {got}")
    else:
        lines.append(f"    Spark: {format_value(actual)}\n    yours: {format_value(guess)}")
    return "\n".join(lines)


def predicted_value(exercise: Exercise, observation: Observation):
    if exercise.predicted is not None:
        return normalise_prediction(exercise.predicted(observation))
    return [batch.rows for batch in observation.batches]


def normalise_prediction(value):
    """Lists of rows compare as sorted lists of tuples, whatever order the learner wrote."""
    if isinstance(value, dict):
        return {key: normalise_prediction(item) for key, item in value.items()}
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(item, (list, tuple)) for item in value)
    ):
        inner = [normalise_prediction(item) for item in value]
        if all(isinstance(item, tuple) for item in inner):
            return sort_rows(inner)
        return inner
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain(item) for item in value)
    return plain(value)


def format_value(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    if isinstance(value, tuple):
        return format_row(value)
    return repr(value)


def recognise(
    exercise: Exercise,
    mine: Observation | None,
    wanted: Observation | None,
    source: str,
    error: str = "",
):
    """The known mistake this answer makes, if any."""
    for mistake in exercise.mistakes:
        if mistake.error and error and re.search(mistake.error, error, re.S):
            return mistake
        if mistake.when and mine is not None and wanted is not None and mistake.when(mine, wanted):
            return mistake
        if mistake.source and re.search(mistake.source, source, re.M):
            return mistake
    return None


def error_verdict(exercise: Exercise, error: Exception, path: Path, source: str) -> Verdict:
    text = str(error)
    what = failure_kind(error)
    in_worker = worker_error(text, path)
    if in_worker:
        # The learner's function failed in a Python worker (applyInPandasWithState,
        # transformWithState, a UDF): their line and exception, not Spark's wrapper.
        what = "Your code failed while the query ran"
    mistake = recognise(exercise, None, None, source, text)
    if mistake:
        if in_worker or is_spark_error(error):
            report = f"{what}: {in_worker or spark_line(text)}"
        else:
            # A Python error of the learner's own code (a listener's callback, say): its line.
            report = python_error(error, path)
        return Verdict(exercise, FAILING, report, mistake.hint, mistake.name)
    if in_worker:
        return Verdict(exercise, FAILING, f"{what}: {in_worker}")
    if is_spark_error(error):
        where = where_in(error, path)
        for pattern, hint in KNOWN_ERRORS:
            if re.search(pattern, text, re.S):
                report = f"{where}{what}: {spark_line(text)}"
                return Verdict(exercise, FAILING, report, hint)
        # An error the lessons' runner explains (a checkpoint of another query, a missing
        # connector...) gets the same advice here.
        advice = errors.explain(error) or ""
        return Verdict(exercise, FAILING, f"{where}{what}: {spark_line(text)}", advice)
    return Verdict(exercise, FAILING, python_error(error, path))


def failure_kind(error: Exception) -> str:
    """'Spark refused the query' (at start: analysis) or 'The query failed while running'."""
    from pyspark.errors import StreamingQueryException

    if isinstance(error, StreamingQueryException):
        return "The query failed while running"
    return "Spark refused the query"


# A line of a Python traceback that names the exception: "TypeError: ...".
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*(?:Error|Exception)): (.*)$")


def worker_error(text: str, path: Path) -> str:
    """'ex1.py, line 12 (<code>): TypeError: ...' when Spark's error carries a Python worker's
    traceback through the learner's file ``path``; '' otherwise."""
    lines = text.splitlines()
    frame = re.compile(rf'^\s*File "{re.escape(str(path.resolve()))}", line (\d+), in ')
    last = None
    for number, line in enumerate(lines):
        if frame.match(line):
            last = number
    if last is None:
        return ""
    where = f"{path.name}, line {frame.match(lines[last]).group(1)}"
    code = lines[last + 1].strip() if last + 1 < len(lines) else ""
    for line in lines[last + 1 :]:
        found = EXCEPTION_LINE.match(line.strip())
        if found:
            return f"{where} ({code}): {found.group(1)}: {found.group(2)}"
    return ""


def todo_in_worker(error: Exception) -> bool:
    """The learner's function raised its TODO in a Python worker: Spark's error carries it."""
    return is_spark_error(error) and "NotImplementedError" in str(error)


def is_spark_error(error: Exception) -> bool:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return isinstance(error, (PySparkException, Py4JJavaError))


def spark_line(text: str) -> str:
    """Spark's message without the query's id wrapper and the plan it appends."""
    return first_line(STREAM_FAILED.sub("", text.strip(), count=1))


def python_error(error: Exception, path: Path) -> str:
    """The error and the line of the learner's file it happened on, not the whole traceback."""
    if isinstance(error, SyntaxError) and error.lineno:
        return f"{path.name}, line {error.lineno}: {type(error).__name__}: {error}"
    return f"{where_in(error, path)}{type(error).__name__}: {error}"


def where_in(error: Exception, path: Path) -> str:
    """'ex1.py, line 12 (<the line>): ', the learner's line the error came from, or ''."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if Path(frame.filename).resolve() == path.resolve():
            return f"{path.name}, line {frame.lineno} ({frame.line}): "
    return ""
