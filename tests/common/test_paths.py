"""The storage setting (common/paths.py): where data/, checkpoints/ and output/ live, and the
address Spark gets for each (paths.uri); on remote storage, what the Python side says instead
of failing. No JVM here. POSIX paths only: the course does not support Windows."""

from __future__ import annotations

import importlib.util
import sys
from types import SimpleNamespace

import pytest

from common import paths, storage
from conftest import ROOT
from infra import checkpoints, cli, runner, simulators
from infra.errors import CourseError
from teaching import microbatch

HDFS = "hdfs://nn:8020/course"


def fresh_paths(monkeypatch, home, *, argv=(), env=None):
    """common/paths.py imported anew, as a lesson started with ``argv`` and ``env`` would see it."""
    monkeypatch.setenv("STREAMING_COURSE_HOME", str(home))
    monkeypatch.delenv(paths.STORAGE_ENV, raising=False)
    if env is not None:
        monkeypatch.setenv(paths.STORAGE_ENV, env)
    monkeypatch.setattr(sys, "argv", ["lesson.py", *argv])
    spec = importlib.util.spec_from_file_location(
        "paths_under_test", ROOT / "streaming_tutorial/common/paths.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "argv, env, expected",
    [
        ([], None, ""),
        ([], "/env/store", "/env/store"),
        (
            ["--duration", "5", "--storage", "/flag/store"],
            "/env/store",
            "/flag/store",
        ),  # the flag wins
        (["--storage=file:///flag/store", "--reset"], None, "file:///flag/store"),
        (
            ["--storage"],
            "/env/store",
            "/env/store",
        ),  # no value: argparse will say so; the env var stands
    ],
)
def test_the_flag_is_read_before_argparse_and_wins_over_the_environment(argv, env, expected):
    assert paths.storage_setting(argv, {} if env is None else {paths.STORAGE_ENV: env}) == expected


def test_the_default_is_the_course_home_as_explicit_file_uris(monkeypatch, tmp_path):
    home = tmp_path / "home"
    local = fresh_paths(monkeypatch, home)

    assert (local.STORAGE_ROOT, local.REMOTE_ROOT, local.CHECKPOINT_DIR) == (
        home,
        None,
        home / "checkpoints",
    )
    assert (
        local.uri(local.checkpoint_for("03_file_streaming", "transactions"))
        == f"file:{home}/checkpoints/03_file_streaming/transactions"
    )
    assert local.uri(local.TRANSACTIONS_DIR) == f"file:{home}/data/input_stream"
    assert (
        local.uri(local.output_for("11_delta_lake", "events"))
        == f"file:{home}/output/11_delta_lake/events"
    )
    assert not local.is_remote(local.OUTPUT_DIR)


@pytest.mark.parametrize("how", ["flag", "flag=", "env", "file uri", "file uri, one slash"])
def test_a_local_folder_or_file_uri_moves_the_generated_folders(monkeypatch, tmp_path, how):
    home, store = tmp_path / "home", tmp_path / "shared" / "store"
    argv, env = {
        "flag": (["--storage", str(store)], None),
        "flag=": ([f"--storage={store}"], None),
        "env": ([], str(store)),
        "file uri": (["--storage", f"file://{store}/"], None),
        "file uri, one slash": ([], f"file:{store}"),
    }[how]
    local = fresh_paths(monkeypatch, home, argv=argv, env=env)

    assert (local.STORAGE_ROOT, local.REMOTE_ROOT) == (store, None)
    assert (local.DATA_DIR, local.CHECKPOINT_DIR, local.OUTPUT_DIR) == (
        store / "data",
        store / "checkpoints",
        store / "output",
    )
    assert local.ECOMMERCE_DIR == store / "data" / "ecommerce_events"
    assert local.RUNTIME_DIR == home / ".runtime"  # PID files and the broker stay on this machine
    assert (
        local.uri(local.checkpoint_for("06_windowing", "live"))
        == f"file:{store}/checkpoints/06_windowing/live"
    )
    local.remove_tree(local.output_for("06_windowing"))  # inside the storage folder: allowed


def test_a_file_uri_with_a_host_is_refused(tmp_path):
    with pytest.raises(ValueError, match="names no host"):
        paths.storage_roots("file://server/shared/course", tmp_path)


