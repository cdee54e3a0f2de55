"""common.database: JDBC from the driver, on a real SQLite file.

The transaction that applies a micro-batch once (``apply_batch_once``) is lesson 10's subject:
it lives in the lesson and is tested in tests/lessons/test_10_foreach_batch.py.
"""

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


def test_execute_binds_each_value_and_counts_the_rows_it_changed(spark, jdbc):
    with database.connect(spark, jdbc) as connection:
        assert database.execute(connection, ADD, ("a", 1.5, None)) == 1
        assert database.execute(connection, ADD, ("a", 2, "x")) == 1  # an int binds as a long
        assert database.execute(connection, "DELETE FROM totals WHERE name = ?", ("b",)) == 0

    assert database.query(spark, jdbc, "SELECT name, amount, note FROM totals") == [
        ("a", 3.5, None)
    ]


def test_create_tables_can_run_again(spark, jdbc):
    database.create_tables(spark, jdbc, [TOTALS])

    assert database.query(spark, jdbc, "SELECT COUNT(*) FROM totals") == [(0,)]


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
    with database.connect(spark, jdbc) as connection:
        with pytest.raises(TypeError, match="cannot bind a bytes"):
            database.execute(connection, ADD, ("a", b"1", None))

    assert database.query(spark, jdbc, "SELECT COUNT(*) FROM totals") == [(0,)]
