"""Lesson 18: the shop pipeline declared for spark-pipelines.

Without a JVM: the run's folder (spec copy, the command's JVM options), the session's Spark
Connect configuration, the command line, the lines shown from the command's output, the advice
on a failure, and Ctrl-C stopping the command's whole process group. With the real command: one
smoke run of the lesson as a learner runs it (dry-run, run, new files, run again, each command
against the lesson's own session with one JVM of its own), whose gold tables are checked exactly
against figures computed here in plain Python from the simulator's events.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import lesson18_pipeline_runner as pipelines
import pytest

from conftest import load_lesson, prose, run_script

lesson = load_lesson("18_declarative_pipeline")


def pipeline_in(tmp_path: Path) -> pipelines.Pipeline:
    return pipelines.Pipeline("shop", home=tmp_path / "output", storage=tmp_path / "checkpoints")


def test_prepare_writes_a_spec_with_this_runs_storage_next_to_a_copy_of_the_definitions(tmp_path):
    from pyspark.pipelines.cli import load_pipeline_spec

    pipeline = pipeline_in(tmp_path)
    pipelines.prepare(pipeline)
    spec = load_pipeline_spec(pipeline.spec)
    assert (spec.name, spec.storage) == ("shop", (tmp_path / "checkpoints").resolve().as_uri())
    assert [library.include for library in spec.libraries] == ["transformations/**/*"]
    assert spec.configuration == {}  # none given: none written
    pipeline.configuration = {"shop.events_dir": "/a folder/with: a colon"}
    pipelines.prepare(pipeline)
    assert load_pipeline_spec(pipeline.spec).configuration == {
        "shop.events_dir": "/a folder/with: a colon"
    }
    copied = sorted(path.name for path in (pipeline.spec.parent / "transformations").iterdir())
    assert copied == ["bronze.py", "gold.sql", "silver.py"]
    # The command's own JVM: spark-class reads its options from SPARK_CONF_DIR/java-opts.
    assert sorted(path.name for path in pipeline.conf_dir.iterdir()) == ["java-opts"]
    java_options = (pipeline.conf_dir / "java-opts").read_text().split()
    assert "-XX:TieredStopAtLevel=1" in java_options and java_options[0].startswith(
        "-Dlog4j2.configurationFile="
    )


def test_what_the_lesson_says_sdp_declares_is_in_pyspark_s_pipelines_api():
    """Section 6 names these; a pyspark that drops or renames one makes this fail first."""
    import inspect

    from pyspark import pipelines as dp
    from pyspark.pipelines import cli

    assert {
        "create_sink",
        "append_flow",
        "create_streaming_table",
        "create_auto_cdc_flow",
        "temporary_view",
    } <= set(dp.__all__)
    # A sink is a name, a format and its options: no Python function to call per batch.
    assert list(inspect.signature(dp.create_sink).parameters) == ["name", "format", "options"]
    assert "target" in inspect.signature(dp.append_flow).parameters
    assert {"target", "source", "keys", "sequence_by", "apply_as_deletes"} <= set(
        inspect.signature(dp.create_auto_cdc_flow).parameters
    )
    # run --full-refresh t1,t2 / --full-refresh-all; init --name NAME.
    assert {"full_refresh", "full_refresh_all"} <= set(inspect.signature(cli.run).parameters)
    assert list(inspect.signature(cli.init).parameters) == ["name"]


def test_the_lessons_session_serves_spark_connect_with_the_pipelines_catalog(tmp_path):
    pipeline = pipeline_in(tmp_path)
    conf = pipelines.server_conf(pipeline)
    assert conf["spark.plugins"] == "org.apache.spark.sql.connect.SparkConnectPlugin"
    assert (
        conf["spark.connect.grpc.binding.address"],
        conf["spark.connect.grpc.binding.port"],
    ) == ("127.0.0.1", str(pipeline.port))
    assert conf["spark.connect.authenticate.token"] == pipeline.token != pipeline_in(tmp_path).token
    # A second run fails LOCATION_ALREADY_EXISTS without it.
    assert conf["spark.sql.catalogImplementation"] == "hive"
    # Never a bare path.
    assert conf["spark.sql.warehouse.dir"] == f"file:{pipeline.warehouse.resolve()}"
    assert (
        f"databaseName={(pipeline.home / 'metastore_db').resolve()};"
        in conf["spark.hadoop.javax.jdo.option.ConnectionURL"]
    )


def test_the_command_is_the_venvs_spark_pipelines_sent_to_the_lessons_endpoint(tmp_path):
    pipeline = pipeline_in(tmp_path)
    line = pipelines.command(pipeline, "dry-run")
    assert line == [
        str(Path(sys.executable).parent / "spark-pipelines"),
        "dry-run",
        "--spec",
        str(pipeline.spec),
        "--remote",
        f"sc://localhost:{pipeline.port}",
    ]
    assert Path(line[0]).is_file()
    environment = pipelines.environment(pipeline)
    assert environment["SPARK_CONF_DIR"] == str(pipeline.conf_dir.resolve())
    # The definitions import common.
    assert environment["PYTHONPATH"].split(":")[0].endswith("streaming_tutorial")
    assert environment["SPARK_CONNECT_AUTHENTICATE_TOKEN"] == pipeline.token
    assert pipeline.token not in pipelines.shell_line(pipeline, "run")  # what the lesson prints


def test_only_the_lines_about_the_pipeline_are_shown_and_every_flows_last_state_is_kept():
    flows: dict[str, str] = {}
    lines = [
        "2026-01-15 10:30:00: Loading pipeline spec from /x/spark-pipeline.yml...",
        "17:11:57 WARN ObjectStore: Failed to get database default, "
        "returning NoSuchObjectException",
        "2026-01-15 10:30:01: Importing /x/transformations/bronze.py...",
        "2026-01-15 10:30:01: Registering SQL file /x/transformations/gold.sql...",
        "2026-01-15 10:30:01: Flow 'spark_catalog.default.silver_events' is EXCLUDED.",
        "2026-01-15 10:30:02: Flow spark_catalog.default.bronze_events is RUNNING.",
        "2026-01-15 10:30:03: Flow spark_catalog.default.bronze_events has COMPLETED.",
        "2026-01-15 10:30:04: Flow spark_catalog.default.gold_funnel has FAILED: division by zero.",
        "2026-01-15 10:30:05: Run is COMPLETED.",
    ]
    shown = [pipelines.event_to_show(line, flows) for line in lines]
    assert [text for text in shown if text] == [
        "  10:30:01  read bronze.py",
        "  10:30:01  read gold.sql",
        "  10:30:03  bronze_events: completed",
        "  10:30:04  gold_funnel: failed: division by zero",
        "  10:30:05  Run is COMPLETED.",
    ]
    assert flows == {
        "silver_events": "EXCLUDED",  # a run with --refresh bronze_events,gold_funnel
        "bronze_events": "COMPLETED",
        "gold_funnel": "FAILED",
    }


def test_a_failure_names_the_cause_spark_pipelines_own_words_and_the_log(tmp_path):
    output = (
        "Traceback (most recent call last):\n"
        '  File "/x/transformations/silver.py", line 18, in parsed_lines\n'
        "pyspark.errors.exceptions.connect.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] "
        "The table or view `bronz` cannot be found.\n"
    )
    advice = pipelines.failure_advice(output, tmp_path / "run-1.log")
    assert advice.startswith("A Python error: in one of the pipeline's files")
    assert "[TABLE_OR_VIEW_NOT_FOUND] The table or view `bronz` cannot be found." in advice
    assert str(tmp_path / "run-1.log") in advice
    assert pipelines.failure_advice(
        "ModuleNotFoundError: No module named 'yaml'", tmp_path / "x.log"
    ).startswith("spark-pipelines needs the [pipelines] extra")


def test_ctrl_c_stops_the_command_and_every_process_it_started(tmp_path, monkeypatch):
    # A stand-in for spark-pipelines: it prints a pipeline line, starts a child (a JVM's place),
    # and waits.
    script = tmp_path / "fake.py"
    script.write_text(
        textwrap.dedent("""\
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        print("2026-01-15 10:30:00: Run is RUNNING.", flush=True)
        time.sleep(300)
        """)
    )
    monkeypatch.setattr(
        pipelines, "command", lambda pipeline, action: [sys.executable, str(script)]
    )
    groups = []

    def press_ctrl_c(text: str) -> None:
        groups.append(text)
        raise KeyboardInterrupt

    popen = pipelines.subprocess.Popen
    made = []

    def popen_and_keep(*args, **kwargs):
        process = popen(*args, **kwargs)
        made.append(process)
        return process

    monkeypatch.setattr(pipelines.subprocess, "Popen", popen_and_keep)
    with pytest.raises(KeyboardInterrupt):
        pipelines.run(pipeline_in(tmp_path), "run", show=press_ctrl_c)
    assert groups == ["  10:30:00  Run is RUNNING."]
    assert made[0].returncode is not None  # the command ended and was reaped...
    assert pipelines.group_members(made[0].pid) == []  # ...and so did the child it started


# --- the real command: one run of the lesson ------------------------------------------------------

FIVE_MINUTES = timedelta(minutes=5)  # gold_category_revenue's window
TWO_MINUTES = timedelta(minutes=2)  # gold_funnel's window
EVENTS = 100  # 5 files of 20 events: 3 before the first run, 2 before the second


def window_start(moment: datetime, size: timedelta) -> datetime:
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    return moment - (moment - epoch) % size


def expected_gold() -> tuple[list[tuple], list[tuple]]:
    """Both gold tables computed in plain Python from the simulator's events.

    With the lesson's seed and start time.
    """
    generator = load_generator()
    events = generator.make_ecommerce_events(
        EVENTS, seed=42, base_time=datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)
    )
    revenue = defaultdict(list)
    funnel = defaultdict(lambda: [0, 0, 0])
    for event in events:
        moment = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00"))
        if event["event_type"] == "purchase":
            revenue[(window_start(moment, FIVE_MINUTES), event["category"])].append(event)
        funnel[window_start(moment, TWO_MINUTES)][
            ("view", "cart", "purchase").index(event["event_type"])
        ] += 1
    revenue_rows = sorted(
        (
            start,
            start + FIVE_MINUTES,
            category,
            len(bought),
            round(sum(e["price"] * e["quantity"] for e in bought), 2),
            round(sum(e["price"] for e in bought) / len(bought), 2),
        )
        for (start, category), bought in revenue.items()
    )
    funnel_rows = sorted((start, start + TWO_MINUTES, *counts) for start, counts in funnel.items())
    return revenue_rows, funnel_rows


def load_generator():
    import importlib.util

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location(
        "generate_ecommerce_events", ROOT / "data_generators" / "generate_ecommerce_events.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_gold(warehouse: Path, table: str) -> list[tuple]:
    """A gold table's rows, read from its Parquet files without Spark; times in UTC."""
    import pyarrow.parquet as pq

    rows = pq.read_table(warehouse / table).to_pylist()
    return sorted(
        tuple(
            value.replace(tzinfo=timezone.utc)
            if isinstance(value, datetime) and value.tzinfo is None
            else value
            for value in row.values()
        )
        for row in rows
    )