def test_a_hadoop_uri_maps_the_generated_folders_onto_the_remote_root(monkeypatch, tmp_path):
    home = tmp_path / "home"
    remote = fresh_paths(monkeypatch, home, env=HDFS + "/")

    assert (remote.STORAGE_ROOT, remote.REMOTE_ROOT, remote.DATA_DIR) == (
        home,
        HDFS,
        home / "data",
    )  # the local view
    assert (
        remote.uri(remote.checkpoint_for("12_stateful_processing", "user_state"))
        == f"{HDFS}/checkpoints/12_stateful_processing/user_state"
    )
    assert remote.uri(remote.SENSOR_DIR) == f"{HDFS}/data/sensor_readings"
    assert remote.uri(remote.OUTPUT_DIR) == f"{HDFS}/output"
    assert (
        remote.uri(remote.output_for("04_multiple_sinks", "parquet") / "data")
        == f"{HDFS}/output/04_multiple_sinks/parquet/data"
    )
    assert remote.is_remote(remote.CHECKPOINT_DIR)
    # Outside data/, checkpoints/ and output/: local files, as explicit file: URIs.
    assert remote.uri(tmp_path / "elsewhere" / "cp") == f"file:{tmp_path}/elsewhere/cp"
    assert remote.uri(remote.RUNTIME_DIR) == f"file:{home}/.runtime"
    assert (
        remote.uri(remote.PRODUCTS_CSV) == f"file:{remote.PRODUCTS_CSV}"
    )  # shipped with the course


@pytest.mark.parametrize(
    "root",
    ["s3a://bucket/course", "abfss://c@account.dfs.core.windows.net/course", "gs://bucket/course"],
)
def test_every_hadoop_scheme_is_a_remote_root(tmp_path, root):
    assert paths.storage_roots(root, tmp_path) == (tmp_path, root)


def test_a_folder_with_a_space_is_not_percent_encoded(tmp_path):
    # Hadoop does not decode %-escapes: "a%20b" would be a folder of that name.
    assert paths.uri(tmp_path / "a b" / "cp") == f"file:{tmp_path}/a b/cp"


def test_lessons_and_file_simulators_accept_the_flag():
    lesson = cli.lesson_parser("A lesson.").parse_args(["--storage", "hdfs://nn/x"])
    simulator = cli.simulator_parser(
        "A simulator.", count=1, interval=0, output_dir=paths.SENSOR_DIR
    )

    assert lesson.storage == "hdfs://nn/x"
    assert simulator.parse_args(["--storage", "/shared"]).storage == "/shared"
    assert "--storage URI" in cli.lesson_parser("A lesson.").format_help()


# --- remote storage: what the Python side says instead of failing -----------------------------


@pytest.fixture
def on_hdfs(monkeypatch):
    """The course's own paths, with the storage on HDFS (as --storage hdfs://... would set it)."""
    monkeypatch.setattr(paths, "STORAGE_ROOT", paths.COURSE_HOME)
    monkeypatch.setattr(paths, "REMOTE_ROOT", HDFS)


def test_the_checkpoint_line_says_it_was_not_inspected(on_hdfs):
    line = checkpoints.describe(paths.checkpoint_for("03_file_streaming"))

    assert line == (
        f"Checkpoints in {HDFS}/checkpoints/03_file_streaming (remote storage, not inspected from "
        "Python): a query resumes from its checkpoint there if it has one; --reset deletes them."
    )


def test_a_file_simulator_is_refused_with_advice_and_none_starts(on_hdfs, monkeypatch):
    monkeypatch.setattr(
        simulators, "start_simulator", lambda *a: pytest.fail("no simulator may start")
    )

    with pytest.raises(CourseError) as refused:
        with simulators.simulator_for_lesson("sensors", "generate_sensor_data.py", []):
            pass

    advice = str(refused.value)
    assert f"Spark reads {HDFS}/data/sensor_readings, which those files never reach" in advice
    assert (
        f"'hdfs dfs -put {paths.display(paths.SENSOR_DIR)}/* {HDFS}/data/sensor_readings/'"
        in advice
    )
    assert "--no-simulator" in advice and "Kafka lessons" in advice


