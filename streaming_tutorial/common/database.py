"""A database over JDBC from the driver: connect, create tables, run a statement, query.

Lesson 10 writes each micro-batch's aggregates into SQLite (the default, a file) or
PostgreSQL. This module is the plumbing under that lesson; the lesson's subject, the
transaction that applies a batch once (``apply_batch_once`` in lesson 10), is written out
in the lesson itself::

    add_flags(parser, "a SQLite file in output/")  # --jdbc-url, --jdbc-user, --jdbc-password
    jdbc = from_flags(args, "jdbc:sqlite:output/10_foreach_batch/shop.db")
    create_tables(spark, jdbc, ["CREATE TABLE IF NOT EXISTS ..."])
    with connect(spark, jdbc) as connection:
        execute(connection, "INSERT ... VALUES (?, ?)", ("a", 1))  # -> rows changed
    query(spark, jdbc, "SELECT ...")  # -> list of tuples

The connection lives in the driver's JVM (py4j); the driver classes come with
``get_spark(jdbc=True)`` (SQLite) or ``extra_packages=packages_for(url)`` (PostgreSQL).
The SQL here is plain enough for both.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from common import paths
from infra.errors import CourseError

SQLITE_PREFIX = "jdbc:sqlite:"
# JDBC URL prefix -> driver class. The SQLite driver comes with get_spark(jdbc=True).
DRIVERS = {SQLITE_PREFIX: "org.sqlite.JDBC", "jdbc:postgresql:": "org.postgresql.Driver"}
POSTGRES_JDBC_PACKAGE = "org.postgresql:postgresql:42.7.7"


@dataclass(frozen=True)
class Jdbc:
    """Where the database is: a JDBC URL, and a user and password when it needs them."""

    url: str
    user: str | None = None
    password: str | None = None

    def display(self) -> str:
        """The URL as the learner reads it: a SQLite file relative to the project."""
        return self.url.replace(str(paths.PROJECT_ROOT) + "/", "")


def add_flags(parser, default: str) -> None:
    """The database flags of a lesson that writes to one: --jdbc-url, --jdbc-user and
    --jdbc-password."""
    parser.add_argument(
        "--jdbc-url",
        metavar="URL",
        help=f"the database (default: {default}), e.g. jdbc:postgresql://localhost:5432/shop",
    )
    parser.add_argument("--jdbc-user", help="database user (PostgreSQL)")
    parser.add_argument("--jdbc-password", help="database password (PostgreSQL)")


def from_flags(args, default_url: str) -> Jdbc:
    """The database the flags name, or ``default_url``; an unknown kind of URL fails here,
    before Spark starts."""
    jdbc = Jdbc(args.jdbc_url or default_url, args.jdbc_user, args.jdbc_password)
    driver_for(jdbc.url)
    return jdbc


def driver_for(url: str) -> str:
    """The driver class for a JDBC URL; CourseError for a database the course has no driver for."""
    for prefix, driver in DRIVERS.items():
        if url.startswith(prefix):
            return driver
    raise CourseError(
        f"The course knows the SQLite and PostgreSQL JDBC drivers; '{url}' is neither. "
        "Use jdbc:sqlite:<file> or jdbc:postgresql://host:port/database."
    )


def packages_for(url: str) -> list[str]:
    """The Maven packages a session needs for ``url`` beyond get_spark(jdbc=True)."""
    return [POSTGRES_JDBC_PACKAGE] if driver_for(url) == DRIVERS["jdbc:postgresql:"] else []


@contextmanager
def connect(spark, jdbc: Jdbc) -> Iterator:
    """A java.sql.Connection in the driver's JVM, closed on the way out."""
    driver_class = driver_for(jdbc.url)
    # java.sql.DriverManager cannot see drivers loaded from spark.jars.packages (another
    # class loader), so the driver is created through py4j and asked directly.
    try:
        driver = functools.reduce(getattr, driver_class.split("."), spark._jvm)()
    except TypeError as error:  # py4j: "'JavaPackage' object is not callable" = class not found
        raise CourseError(
            f"The JDBC driver {driver_class} is not on Spark's classpath. Ask for it with "
            "get_spark(jdbc=True) (SQLite) or extra_packages=database.packages_for(url) "
            "(PostgreSQL)."
        ) from error
    properties = spark._jvm.java.util.Properties()
    for key, value in (("user", jdbc.user), ("password", jdbc.password)):
        if value:
            properties.setProperty(key, value)
    connection = driver.connect(jdbc.url, properties)
    if connection is None:  # a driver answers None for a URL that is not its own
        raise CourseError(f"{driver_class} does not accept the URL '{jdbc.display()}'.")
    try:
        yield connection
    finally:
        connection.close()


def create_tables(spark, jdbc: Jdbc, statements: Sequence[str]) -> None:
    """Run ``CREATE TABLE IF NOT EXISTS`` statements, in order."""
    if jdbc.url.startswith(SQLITE_PREFIX):  # SQLite creates the file, not its folder
        Path(jdbc.url[len(SQLITE_PREFIX) :]).parent.mkdir(parents=True, exist_ok=True)
    with connect(spark, jdbc) as connection:
        statement = connection.createStatement()
        for sql in statements:
            statement.executeUpdate(sql)


def query(spark, jdbc: Jdbc, sql: str) -> list[tuple]:
    """The rows of a SELECT, as tuples of Python values."""
    with connect(spark, jdbc) as connection:
        result = connection.createStatement().executeQuery(sql)
        columns = result.getMetaData().getColumnCount()
        rows = []
        while result.next():
            rows.append(
                tuple(to_python(result.getObject(index)) for index in range(1, columns + 1))
            )
        return rows


def execute(connection, sql: str, values: Sequence) -> int:
    """Run one parameterised statement (``?`` placeholders); the number of rows it changed."""
    statement = connection.prepareStatement(sql)
    try:
        for index, value in enumerate(values, start=1):
            bind(statement, index, value)
        return statement.executeUpdate()
    finally:
        statement.close()


def bind(statement, index: int, value) -> None:
    """Set parameter ``index`` with the JDBC setter of the value's type."""
    if value is None:
        statement.setNull(index, 0)  # java.sql.Types.NULL
    elif isinstance(value, bool):
        statement.setBoolean(index, value)
    elif isinstance(value, int):
        statement.setLong(index, value)
    elif isinstance(value, float):
        statement.setDouble(index, value)
    elif isinstance(value, str):
        statement.setString(index, value)
    else:
        raise TypeError(f"cannot bind a {type(value).__name__} to a JDBC parameter: {value!r}")


def to_python(value):
    """A JDBC value as Python: py4j converts numbers and text; a NUMERIC (BigDecimal) becomes
    a float."""
    return float(value.doubleValue()) if hasattr(value, "doubleValue") else value