# The full-length run (about a minute on 2 cores) belongs to the crash lane
# ('python course.py test -m crash', which CI runs) and to the tour, not to every test run.
@pytest.mark.smoke
@pytest.mark.crash
def test_the_lesson_runs_the_pipeline_twice_and_its_gold_tables_hold_the_exact_figures(course_home):
    result = run_script(
        "streaming_tutorial/18_declarative_pipeline.py", home=course_home, timeout=400
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = prose(result.stdout)
    assert "Run is COMPLETED." in out
    assert "run 1 read: events-0001.json, events-0002.json, events-0003.json" in out
    # Only the new files.
    assert "run 2 read: events-0004.json, events-0005.json, events-typos.json" in out
    table = [line.split() for line in result.stdout.split("after run 2\n", 1)[1].splitlines()[:5]]
    assert table == [
        ["bronze_events", "60", "104"],
        ["silver_events", "60", "100"],
        ["silver_quarantine", "0", "4"],
        ["gold_category_revenue", "4", "4"],
        ["gold_funnel", "2", "3"],
    ]
    for reason in (
        "not a JSON object",
        "price below 0",
        "missing user_id",
        "user_id is not a string",
    ):
        assert f"|events-typos.json|{reason}" in result.stdout
    assert "gold_category_revenue: " in out and out.count("equal: True") == 2
    # What SDP declares beyond this pipeline, as pyspark 4.2's pipelines API has it.
    assert (
        "a pipeline can write to Kafka, or any format writeStream knows, but not to a Python "
        "function" in out
    )
    # Each command ran one JVM, its launcher: the pipeline ran in the lesson's session, not in a
    # Spark of its own.
    assert re.findall(r"(dry-run|run) \d+ s \(\d+ CPU-s, (\d+) JVM\)", out) == [
        ("dry-run", "1"),
        *[("run", "1")] * 4,  # two runs, each bronze then the tables that read it
    ]
    # Its own input folder: the shared one other lessons read got nothing.
    events = course_home / "output" / "18_declarative_pipeline" / "events"
    assert sorted(path.name for path in events.glob("events-*.json")) == [
        f"events-000{n}.json" for n in range(1, 6)
    ] + ["events-typos.json"]
    assert not list((course_home / "data" / "ecommerce_events").glob("*.json"))
    revenue, funnel = expected_gold()
    warehouse = course_home / "output" / "18_declarative_pipeline" / "warehouse"
    assert read_gold(warehouse, "gold_category_revenue") == revenue
    assert read_gold(warehouse, "gold_funnel") == funnel


def test_the_jvm_count_leaves_out_the_brief_launcher_jvm_spark_class_runs_first(tmp_path):
    for pid, command in (
        ("1", b"java\0-cp\0jars/*\0org.apache.spark.launcher.Main\0"),
        ("2", b"java\0-cp\0jars/*\0org.apache.spark.deploy.SparkPipelines\0"),
    ):
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "cmdline").write_bytes(command)
    assert pipelines.CpuMeter._what(tmp_path / "1", "java") == "launcher"
    assert pipelines.CpuMeter._what(tmp_path / "2", "java") == "java"
    # Gone before its command line was read.
    assert pipelines.CpuMeter._what(tmp_path / "3", "java") == "java"
    assert pipelines.CpuMeter._what(tmp_path / "2", "python3") == "python3"
