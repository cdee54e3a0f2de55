"""A stand-in lesson that fails with a failure the course explains (test_advice_first.py).

    python tests/hardening/changed_keys_lesson.py --input DIR --checkpoint-dir DIR

It counts the lines of the text files in ``--input`` by their length, with the course's runner
(``lesson_session``, ``finish``, ``run_lesson``), as a lesson does. The test gives it a checkpoint
written by a query that counted the lines by their text: the grouping keys changed, so its first
micro-batch fails with STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE, which ``errors.explain`` answers.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "streaming_tutorial")]

from pyspark.sql import DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from common import paths  # noqa: E402
from infra import cli  # noqa: E402
from infra.runner import checkpoint_root, finish, lesson_session, run_lesson  # noqa: E402

LESSON = "99_changed_keys"
QUERY = "counts"  # the checkpoint's subfolder


def build_counts_by_length(lines: DataFrame) -> DataFrame:
    """Lines per length: the grouping key the checkpoint's state was not written with."""
    return lines.groupBy(F.length("value").alias("key")).count()


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, simulator=False)
    parser.add_argument("--input", type=Path, required=True)
    args = parser.parse_args(argv)
    with lesson_session(LESSON, args) as spark:
        lines = spark.readStream.format("text").load(paths.uri(args.input))
        query = (
            build_counts_by_length(lines)
            .writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", paths.uri(checkpoint_root(LESSON, args) / QUERY))
            .trigger(availableNow=True)
            .start()
        )
        finish([query])


if __name__ == "__main__":
    run_lesson(main)
