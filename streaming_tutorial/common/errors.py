"""Turn the failures a learner meets into one paragraph that says what to do.

Every lesson and tool raises :class:`CourseError` for problems it understands;
``explain()`` also recognises a few well-known Spark and Kafka failures by their
text so the learner reads advice instead of a JVM stack trace.
"""

from __future__ import annotations


class CourseError(RuntimeError):
    """A failure we can explain: the message is the whole advice paragraph."""


# (text found in the error, advice). The first match wins.
KNOWN_FAILURES = (
    (
        "Failed to find data source: kafka",
        "Spark has no Kafka connector on its classpath. Lessons ask for it with "
        "get_spark(..., kafka=True), which adds org.apache.spark:spark-sql-kafka-0-10_2.13 "
        "matching your pyspark version. If you built your own session, add that package to "
        "spark.jars.packages (the Scala 2.13 build, same version as pyspark).",
    ),
    (
        "DELTA_",
        "Delta Lake reported a problem with the table. If you changed a lesson's query, run "
        "it again with --reset to start from an empty table and checkpoint.",
    ),
    (
        "STATE_STORE",
        "The checkpoint holds state written by a different version of this query (its keys, "
        "aggregations or schema changed). Structured Streaming cannot reuse it. Run the "
        "lesson again with --reset to delete this lesson's checkpoint and output, or point "
        "--checkpoint-dir at a new folder.",
    ),
    (
        "checkpoint",
        "The query could not use its checkpoint folder. It was probably written by a different "
        "query or a different version of this lesson. Run the lesson again with --reset to "
        "delete this lesson's checkpoint and output, or point --checkpoint-dir at a new folder.",
    ),
)


def explain(error: BaseException) -> str | None:
    """Advice for an error we recognise, or None."""
    if isinstance(error, CourseError):
        return str(error)
    text = str(error)
    for needle, advice in KNOWN_FAILURES:
        if needle in text:
            first_line = text.strip().splitlines()[0][:300] if text.strip() else type(error).__name__
            return f"{advice}\n(Spark said: {first_line})"
    return None
