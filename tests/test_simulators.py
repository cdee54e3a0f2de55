"""The simulators: reproducible, schema-true records; atomic files; the socket server's protocol."""

from __future__ import annotations

import csv
import json
import os
import pty
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter
from datetime import datetime, timedelta

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from common import config, paths, schemas
from common.files import json_lines, staging_dir_for
from conftest import ROOT, run_script
from data_generators import generate_ecommerce_events, generate_sensor_data, simulate_file_data, socket_server

BASE = "2025-01-15T10:30:00Z"
# (script, folder under data/, the generator module, its schema)
FILE_SIMULATORS = {
    "transactions": ("data_generators/simulate_file_data.py", "input_stream", simulate_file_data,
                     schemas.TRANSACTION_SCHEMA),
    "ecommerce": ("data_generators/generate_ecommerce_events.py", "ecommerce_events", generate_ecommerce_events,
                  schemas.ECOMMERCE_EVENT_SCHEMA),
    "sensors": ("data_generators/generate_sensor_data.py", "sensor_readings", generate_sensor_data,
                schemas.SENSOR_SCHEMA),
}
MAKERS = {
    "transactions": simulate_file_data.make_transactions,
    "ecommerce": generate_ecommerce_events.make_ecommerce_events,
    "sensors": generate_sensor_data.make_sensor_readings,
}


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def folder_bytes(folder) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


