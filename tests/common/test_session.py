"""common.session: the jar list that lets a start skip Ivy's resolution."""

from __future__ import annotations

from common import session

PACKAGES = ["org.example:a_2.13:1.0", "org.example:b:2.0"]


def test_resolved_jars_are_remembered_per_package_set_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    jars = [tmp_path / "a.jar", tmp_path / "b.jar"]
    for jar in jars:
        jar.write_bytes(b"PK")

    assert session.cached_jars(PACKAGES) == []  # never resolved: Ivy must run
    session.remember_jars(PACKAGES, ",".join(f"file://{jar}" for jar in jars))

    assert session.cached_jars(list(reversed(PACKAGES))) == [
        str(jar) for jar in jars
    ]  # order does not matter
    assert session.cached_jars(PACKAGES[:1]) == []  # another package set: its own list


def test_a_jar_that_disappeared_sends_the_start_back_to_ivy(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"PK")
    session.remember_jars(PACKAGES, f"file://{jar}")
    jar.unlink()

    assert session.cached_jars(PACKAGES) == []


def test_the_delta_package_is_built_for_this_spark_and_scala():
    assert session.delta_package() == "io.delta:delta-spark_4.2_2.13:4.4.0"
    assert session.kafka_package() == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
