"""common.database: JDBC from the driver, on a real SQLite file."""

from __future__ import annotations

import argparse

import pytest

from common import database
from infra.errors import CourseError

TOTALS = """CREATE TABLE IF NOT EXISTS totals (
    name VARCHAR(16) PRIMARY KEY,
    amount DOUBLE PRECISION NOT NULL,
    note VARCHAR(16))"""
ADD = (
    "INSERT INTO totals (name, amount, note) VALUES (?, ?, ?) "
    "ON CONFLICT (name) DO UPDATE SET amount = totals.amount + excluded.amount"
)


@pytest.fixture
def jdbc(spark, tmp_path):
    where = database.Jdbc(f"jdbc:sqlite:{tmp_path / 'new folder' / 'test.db'}")
    database.create_tables(
        spark, where, [TOTALS]
    )  # SQLite makes the file; create_tables, its folder
    return where


def test_a_batch_is_applied_once_per_app_and_batch_id(spark, jdbc):
    rows = [("a", 1.5, None), ("b", 2.0, "x")]

    assert database.apply_batch_once(spark, jdbc, "app", 0, ADD, rows, input_rows=7)
    assert not database.apply_batch_once(spark, jdbc, "app", 0, ADD, rows, input_rows=7)  # a replay
    assert database.apply_batch_once(spark, jdbc, "app", 1, ADD, [("a", 10.0, None)])
    assert database.apply_batch_once(spark, jdbc, "other-app", 0, ADD, [("b", 0.5, None)])

    assert database.query(spark, jdbc, "SELECT name, amount, note FROM totals ORDER BY name") == [
        ("a", 11.5, None),
        ("b", 2.5, "x"),
    ]
    assert database.query(
        spark,
        jdbc,
        "SELECT app_id, batch_id, input_rows FROM applied_batches ORDER BY app_id, batch_id",
    ) == [("app", 0, 7), ("app", 1, 0), ("other-app", 0, 0)]


def test_a_failing_batch_rolls_back_its_claim_and_its_rows(spark, jdbc):
    with pytest.raises(Exception, match="NOT NULL"):
        database.apply_batch_once(spark, jdbc, "app", 0, ADD, [("a", 1.0, None), ("b", None, None)])

    assert database.query(spark, jdbc, "SELECT COUNT(*) FROM totals") == [(0,)]
    # Nothing was claimed: the batch's replay applies it.
    assert database.apply_batch_once(spark, jdbc, "app", 0, ADD, [("a", 1.0, None)])
    assert database.query(spark, jdbc, "SELECT name, amount FROM totals") == [("a", 1.0)]


def test_create_tables_can_run_again(spark, jdbc):
    database.create_tables(spark, jdbc, [TOTALS])

    assert database.query(spark, jdbc, "SELECT COUNT(*) FROM applied_batches") == [(0,)]


def test_urls_name_their_driver_and_packages():
    assert database.driver_for("jdbc:sqlite:/tmp/x.db") == "org.sqlite.JDBC"
    assert database.packages_for("jdbc:sqlite:/tmp/x.db") == []
    assert database.packages_for("jdbc:postgresql://localhost:5432/shop") == [
        database.POSTGRES_JDBC_PACKAGE
    ]
    with pytest.raises(CourseError, match="SQLite and PostgreSQL"):
        database.driver_for("jdbc:mysql://localhost/shop")


def test_the_flags_name_the_database_or_leave_the_default():
    parser = argparse.ArgumentParser()
    database.add_flags(parser, "a file")

    assert database.from_flags(parser.parse_args([]), "jdbc:sqlite:/tmp/x.db") == database.Jdbc(
        "jdbc:sqlite:/tmp/x.db"
    )
    chosen = parser.parse_args(
        ["--jdbc-url", "jdbc:postgresql://db:5432/shop", "--jdbc-user", "u", "--jdbc-password", "p"]
    )
    assert database.from_flags(chosen, "jdbc:sqlite:/tmp/x.db") == database.Jdbc(
        "jdbc:postgresql://db:5432/shop", "u", "p"
    )
    with pytest.raises(CourseError, match="SQLite and PostgreSQL"):
        database.from_flags(
            parser.parse_args(["--jdbc-url", "jdbc:mysql://db/shop"]), "jdbc:sqlite:/tmp/x.db"
        )


def test_a_value_of_an_unknown_type_is_refused_before_the_database_sees_it(spark, jdbc):
    with pytest.raises(TypeError, match="cannot bind a bytes"):
        database.apply_batch_once(spark, jdbc, "app", 0, ADD, [("a", b"1", None)])

    assert database.query(spark, jdbc, "SELECT COUNT(*) FROM applied_batches") == [(0,)]