# --- reproducibility -------------------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.parametrize("name", FILE_SIMULATORS)
def test_same_seed_same_files_different_seed_different_files(name, tmp_path):
    script, folder, _, _ = FILE_SIMULATORS[name]
    outputs = {}
    for run, seed in (("first", "7"), ("second", "7"), ("other_seed", "8")):
        home = tmp_path / run
        result = run_script(script, "--count", "2", "--interval", "0", "--seed", seed, "--base-time", BASE,
                            home=home, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout.count("wrote ") == 2
        outputs[run] = folder_bytes(home / "data" / folder)

    assert len(outputs["first"]) == 2
    assert outputs["first"] == outputs["second"]
    assert outputs["first"].keys() == outputs["other_seed"].keys()
    assert outputs["first"] != outputs["other_seed"]


@pytest.mark.parametrize("name", MAKERS)
def test_records_are_a_pure_function_of_their_index(name):
    make = MAKERS[name]

    assert make(10) + make(15, start=10) == make(25)
    assert make(5, seed=1) != make(5, seed=2)


@pytest.mark.smoke
def test_a_second_run_continues_the_numbering(course_home):
    for _ in range(2):
        result = run_script("data_generators/simulate_file_data.py", "--count", "2", "--interval", "0",
                            "--base-time", BASE, home=course_home)
        assert result.returncode == 0, result.stderr

    folder = course_home / "data" / "input_stream"
    assert sorted(path.name for path in folder.iterdir()) == [f"transactions-{n:04d}.json" for n in (1, 2, 3, 4)]
    ids = [json.loads(line)["transaction_id"] for path in sorted(folder.iterdir())
           for line in path.read_text().splitlines()]
    assert ids == [f"TXN-{n:06d}" for n in range(1, 41)]
    # The second run continued the same sequence: identical to one run of four files.
    assert [json.loads(line) for line in (folder / "transactions-0004.json").read_text().splitlines()] == \
        simulate_file_data.make_transactions(10, base_time=parse_time(BASE), start=30)


# --- the records match the schemas -----------------------------------------------------------


@pytest.mark.parametrize("name", FILE_SIMULATORS)
def test_records_parse_with_the_course_schema_without_nulls(name, spark, tmp_path):
    _, _, _, schema = FILE_SIMULATORS[name]
    records = MAKERS[name](60)
    assert [list(record) for record in records] == [schema.fieldNames()] * len(records)
    (tmp_path / "data.json").write_text(json_lines(records))

    with_corrupt = StructType([*schema.fields, StructField("_corrupt_record", StringType())])
    df = spark.read.schema(with_corrupt).json(str(tmp_path / "data.json")).cache()
    any_null = F.greatest(*[F.col(field).isNull().cast("int") for field in schema.fieldNames()])

    assert df.count() == 60
    assert df.filter(F.col("_corrupt_record").isNotNull()).count() == 0
    assert df.filter(any_null == 1).count() == 0
    df.unpersist()


def test_transactions_look_like_payments():
    records = simulate_file_data.make_transactions(200)
    categories = set(simulate_file_data.product_categories())

    assert [r["transaction_id"] for r in records[:3]] == ["TXN-000001", "TXN-000002", "TXN-000003"]
    assert all(r["amount"] > 0 and round(r["amount"], 2) == r["amount"] for r in records)
    assert {r["category"] for r in records} == categories == {"Electronics", "Sports", "Home", "Fashion"}
    times = [parse_time(r["timestamp"]) for r in records]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert times[0] - config.BASE_EVENT_TIME < timedelta(seconds=simulate_file_data.SECONDS_BETWEEN_TRANSACTIONS)


def test_ecommerce_events_follow_the_funnel():
    events = generate_ecommerce_events.make_ecommerce_events(500)
    products = {p["product_id"]: p for p in generate_ecommerce_events.load_products()}
    kinds = Counter(event["event_type"] for event in events)

    assert set(kinds) == {"view", "cart", "purchase"}
    assert kinds["view"] > kinds["cart"] > kinds["purchase"] > 0
    assert parse_time(events[0]["timestamp"]) == config.BASE_EVENT_TIME
    gaps = [parse_time(b["timestamp"]) - parse_time(a["timestamp"]) for a, b in zip(events, events[1:])]
    assert all(timedelta(seconds=1) <= gap <= timedelta(seconds=4) for gap in gaps)
    viewed, carted = set(), set()
    for event in events:
        product = products[event["product_id"]]
        assert (event["product_name"], event["category"], event["price"]) == \
            (product["product_name"], product["category"], product["list_price"])
        shopper_and_product = (event["user_id"], event["product_id"])
        if event["event_type"] == "view":
            assert event["quantity"] == 1
            viewed.add(shopper_and_product)
        elif event["event_type"] == "cart":  # only what the same shopper viewed
            assert shopper_and_product in viewed and 1 <= event["quantity"] <= 3
            carted.add((*shopper_and_product, event["quantity"]))
        else:  # a purchase buys what the same shopper put in the cart, in the same quantity
            assert (*shopper_and_product, event["quantity"]) in carted


def test_products_csv_matches_the_schema(spark):
    with open(paths.PRODUCTS_CSV, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == schemas.PRODUCT_SCHEMA.fieldNames()

    df = spark.read.schema(schemas.PRODUCT_SCHEMA).option("header", True).option("mode", "FAILFAST").csv(
        str(paths.PRODUCTS_CSV))
    categories = Counter(row.category for row in df.collect())

    assert df.count() == 12 and df.dropna().count() == 12
    assert categories == {"Electronics": 3, "Sports": 3, "Home": 3, "Fashion": 3}
    assert [row.product_id for row in df.orderBy("product_id").collect()] == [f"P{n:03d}" for n in range(1, 13)]


# --- sensor readings: disorder and lateness ----------------------------------------------------


def test_late_readings_are_older_than_readings_that_arrived_before_them():
    readings = generate_sensor_data.make_sensor_readings(400, late_fraction=0.1, max_lateness_seconds=60,
                                                         disorder_seconds=5)
    assert [r["reading_id"] for r in readings] == list(range(1, 401))  # arrival order

    newest_so_far = None
    behind = []  # how far each reading's event time is behind the newest one that arrived before it
    for reading in readings:
        taken = parse_time(reading["event_time"])
        if newest_so_far is not None:
            behind.append((newest_so_far - taken).total_seconds())
        newest_so_far = taken if newest_so_far is None else max(newest_so_far, taken)

    very_late = [seconds for seconds in behind if seconds > 5]
    assert 20 <= len(very_late) <= 60  # about 10% of 400
    assert max(behind) <= 60
    assert sum(seconds > 30 for seconds in behind) >= 5  # a 30 s watermark drops some of them
    assert any(seconds > 0 for seconds in behind if seconds <= 5)  # and mild disorder exists too
    assert {r["sensor_id"] for r in readings} == {"SENSOR-0", "SENSOR-1", "SENSOR-2"}


def test_readings_in_order_when_asked():
    readings = generate_sensor_data.make_sensor_readings(100, late_fraction=0, disorder_seconds=0)
    times = [parse_time(r["event_time"]) for r in readings]

    assert times == [config.BASE_EVENT_TIME + timedelta(seconds=n) for n in range(100)]
    # Only the times depend on the lateness options: the same sensors and temperatures.
    default = generate_sensor_data.make_sensor_readings(100)
    assert [(r["sensor_id"], r["temperature"]) for r in readings] == \
        [(r["sensor_id"], r["temperature"]) for r in default]


def test_every_reading_is_very_late_when_late_fraction_is_one():
    readings = generate_sensor_data.make_sensor_readings(50, late_fraction=1, max_lateness_seconds=20,
                                                         disorder_seconds=5)
    delays = [(config.BASE_EVENT_TIME + timedelta(seconds=n) - parse_time(r["event_time"])).total_seconds()
              for n, r in enumerate(readings)]

    assert all(6 <= delay <= 20 for delay in delays)
    assert generate_sensor_data.count_late(readings, config.BASE_EVENT_TIME, 5) == 50


# --- atomic files and malformed lines ----------------------------------------------------------


@pytest.mark.smoke
def test_the_watched_folder_only_ever_holds_complete_files(course_home):
    folder = course_home / "data" / "input_stream"
    folder.mkdir(parents=True)
    records_per_file = 300
    command = [sys.executable, str(ROOT / "data_generators/simulate_file_data.py"), "--count", "40",
               "--interval", "0", "--records-per-file", str(records_per_file)]
    env = {**os.environ, "STREAMING_COURSE_HOME": str(course_home)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    problems, checked = [], set()
    while True:
        finished = process.poll() is not None
        # A file is checked when it first appears: that is when a non-atomic write shows half a file.
        for path in sorted(folder.iterdir()):
            if path.name in checked:
                continue
            text = path.read_text()
            if not simulate_file_data.FILE_PATTERN.match(path.name) or not text.endswith("\n") \
                    or len(text.splitlines()) != records_per_file:
                problems.append((path.name, len(text)))
            checked.add(path.name)
        if finished:
            break
    stdout, stderr = process.communicate()

    assert process.returncode == 0, stderr
    assert problems == []
    assert len(checked) == 40
    staging = staging_dir_for(folder)
    assert staging.parent == folder.parent and staging != folder
    assert list(staging.iterdir()) == []  # everything staged was renamed into the folder


@pytest.mark.smoke
@pytest.mark.parametrize("name", FILE_SIMULATORS)
def test_files_written_back_to_back_still_have_increasing_mtimes(name, course_home):
    script, folder, _, _ = FILE_SIMULATORS[name]
    per_file = {"transactions": "--records-per-file", "ecommerce": "--events-per-file",
                "sensors": "--readings-per-file"}[name]
    result = run_script(script, "--count", "30", "--interval", "0", per_file, "1", home=course_home)
    assert result.returncode == 0, result.stderr

    # The file source reads new files in modification-time order, compared in milliseconds;
    # tiny files written with --interval 0 would otherwise tie and be read out of order.
    mtimes = [path.stat().st_mtime_ns for path in sorted((course_home / "data" / folder).iterdir())]
    assert len(mtimes) == 30
    assert all(later - earlier >= 1_000_000 for earlier, later in zip(mtimes, mtimes[1:]))


def test_malformed_every_breaks_exactly_every_nth_line():
    text = simulate_file_data.render_file(simulate_file_data.make_transactions(10), malformed_every=4)
    broken = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            json.loads(line)
        except json.JSONDecodeError:
            broken.append(number)

    assert broken == [4, 8]
    assert simulate_file_data.render_file(simulate_file_data.make_transactions(10)) == \
        json_lines(simulate_file_data.make_transactions(10))


@pytest.mark.smoke
def test_malformed_lines_are_corrupt_records_for_spark(spark, course_home):
    result = run_script("data_generators/simulate_file_data.py", "--count", "2", "--interval", "0",
                        "--malformed-every", "3", "--base-time", BASE, home=course_home)
    assert result.returncode == 0, result.stderr

    with_corrupt = StructType([*schemas.TRANSACTION_SCHEMA.fields, StructField("_corrupt_record", StringType())])
    df = spark.read.schema(with_corrupt).json(str(course_home / "data" / "input_stream")).cache()
    corrupt = df.filter(F.col("_corrupt_record").isNotNull())

    assert df.count() == 20
    assert corrupt.count() == 6  # lines 3, 6 and 9 of each file
    assert df.filter(F.col("_corrupt_record").isNull() & F.col("transaction_id").isNotNull()).count() == 14
    df.unpersist()


# --- the socket server --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((config.SOCKET_HOST, 0))
        return probe.getsockname()[1]


class SocketServer:
    """socket_server.py in a subprocess; ``wait_until_listening`` reads its stdout, no sleeping."""

    def __init__(self, home, *args, stdin_text=None):
        self.port = free_port()
        env = {**os.environ, "STREAMING_COURSE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "data_generators/socket_server.py"), "--port", str(self.port), *args],
            env=env, stdin=subprocess.DEVNULL if stdin_text is None else subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if stdin_text is not None:
            self.process.stdin.write(stdin_text)
            self.process.stdin.close()
            self.process.stdin = None  # communicate() must not touch it again
        self.output: list[str] = []

    def wait_until_listening(self) -> None:
        for line in self.process.stdout:
            self.output.append(line)
            if line.startswith("Waiting for Spark to connect"):
                return
        raise AssertionError("the server exited before listening: " + self.process.stderr.read())

    def read_lines(self, count: int) -> list[str]:
        with socket.create_connection((config.SOCKET_HOST, self.port), timeout=60) as client:
            reader = client.makefile("r", encoding="utf-8")
            return [reader.readline() for _ in range(count)]

    def finish(self) -> tuple[int, str, str]:
        stdout, stderr = self.process.communicate(timeout=60)
        return self.process.returncode, "".join(self.output) + stdout, stderr


@pytest.mark.smoke
def test_socket_server_sends_a_files_lines_exactly(course_home, tmp_path):
    script = tmp_path / "lines.txt"
    script.write_text("hello spark\nhello streaming\n\nthe end\n")
    server = SocketServer(course_home, "--file", str(script), "--interval", "0")
    server.wait_until_listening()

    lines = server.read_lines(4)
    code, stdout, stderr = server.finish()

    assert lines == ["hello spark\n", "hello streaming\n", "\n", "the end\n"]
    assert code == 0, stderr
    assert f"Waiting for Spark to connect on {config.SOCKET_HOST}:{server.port}" in stdout
    assert "sent: hello streaming" in stdout and "Spark disconnected." in stdout
    assert "Traceback" not in stderr


@pytest.mark.smoke
def test_socket_server_demo_ignores_a_port_check_and_can_repeat(course_home):
    server = SocketServer(course_home, "--demo", "--interval", "0", "--count", "8")
    server.wait_until_listening()
    socket.create_connection((config.SOCKET_HOST, server.port)).close()  # "is it up?" from a lesson

    lines = server.read_lines(8)
    code, _, stderr = server.finish()

    demo = list(socket_server.DEMO_SENTENCES)
    assert [line.rstrip("\n") for line in lines] == demo + demo[:2]
    assert code == 0
    assert "a port check, still waiting" in stderr


@pytest.mark.smoke
def test_socket_server_sends_piped_input_and_closes_after_linger(course_home):
    server = SocketServer(course_home, "--interval", "0", "--linger", "0", stdin_text="a b\nb c\n")
    server.wait_until_listening()

    with socket.create_connection((config.SOCKET_HOST, server.port), timeout=60) as client:
        received = client.makefile("r", encoding="utf-8").read()  # read() returns when the server closes
    code, stdout, _ = server.finish()

    assert received == "a b\nb c\n"
    assert code == 0
    assert "--linger 0: closing the connection." in stdout


@pytest.mark.smoke
def test_socket_server_on_a_busy_port_explains_and_exits_2(course_home):
    with socket.socket() as holder:
        holder.bind((config.SOCKET_HOST, 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run_script("data_generators/socket_server.py", "--demo", "--port", str(port), home=course_home,
                            timeout=60)

    assert result.returncode == socket_server.EXIT_PORT_BUSY == 2
    assert f"Port {port} on {config.SOCKET_HOST} is in use" in result.stderr
    assert "--port N" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.smoke
def test_socket_server_stops_cleanly_on_ctrl_c(course_home):
    server = SocketServer(course_home, "--demo")
    server.wait_until_listening()
    pid_file = course_home / ".runtime" / "socket.pid"
    assert pid_file.read_text() == str(server.process.pid)  # announce_running while it serves

    server.process.send_signal(signal.SIGINT)
    code, stdout, stderr = server.finish()

    assert code == 130
    assert "Stopped with Ctrl-C." in stdout
    assert "Traceback" not in stderr
    assert not pid_file.exists()


@pytest.mark.smoke
def test_socket_server_keep_serving_serves_the_next_client_again(course_home):
    server = SocketServer(course_home, "--demo", "--interval", "0", "--count", "2", "--keep-serving")
    server.wait_until_listening()

    first = server.read_lines(2)
    second = server.read_lines(2)
    server.process.terminate()  # how a lesson stops the simulator it started
    code, stdout, _ = server.finish()

    assert first == second == [line + "\n" for line in socket_server.DEMO_SENTENCES[:2]]
    assert stdout.count("--keep-serving: waiting for the next client.") >= 1
    assert code == 0


@pytest.mark.smoke
@pytest.mark.parametrize("stop, expected_code", [(signal.SIGINT, 130), (signal.SIGTERM, 0)], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("name", FILE_SIMULATORS)
def test_file_simulators_stop_cleanly_and_remove_their_pid_file(name, stop, expected_code, course_home):
    script, folder, _, _ = FILE_SIMULATORS[name]
    env = {**os.environ, "STREAMING_COURSE_HOME": str(course_home), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, str(ROOT / script), "--count", "3", "--interval", "60"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in process.stdout:  # the first file is written at once; then it waits 60 s
        if line.startswith("wrote "):
            break
    pid_files = list((course_home / ".runtime").glob("*.pid"))
    assert [path.read_text() for path in pid_files] == [str(process.pid)]

    process.send_signal(stop)  # Ctrl-C in its terminal, or a lesson stopping the simulator it started
    stdout, stderr = process.communicate(timeout=60)

    assert process.returncode == expected_code
    assert "Traceback" not in stderr
    assert not pid_files[0].exists()
    assert len(list((course_home / "data" / folder).iterdir())) == 1
    if stop == signal.SIGINT:
        assert "Stopped with Ctrl-C" in stdout


@pytest.mark.smoke
def test_socket_server_sends_what_a_person_types(course_home):
    leader, follower = pty.openpty()
    env = {**os.environ, "STREAMING_COURSE_HOME": str(course_home), "PYTHONUNBUFFERED": "1"}
    port = free_port()
    process = subprocess.Popen([sys.executable, str(ROOT / "data_generators/socket_server.py"), "--port", str(port)],
                               env=env, stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(follower)
    output = [process.stdout.readline()]
    assert output[0].startswith("Waiting for Spark to connect")

    with socket.create_connection((config.SOCKET_HOST, port), timeout=60) as client:
        os.write(leader, b"hello typed world\n\x04")  # a line, then Ctrl-D
        received = client.makefile("r", encoding="utf-8").readline()
    stdout, stderr = process.communicate(timeout=60)
    os.close(leader)

    assert received == "hello typed world\n"
    assert process.returncode == 0, stderr
    assert "> " in stdout and "sent: hello typed world" in stdout
