"""A failing lesson's advice comes first and whole; the JVM's stack traces go to the run's log.

A lesson's run gives the driver common/log4j2-run-log.properties beside log4j2.properties
(common/session.py): the JVM's warnings and errors, with their stack traces, go to
.runtime/logs/<lesson>.log, the terminal gets one line per warning or error, and the line
"... terminated with error" (with the failure's stack trace) not at all, since Python raises the
same failure and run_lesson explains it (or shows it, with the log's path under the traceback).
"""

from __future__ import annotations

import os

import pytest

from conftest import prose, run_script
from infra.errors import CHECKPOINT_MISMATCH, CourseError

LESSON_SCRIPT = "tests/hardening/changed_keys_lesson.py"  # its LESSON names the log
TRACEBACK = "Traceback (most recent call last)"
ADVICE = CHECKPOINT_MISMATCH["STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"]
LOG_LINE = "The JVM's log of this run, with its stack traces: "


def write_checkpoint_counted_by_text(spark, inputs, checkpoint) -> None:
    """The query before its change: lines counted by their text, one micro-batch committed."""
    from pyspark.sql import functions as F

    from common import paths

    query = (
        spark.readStream.format("text")
        .load(paths.uri(inputs))
        .groupBy(F.col("value").alias("key"))
        .count()
        .writeStream.format("noop")
        .outputMode("update")
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None


def test_a_known_failure_prints_the_advice_first_and_the_stack_trace_only_in_the_log(
    spark, course_home
):
    inputs = course_home / "input"
    inputs.mkdir()
    (inputs / "part-1.txt").write_text("apple\npear\n")
    checkpoints = course_home / "old-checkpoints"
    write_checkpoint_counted_by_text(spark, inputs, checkpoints / "counts")
    (inputs / "part-2.txt").write_text("plum\n")  # new input: the next run plans a batch

    result = run_script(
        LESSON_SCRIPT,
        "--input",
        str(inputs),
        "--checkpoint-dir",
        str(checkpoints),
        home=course_home,
        timeout=120,
    )

    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-3000:]
    assert TRACEBACK not in result.stderr, result.stderr[-3000:]
    first_words = ADVICE.split(",", 1)[0]
    assert first_words in result.stderr, result.stderr[-3000:]
    above, advice = result.stderr.split(first_words, 1)
    # Above the advice: at most the JVM's own start-up notes, no log line of the failure.
    assert "\tat " not in above and " ERROR " not in above, above
    assert "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE" not in above, above
    # The advice whole (wrapped at 78 columns), Spark's first line, then where the log is.
    assert prose(first_words + advice).startswith(prose(ADVICE) + " Spark said: [STATE_STORE_KEY")
    log = course_home / ".runtime" / "logs" / "99_changed_keys.log"
    assert result.stderr.rstrip().splitlines()[-1] == LOG_LINE + str(log)
    logged = log.read_text(encoding="utf-8")
    assert "terminated with error" in logged
    assert "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema" in logged
    assert (
        "\tat org.apache.spark.sql.execution.streaming.state.StateSchemaCompatibilityChecker"
        in (logged)
    )


def failing_main(error: Exception):
    def main(argv):
        raise error

    return main


@pytest.fixture
def a_run_log(monkeypatch, tmp_path):
    """The log file get_spark would have opened for this process's JVM, with one line in it."""
    from common import session

    log = tmp_path / ".runtime" / "logs" / "99_changed_keys.log"
    log.parent.mkdir(parents=True)
    log.write_text("2025-01-15 10:30:00.000 ERROR x: y\n", encoding="utf-8")
    monkeypatch.setitem(session.RUN_LOG, "file", log)
    return log


def test_the_advice_is_followed_by_the_logs_path(a_run_log, capsys):
    from infra.runner import run_lesson

    with pytest.raises(SystemExit) as stopped:
        run_lesson(failing_main(CourseError("Do this, then run the lesson again.")))

    assert stopped.value.code == 1
    assert capsys.readouterr().err == (
        f"\nDo this, then run the lesson again.\n{LOG_LINE}{a_run_log}\n"
    )


def test_an_error_the_course_does_not_explain_is_raised_with_the_logs_path_under_it(a_run_log):
    from infra.runner import run_lesson

    with pytest.raises(ValueError, match="a bug of the lesson's own") as raised:
        run_lesson(failing_main(ValueError("a bug of the lesson's own")))

    assert raised.value.__notes__ == [LOG_LINE + str(a_run_log)]


def test_no_log_line_when_the_jvm_logged_nothing(monkeypatch, tmp_path, capsys):
    from common import session
    from infra.runner import run_lesson

    empty = tmp_path / "empty.log"
    empty.write_text("")
    monkeypatch.setitem(session.RUN_LOG, "file", empty)
    with pytest.raises(SystemExit):
        run_lesson(failing_main(CourseError("Do this.")))
    assert capsys.readouterr().err == "\nDo this.\n"


def test_a_lessons_run_empties_its_log_and_its_child_processes_add_to_it(monkeypatch, tmp_path):
    from common import session

    log = tmp_path / "logs" / "16_fault_tolerance.log"
    log.parent.mkdir()
    log.write_text("the previous run's log\n")
    monkeypatch.setenv(session.RUN_LOG_ENV, "")  # restored after the test
    assert session.open_run_log(log)  # the lesson's own run
    assert log.read_text() == ""
    assert os.environ[session.RUN_LOG_ENV] == str(log)
    log.write_text("the lesson's JVM so far\n")
    assert session.open_run_log(log)  # a child process it started (it inherits the variable)
    assert log.read_text() == "the lesson's JVM so far\n"


def test_a_log_that_cannot_be_written_is_said_and_the_run_goes_on(tmp_path, capsys):
    from common import session

    (tmp_path / "logs").write_text("a file where the logs folder should be")
    log = tmp_path / "logs" / "06_windowing.log"
    assert not session.open_run_log(log)
    said = capsys.readouterr().err
    assert said.startswith(f"Cannot write the run's log {log} (")
    assert said.endswith("): the JVM's stack traces stay on the terminal.\n")


def test_a_log_path_with_a_space_stays_one_java_option():
    from common import session

    plain, spaced = "/home/ana/course/.runtime/logs/06.log", "/home/ana/my course/x.log"
    assert session.java_property("streaming.course.log", plain) == (
        "-Dstreaming.course.log=/home/ana/course/.runtime/logs/06.log"
    )
    assert session.java_property("streaming.course.log", spaced) == (
        '"-Dstreaming.course.log=/home/ana/my course/x.log"'
    )
