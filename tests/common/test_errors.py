"""infra.errors.explain: advice only for exact Spark error classes, --reset only for a checkpoint
that no longer fits.

Pure Python: the errors are stand-ins shaped like pyspark's (getCondition(), a '[CLASS]'
message, a wrapped cause), with the message text Spark 4.2 really uses, read from the
error-conditions.json inside the installed pyspark's jars. No JVM starts.
"""

from __future__ import annotations

import json
import textwrap
import zipfile
from functools import lru_cache
from pathlib import Path

import pyspark
import pytest

from infra.errors import ADVICE, CHECKPOINT_MISMATCH, CourseError, explain

# Delta Lake's classes live in the delta-spark jar, which Spark fetches on first use (not in the
# venv).
DELTA_CLASSES = {name for name in ADVICE if name.startswith("DELTA_") or "_DELTA_" in name}


@lru_cache(maxsize=1)
def spark_error_conditions() -> dict:
    """The JVM side's error classes of the installed pyspark (spark-common-utils jar)."""
    jars = Path(pyspark.__file__).parent / "jars"
    for jar in sorted(jars.glob("spark-common-utils_*.jar")):
        with zipfile.ZipFile(jar) as archive:
            return json.loads(archive.read("error/error-conditions.json"))
    pytest.skip("no spark-common-utils jar in this pyspark")


def wrapped(advice: str) -> str:
    """The advice paragraph as explain() returns it: wrapped for a terminal, words and flags kept
    whole."""
    return textwrap.fill(advice, width=78, break_long_words=False, break_on_hyphens=False)


def condition_messages(condition: str) -> list[str] | None:
    """The message lines of 'CLASS' or 'CLASS.SUBCLASS' (a subclass adds its lines to its class's),
    or None."""
    main, _, sub = condition.partition(".")
    entry = spark_error_conditions().get(main)
    if entry is None or not sub:
        return entry and entry["message"]
    subclass = entry.get("subClass", {}).get(sub)
    return subclass and [" ".join(entry["message"] + subclass["message"])]


def spark_message(condition: str) -> str:
    """'[CLASS] message' as Spark prints it (legacy classes have no prefix), placeholders left
    in."""
    text = "\n".join(condition_messages(condition))
    return text if condition.startswith("_LEGACY_") else f"[{condition}] {text} SQLSTATE: XXKST"


class FakeSparkError(Exception):
    """Shaped like pyspark's CapturedException: getCondition(), and the JVM cause in _cause."""

    def __init__(self, condition: str | None, message: str, cause: BaseException | None = None):
        super().__init__(message)
        self._condition = condition
        self._cause = cause

    def getCondition(self):
        return self._condition


def stream_failed(inner: str, cause: BaseException | None = None) -> FakeSparkError:
    """A StreamingQueryException as awaitTermination() raises it."""
    return FakeSparkError(
        "STREAM_FAILED",
        f"[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: {inner}\n"
        "=== Streaming Query ===\nIdentifier: [id = 1, runId = 2]\nCurrent Committed Offsets: {}",
        cause,
    )


@pytest.mark.parametrize("condition", sorted(set(ADVICE) - DELTA_CLASSES))
def test_every_spark_class_we_explain_exists_in_the_installed_spark(condition):
    assert condition_messages(condition) is not None


@pytest.mark.parametrize("condition", sorted(set(ADVICE) - DELTA_CLASSES))
def test_each_recognised_class_gets_its_advice_and_sparks_first_lines(condition):
    message = spark_message(condition)
    advice = explain(FakeSparkError(condition, message))
    assert advice is not None and advice.startswith(wrapped(ADVICE[condition]))
    first_line = message.splitlines()[0].replace(" SQLSTATE: XXKST", "")
    assert f"Spark said:\n  {first_line[:120]}" in advice  # long lines are cut
    spark_part = advice.split("Spark said:\n", 1)[1].splitlines()
    assert 1 <= len(spark_part) <= 3 and "SQLSTATE" not in advice


@pytest.mark.parametrize("condition", sorted(DELTA_CLASSES))
def test_delta_classes_are_recognised_by_their_leading_class(condition):
    error = RuntimeError(f"[{condition}] Something about the Delta table at /data/t.\nSecond line.")
    advice = explain(error)
    assert advice.startswith(wrapped(ADVICE[condition]))
    assert advice.endswith(
        f"Spark said:\n  [{condition}] Something about the Delta table at /data/t.\n  Second line."
    )


@pytest.mark.parametrize("condition", sorted(ADVICE))
def test_only_a_checkpoint_that_no_longer_fits_is_answered_with_reset(condition):
    advice = ADVICE[condition]
    if condition in CHECKPOINT_MISMATCH:
        assert "--reset" in advice and "--checkpoint-dir" in advice
        # ... and says what starting over throws away.
        assert "deletes this lesson's checkpoints and output" in advice and "state" in advice
    else:
        assert "--reset" not in advice and "--checkpoint-dir" not in advice


def test_the_checkpoint_mismatches_are_the_state_and_source_changes():
    assert set(CHECKPOINT_MISMATCH) == {
        "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
        "STATE_STORE_COLUMN_FAMILY_SCHEMA_INCOMPATIBLE",
        "STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE",
        "STATE_STORE_INVALID_CONFIG_AFTER_RESTART",
        "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA",
        "STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY",
        "DIFFERENT_DELTA_TABLE_READ_BY_STREAMING_SOURCE",
        "DELTA_SCHEMA_CHANGED",
        "DELTA_SCHEMA_CHANGED_WITH_VERSION",
        "DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS",
    }


