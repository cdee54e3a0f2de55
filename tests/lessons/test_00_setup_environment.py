"""Lesson 00: the environment report, the product catalogue query, and a first run by itself."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from conftest import load_lesson, run_script

lesson = load_lesson("00_setup_environment")


def test_products_per_category(spark):
    rows = lesson.build_products_per_category(lesson.read_products(spark)).collect()

    assert rows == [
        Row(category="Electronics", products=3, avg_list_price=566.66),
        Row(category="Fashion", products=3, avg_list_price=51.66),
        Row(category="Home", products=3, avg_list_price=91.33),
        Row(category="Sports", products=3, avg_list_price=79.83),
    ]


def test_sample_data_status_counts_files_and_lines(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a.json").write_text("{}\n{}\n")
    (tmp_path / "full" / "b.json").write_text("{}\n")
    (tmp_path / "full" / "notes.txt").write_text("not data\n")
    (tmp_path / "empty").mkdir()

    statuses = lesson.sample_data_status(
        [tmp_path / "full", tmp_path / "empty", tmp_path / "missing"]
    )

    assert [(s.folder.name, s.files, s.lines) for s in statuses] == [
        ("full", 2, 3),
        ("empty", 0, 0),
        ("missing", 0, 0),
    ]


def test_connector_jars_are_found_by_their_ivy_file_names(tmp_path):
    jars = lesson.connector_jars()
    assert jars["Kafka"] == "org.apache.spark_spark-sql-kafka-0-10_2.13-4.2.0.jar"
    assert jars["Delta Lake"] == "io.delta_delta-spark_4.2_2.13-4.4.0.jar"
    (tmp_path / jars["Kafka"]).write_bytes(b"")

    cached = lesson.cached_connector_jars(tmp_path)

    assert {name: found for name, (_, found) in cached.items()} == {
        "Kafka": True,
        "Delta Lake": False,
        "SQLite JDBC": False,
    }


@pytest.mark.smoke
def test_lesson_00_runs_by_itself(course_home):
    result = run_script("streaming_tutorial/00_setup_environment.py", home=course_home)

    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    for line in (
        "✓ Python",
        "✓ Java",
        "✓ pyspark",
        "Spark version:       4.2.0",
        "Shuffle partitions:",
        "Electronics  3 products, average list price 566.66",
        "5. Summary",
        "Ready: Python, Java, pyspark and Spark.",
        "Next: python streaming_tutorial/01_basic_streaming.py",
    ):
        assert line in out, line
    # The temporary home has no sample data yet: a warning with the fix, not a failure.
    assert "no sample files yet" in out and "python initial_setup.py --sample-data" in out


@pytest.mark.smoke
def test_lesson_00_with_a_broken_java_home_exits_1_before_starting_spark(course_home):
    result = run_script(
        "streaming_tutorial/00_setup_environment.py",
        home=course_home,
        env={"JAVA_HOME": str(course_home / "no-jdk")},
    )

    assert result.returncode == 1
    assert "Not ready yet. Fix this first:" in result.stdout
    advice = " ".join(result.stdout.split())  # say() wraps the paragraph
    assert "JAVA_HOME is set to" in advice and "there is no bin/java in it" in advice
    assert "Spark version" not in result.stdout