def test_with_no_simulator_the_learner_brings_the_input(on_hdfs, capsys):
    with simulators.simulator_for_lesson(
        "sensors", "generate_sensor_data.py", [], enabled=False, already_running=False
    ) as simulator:
        assert simulator.process is None
    assert "--no-simulator: start it yourself" in capsys.readouterr().out


def test_a_simulator_with_its_own_output_dir_is_named_by_it(on_hdfs):
    folder = paths.output_for("17_ecommerce_pipeline", "events")
    with pytest.raises(
        CourseError, match=f"Spark reads {HDFS}/output/17_ecommerce_pipeline/events,"
    ):
        with simulators.simulator_for_lesson(
            "ecommerce", "generate_ecommerce_events.py", ["--output-dir", str(folder)]
        ):
            pass


def test_kafka_and_socket_simulators_are_not_refused(on_hdfs, monkeypatch):
    started = []
    monkeypatch.setattr(
        simulators, "start_simulator", lambda *args: started.append(args[1]) or None
    )
    monkeypatch.setattr(simulators, "stop_process", lambda process: None)
    with simulators.simulator_for_lesson(
        "kafka_producer", "kafka_producer.py", [], already_running=False
    ):
        pass
    assert started == ["kafka_producer.py"]


def test_a_scenario_that_python_writes_is_refused_before_spark_reads_it(on_hdfs):
    with pytest.raises(
        CourseError, match=r"This scenario writes its files into .* but with the storage hdfs://"
    ):
        microbatch.stream_batches(
            None, paths.output_for("07_watermarking", "state") / "input", schema=None
        )


class FakeFileSystem:
    """The JVM side of storage.delete: Path(address).getFileSystem(conf).delete(path, True)."""

    def __init__(self, existing=(), failure=None):
        self.existing, self.failure, self.deleted = set(existing), failure, []

    def spark(self):
        def hadoop_path(address):
            if self.failure:
                raise self.failure
            return SimpleNamespace(address=address, getFileSystem=lambda conf: self)

        jvm = SimpleNamespace(
            org=SimpleNamespace(
                apache=SimpleNamespace(hadoop=SimpleNamespace(fs=SimpleNamespace(Path=hadoop_path)))
            )
        )
        return SimpleNamespace(_jvm=jvm, _jsc=SimpleNamespace(hadoopConfiguration=lambda: None))

    def delete(self, path, recursive):
        self.deleted.append((path.address, recursive))
        return path.address in self.existing


def test_reset_on_remote_storage_deletes_through_the_jvm(on_hdfs, capsys):
    args = SimpleNamespace(checkpoint_dir=None)
    fs = FakeFileSystem(existing={f"{HDFS}/checkpoints/03_file_streaming"})

    runner.reset_lesson("03_file_streaming", args)  # before the session: nothing local to delete
    assert fs.deleted == [] and capsys.readouterr().out == ""
    runner.reset_lesson("03_file_streaming", args, fs.spark())

    assert fs.deleted == [
        (f"{HDFS}/checkpoints/03_file_streaming", True),
        (f"{HDFS}/output/03_file_streaming", True),
    ]
    assert capsys.readouterr().out == f"--reset: deleted {HDFS}/checkpoints/03_file_streaming\n"


def test_reset_that_cannot_reach_the_store_names_the_command(on_hdfs):
    fs = FakeFileSystem(failure=RuntimeError('No FileSystem for scheme "hdfs"\n\tat org.apache...'))

    with pytest.raises(CourseError) as refused:
        storage.delete(fs.spark(), paths.checkpoint_for("03_file_streaming"))

    assert str(refused.value) == (
        f"--reset could not delete {HDFS}/checkpoints/03_file_streaming through Spark "
        '(No FileSystem for scheme "hdfs"). Delete it yourself, e.g. '
        f"'hdfs dfs -rm -r -f {HDFS}/checkpoints/03_file_streaming' (or your "
        "object store's own tool), then run the lesson again without --reset."
    )


def test_the_shipped_catalogue_stays_local_with_remote_storage(on_hdfs):
    # A copy that Python wrote under output/ is refused: lesson 09's test of read_catalogue_csv.
    assert not paths.is_remote(paths.PRODUCTS_CSV)
