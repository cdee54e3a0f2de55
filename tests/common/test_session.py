"""common.session: the jar list that lets a start skip Ivy's resolution; the checkpoint file
manager it chooses."""

from __future__ import annotations

import functools

import pytest
from py4j.protocol import Py4JJavaError

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


def test_a_start_that_could_not_download_its_jars_names_them():
    """The JVM exits before it answers when Ivy cannot resolve a package (no network on a first
    start): the advice names the packages. With the jar files known from an earlier start nothing
    was downloaded, and the advice does not blame the network."""
    exited = RuntimeError(
        "[JAVA_GATEWAY_EXITED] Java gateway process exited before sending its port"
    )

    advice = session._startup_advice(exited, PACKAGES)
    assert f"could not download its connector jars ({', '.join(PACKAGES)})" in advice
    assert "download" not in session._startup_advice(exited, [])


def test_the_delta_package_is_built_for_this_spark_and_scala():
    assert session.delta_package() == "io.delta:delta-spark_4.2_2.13:4.4.0"
    assert session.kafka_package() == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


@pytest.mark.parametrize(
    "manager", [session.FILE_SYSTEM_CHECKPOINTS, session.FILE_CONTEXT_CHECKPOINTS]
)
def test_either_checkpoint_manager_refuses_a_second_writer_of_an_offsets_entry(
    spark, tmp_path, manager
):
    """The course's manager keeps the protection Spark's default gives on a local disk.

    Two runs on one checkpoint both write offsets/N the way Spark's offsets log does
    (createAtomic without overwrite: a temporary file, renamed into place on close). Whichever
    closes second is refused, by either manager, and the first run's entry stays; Spark's
    offsets log reports that refusal as "Multiple streaming queries are concurrently using".
    """
    jvm = spark._jvm
    folder = jvm.org.apache.hadoop.fs.Path((tmp_path / "offsets").as_uri())
    manager_class = functools.reduce(getattr, manager.split("."), jvm)
    files = manager_class(folder, spark._jsc.hadoopConfiguration())
    files.mkdirs(folder)
    entry = jvm.org.apache.hadoop.fs.Path(folder, "0")
    first = files.createAtomic(entry, False)
    second = files.createAtomic(entry, False)
    first.write(bytearray(b"the first run's batch 0"))
    second.write(bytearray(b"the second run's batch 0"))

    first.close()
    with pytest.raises(Py4JJavaError) as refused:
        second.close()
    second.cancel()  # what Spark's log does after a refusal; the stream is closed already

    already_exists = jvm.java.lang.Class.forName("org.apache.hadoop.fs.FileAlreadyExistsException")
    assert already_exists.isInstance(refused.value.java_exception)
    assert (tmp_path / "offsets" / "0").read_text() == "the first run's batch 0"
    # The refused run's temporary file stays (with either manager); Spark's log skips such names.
    left = [path for path in (tmp_path / "offsets").iterdir() if path.suffix != ".crc"]
    assert sorted(path.name.startswith(".0.") and path.suffix == ".tmp" for path in left) == [
        False,
        True,
    ]
    assert {path.read_text() for path in left} == {
        "the first run's batch 0",
        "the second run's batch 0",
    }