def test_a_failed_query_is_explained_by_the_error_it_wraps():
    inner = spark_message("STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE").replace(
        "<storedKeySchema>", "StructType(k)"
    )
    advice = explain(stream_failed(inner))
    assert advice.startswith(wrapped(ADVICE["STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"]))
    assert advice.split("Spark said:\n", 1)[1].splitlines() == [
        "  [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match existing "
        "state key schema.",
        "  Please check number and type of fields.",
        "  Existing key_schema=StructType(k) and new key_schema=<newKeySchema>.",
    ]
    assert "=== Streaming Query ===" not in advice and "runId" not in advice


def test_a_cause_two_levels_down_is_found():
    # As Spark 4.2 reports an incomplete foreachBatch: the outer message names no class.
    condition = "STATE_STORE_COMMIT_VALIDATION_FAILED"
    validation = FakeSparkError(condition, spark_message(condition))
    await_result = FakeSparkError(None, "Exception thrown in awaitResult: ", validation)
    advice = explain(
        stream_failed("Exception thrown in awaitResult:  SQLSTATE: XXKST", await_result)
    )
    assert advice.startswith(wrapped(ADVICE["STATE_STORE_COMMIT_VALIDATION_FAILED"]))
    assert "--reset" not in advice


def test_a_subclass_with_advice_of_its_own_wins_and_its_class_alone_is_not_explained():
    tws = "UNSUPPORTED_FEATURE.STORE_BACKEND_NOT_SUPPORTED_FOR_TWS"
    assert explain(stream_failed(spark_message(tws))).startswith(wrapped(ADVICE[tws]))
    assert (
        explain(
            FakeSparkError(
                "UNSUPPORTED_FEATURE.STATE_STORE_TTL",
                spark_message("UNSUPPORTED_FEATURE.STATE_STORE_TTL"),
            )
        )
        is None
    )


def test_the_memory_sink_restart_gets_its_own_advice_not_reset():
    error = FakeSparkError(
        "_LEGACY_ERROR_TEMP_1299",
        "This query does not support recovering from checkpoint location. Delete /c/offsets to "
        "start over.",
    )
    advice = explain(error)
    assert advice.startswith(
        wrapped(ADVICE["_LEGACY_ERROR_TEMP_1299"])
    ) and "memory sink" in " ".join(advice.split())
    assert advice.endswith(
        "Spark said:\n  This query does not support recovering from checkpoint location. Delete "
        "/c/offsets to start over."
    )
    assert "--reset" not in advice


@pytest.mark.parametrize(
    ("condition", "message", "expected"),
    [
        (
            "_LEGACY_ERROR_TEMP_1140",
            "Failed to find data source: kafka. Please deploy the application ...",
            "spark-sql-kafka-0-10_2.13",
        ),
        (
            "DATA_SOURCE_NOT_FOUND",
            "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: delta. Make sure ...",
            "io.delta:delta-spark_4.2_2.13",
        ),
        (
            "DATA_SOURCE_NOT_FOUND",
            "[DATA_SOURCE_NOT_FOUND] Failed to find the data source: jsn. Make sure ...",
            "no data source named 'jsn'",
        ),
    ],
)
def test_a_missing_connector_names_the_package(condition, message, expected):
    advice = explain(FakeSparkError(condition, message))
    assert expected in " ".join(advice.split()) and "--reset" not in advice
    assert advice.endswith(f"Spark said:\n  {message}")


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("Could not write the checkpoint metadata file; see DELTA_ logs"),
        OSError("[Errno 28] No space left on device: '/c/checkpoints/03/offsets/4'"),
        ValueError("checkpointLocation must be a string"),
        FakeSparkError(
            "INTERNAL_ERROR",
            "[INTERNAL_ERROR] failed; earlier: [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE]",
        ),
        FakeSparkError(
            None, "Error in checkpoint: STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE was logged earlier"
        ),
        RuntimeError(
            "Query failed: [DELTA_SCHEMA_CHANGED] appears later in this line, not at its start"
        ),
        stream_failed(
            "java.io.IOException: No such file or directory: /c/checkpoints/offsets/DELTA_1"
        ),
    ],
    ids=[
        "checkpoint-and-DELTA_-words",
        "disk-full",
        "checkpoint-option",
        "class-inside-another",
        "no-class",
        "class-not-leading",
        "stream-failed-io",
    ],
)
def test_an_error_that_only_mentions_checkpoints_or_delta_is_not_explained(error):
    assert explain(error) is None


def test_a_condition_from_getcondition_wins_over_the_text():
    error = FakeSparkError(
        "INTERNAL_ERROR", "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] quoted from a log"
    )
    assert explain(error) is None


def test_raise_from_keeps_the_explanation():
    try:
        try:
            raise FakeSparkError(
                "CONCURRENT_QUERY", "[CONCURRENT_QUERY] Another instance of this query started."
            )
        except FakeSparkError as original:
            raise RuntimeError("the lesson's query stopped") from original
    except RuntimeError as error:
        advice = explain(error)
    assert advice.startswith(wrapped(ADVICE["CONCURRENT_QUERY"]))


def test_course_errors_are_their_own_advice():
    assert explain(CourseError("Start the broker first.")) == "Start the broker first."
