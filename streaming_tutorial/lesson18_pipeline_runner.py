"""Run a Spark Declarative Pipeline with the ``spark-pipelines`` command, as a learner would.

A pipeline is a folder: a spec (``spark-pipeline.yml``) and the files that declare its tables
(``.py`` with ``pyspark.pipelines`` decorators, ``.sql`` with ``CREATE ... TABLE/VIEW``). The
command reads them and sends the graph to a Spark Connect endpoint (``--remote sc://...``),
which updates every table. Here the endpoint is the lesson's own session: ``server_conf`` makes
it run the Spark Connect server as a plugin (as pyspark's ``remote("local")`` does), so every
command talks to the one JVM that is already up instead of starting a Spark of its own
(``--remote "local[2]"`` would: 12-21 CPU-s per command on 2 cores). What it needs from us:

- ``server_conf``, given to the session when it is created: the plugin, its port and token,
  the Hive catalog (without it a second ``run`` fails with LOCATION_ALREADY_EXISTS), the
  warehouse and metastore folders;
- a copy of the folder whose spec names this run's ``storage`` (it must be an absolute URI)
  and its ``configuration`` (what the definitions read with ``spark.conf.get``),
  and a ``SPARK_CONF_DIR`` whose ``java-opts`` gives the command's own (launcher) JVM the
  course's log4j configuration and JVM options (``prepare``);
- ``PYTHONPATH`` with ``streaming_tutorial/``, so the definitions can import ``common``, and
  the endpoint's token in ``SPARK_CONNECT_AUTHENTICATE_TOKEN`` (``environment``).

``run`` starts the command in a process group of its own, keeps its whole output in a log
file, shows the lines about the pipeline (flows, the run's state), and turns a failure into
advice. Ctrl-C stops the whole group (the command, its Python client and its JVM).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from common import paths
from common.session import DRIVER_JAVA_OPTIONS
from infra import checkpoints
from infra.errors import CourseError
from infra.processes import PROC, group_members, group_stats
from infra.simulators import free_port

PIPELINES_DIR = paths.LESSONS_DIR / "pipelines"
SPEC_NAME = "spark-pipeline.yml"
# The Spark Connect server inside the lesson's session (the plugin in pyspark's spark-connect
# jar), on loopback only. The client sends a token only over a channel it trusts: TLS, or one to
# "localhost".
CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
CONNECT_ADDRESS = "127.0.0.1"  # where the server listens
CONNECT_HOST = "localhost"  # and the name the command reaches it by
# Where the client (and the command) read the token.
TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
STOP_WAIT_SECONDS = 10  # after Ctrl-C: how long the JVMs get to shut down before SIGKILL
SAMPLE_SECONDS = 0.5  # how often the CPU time of the command's processes is read
LOG_TAIL_LINES = 12
# "2026-01-15 10:30:00: Flow spark_catalog.default.gold_funnel is RUNNING." (the CLI's event lines)
EVENT_LINE = re.compile(r"^\d{4}-\d\d-\d\d (\d\d:\d\d:\d\d): (.*)$")
# The name plain, in backticks, or whole in quotes ("Flow 'cat.db.t' is EXCLUDED.").
FLOW_LINE = re.compile(r"^Flow '?(?:[\w`]+\.)*`?(\w+)`?'? (?:is|has) (\w+)")
# Event lines not worth a learner's attention: the CLI's own steps before the run.
QUIET_EVENTS = (
    "Loading pipeline spec",
    "Creating Spark session",
    "Creating dataflow graph",
    "Registering graph elements",
    "Loading definitions",
    "Found ",
    "Starting run",
)
# A flow's last word. Not EXCLUDED: a run with --refresh excludes every other flow.
SHOWN_STATES = {"COMPLETED", "FAILED", "SKIPPED", "STOPPED"}


@dataclass
class Pipeline:
    """One pipeline of the course (``PIPELINES_DIR/name``) and the folder its runs use."""

    name: str
    home: Path  # what a run writes: the spec's copy, the warehouse, the metastore, the logs
    storage: Path  # the spec's storage: the checkpoints of the streaming tables
    # The Spark Connect endpoint's port, and the token it asks for.
    port: int = field(default_factory=lambda: free_port(CONNECT_ADDRESS))
    token: str = field(default_factory=lambda: uuid.uuid4().hex, repr=False)
    # The spec's configuration: Spark confs of the command's session, which definitions read with
    # spark.conf.get (the lesson's input folder, so the definitions name no folder of their own).
    configuration: dict[str, str] = field(default_factory=dict)

    @property
    def remote(self) -> str:
        """The endpoint, as ``--remote`` takes it."""
        return f"sc://{CONNECT_HOST}:{self.port}"

    @property
    def source(self) -> Path:
        return PIPELINES_DIR / self.name

    @property
    def spec(self) -> Path:
        return self.home / "pipeline" / SPEC_NAME

    @property
    def warehouse(self) -> Path:
        return self.home / "warehouse"

    @property
    def conf_dir(self) -> Path:
        return self.home / "conf"

    @property
    def logs(self) -> Path:
        return self.home / "logs"


@dataclass
class RunResult:
    action: str
    seconds: float
    # CPU time of every process of the command (None where /proc is missing).
    cpu_seconds: float | None
    processes: int  # how many processes it started (the Python client, its JVMs)
    jvms: int
    flows: dict[str, str] = field(default_factory=dict)  # flow -> its last state
    log: Path | None = None


class PipelineError(CourseError):
    """spark-pipelines failed: the message says what to do, with the command's own words."""


def prepare(pipeline: Pipeline) -> None:
    """Copy the pipeline's folder next to a spec with this run's storage and configuration.

    Also write the JVM options of the command's own JVM.
    """
    target = pipeline.spec.parent
    if target.exists():
        shutil.rmtree(target)  # a fresh copy each time: a learner's edit of the source is picked up
    shutil.copytree(pipeline.source, target, ignore=shutil.ignore_patterns("__pycache__"))
    spec = pipeline.spec.read_text(encoding="utf-8")
    # Remote storage as paths.uri gives it; a local folder as a URI with %-escapes, which the
    # spec needs.
    where = (
        paths.uri(pipeline.storage)
        if paths.is_remote(pipeline.storage)
        else pipeline.storage.resolve().as_uri()
    )
    storage = f"storage: {where}"
    spec = re.sub(r"(?m)^storage:.*$", storage, spec, count=1)
    if pipeline.configuration:  # a JSON string is a YAML string: quoted, whatever the path holds
        spec += "configuration:\n" + "".join(
            f"  {json.dumps(key)}: {json.dumps(value)}\n"
            for key, value in pipeline.configuration.items()
        )
    pipeline.spec.write_text(spec, encoding="utf-8")
    pipeline.storage.mkdir(parents=True, exist_ok=True)
    if pipeline.conf_dir.exists():
        # An earlier version's spark-defaults.conf would reach the command.
        shutil.rmtree(pipeline.conf_dir)
    pipeline.conf_dir.mkdir(parents=True)
    # The command's own JVM (it runs no Spark, only the client's gateway): quiet, and cheap to
    # start. spark-class reads its options from this file; spark.driver.extraJavaOptions would
    # not reach it.
    (pipeline.conf_dir / "java-opts").write_text(
        " ".join(DRIVER_JAVA_OPTIONS) + "\n", encoding="utf-8"
    )


def files_read(pipeline: Pipeline, table: str) -> set[str]:
    """The input files a streaming table's checkpoint (under the spec's storage) says it read."""
    read: set[str] = set()
    for checkpoint in checkpoints.find(pipeline.storage / "_checkpoints"):
        if table in checkpoint.parts:
            read |= checkpoints.source_files(checkpoint)
    return read


def costs(*runs: RunResult) -> str:
    """What each command took: "dry-run 7 s (3 CPU-s, 1 JVM), run 12 s ...".

    No CPU-s where /proc is missing.
    """
    return ", ".join(
        f"{run.action} {run.seconds:.0f} s"
        + (f" ({run.cpu_seconds:.0f} CPU-s, {run.jvms} JVM)" if run.cpu_seconds else "")
        for run in runs
    )


def server_conf(pipeline: Pipeline) -> dict[str, str]:
    """The confs that make the lesson's session the pipeline's Spark Connect endpoint.

    Given as ``lesson_session(..., extra_conf=server_conf(pipeline))``.

    All of it is read when the JVM starts (the plugin, the catalog), so it is given to the
    session's builder, before the first session exists.
    """
    metastore = pipeline.home / "metastore_db"
    return {
        # The Spark Connect server the session's SparkContext starts, on loopback, with a token.
        "spark.plugins": CONNECT_PLUGIN,
        "spark.connect.grpc.binding.address": CONNECT_ADDRESS,
        "spark.connect.grpc.binding.port": str(pipeline.port),
        "spark.connect.authenticate.token": pipeline.token,
        # Tables in a Hive catalog (an embedded Derby database in this folder): the catalog
        # remembers them, so a second run updates them instead of refusing their folders.
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": paths.uri(pipeline.warehouse),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={metastore.resolve()};create=true"
        ),
        # The tables are Parquet (Spark's default format). Delta tables would need the session's
        # delta=True and spark.sql.parsing.default=delta: measured on 2 cores with a server per
        # command, a run then took 31-34 s and 36-43 CPU-s instead of about 18 s and 20 CPU-s.
        # derby.log here, not in the folder the lesson was started from (added after the
        # course's JVM options).
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={pipeline.home.resolve()}",
    }


def command(pipeline: Pipeline, action: str) -> list[str]:
    """The command line a learner would type (from the venv).

    ``spark-pipelines <action> --spec ... --remote ...``.
    """
    executable = Path(sys.executable).parent / "spark-pipelines"
    return [str(executable), action, "--spec", str(pipeline.spec), "--remote", pipeline.remote]


def refresh_options(refresh: Sequence[str]) -> list[str]:
    """``--refresh a,b``: the run updates those datasets only (none given: every one)."""
    return ["--refresh", ",".join(refresh)] if refresh else []


def environment(pipeline: Pipeline) -> dict[str, str]:
    python_path = os.pathsep.join(
        filter(None, [str(paths.LESSONS_DIR), os.environ.get("PYTHONPATH")])
    )
    return {
        **os.environ,
        "SPARK_CONF_DIR": str(pipeline.conf_dir.resolve()),
        "PYTHONPATH": python_path,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "TZ": "UTC",
        "PYTHONUNBUFFERED": "1",
        TOKEN_VARIABLE: pipeline.token,
    }


def shell_line(pipeline: Pipeline, action: str, refresh: Sequence[str] = ()) -> str:
    """The same command as one line for a terminal, with the variables it needs.

    The token is not shown.
    """
    home = paths.display(pipeline.home)
    return " ".join(
        [
            f"SPARK_CONF_DIR={home}/conf PYTHONPATH=streaming_tutorial {TOKEN_VARIABLE}=...",
            f".venv/bin/spark-pipelines {action} --spec {home}/pipeline/{SPEC_NAME}",
            f"--remote {pipeline.remote}",
            *refresh_options(refresh),
        ]
    )


def run(
    pipeline: Pipeline,
    action: str,
    show: Callable[[str], None] = print,
    refresh: Sequence[str] = (),
) -> RunResult:
    """Run ``spark-pipelines <action>`` (dry-run, run) and wait for it; PipelineError if it fails.

    Every line goes to ``logs/<action>-N.log``; the lines about the pipeline go to ``show``.
    ``refresh``: update only these datasets (``--refresh a,b``); every one when empty.
    """
    pipeline.logs.mkdir(parents=True, exist_ok=True)
    earlier = len(list(pipeline.logs.glob(f"{action}-*.log")))
    log = pipeline.logs / f"{action}-{earlier + 1}.log"
    started = time.monotonic()
    flows: dict[str, str] = {}
    with open(log, "w", encoding="utf-8") as handle:
        process = subprocess.Popen(
            [*command(pipeline, action), *refresh_options(refresh)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment(pipeline),
            text=True,
            # Its own process group: Ctrl-C here stops all of it.
            start_new_session=True,
        )
        meter = CpuMeter(process.pid)
        try:
            for line in process.stdout:
                handle.write(line)
                shown = event_to_show(line.rstrip("\n"), flows)
                if shown:
                    show(shown)
            process.wait()
        except BaseException:  # Ctrl-C (KeyboardInterrupt) or any failure here: leave no JVM behind
            stop_group(process)
            raise
        finally:
            meter.stop()
    result = RunResult(
        action,
        time.monotonic() - started,
        meter.cpu_seconds(),
        len(meter.seen),
        meter.jvms(),
        flows,
        log,
    )
    if process.returncode != 0:
        raise PipelineError(failure_advice(log.read_text(encoding="utf-8", errors="replace"), log))
    return result


def event_to_show(line: str, flows: dict[str, str]) -> str | None:
    """The text to show for one output line, or None.

    Remembers each flow's latest state in ``flows``.
    """
    match = EVENT_LINE.match(line)
    if not match:
        return None
    clock, message = match.groups()
    if message.startswith(QUIET_EVENTS):
        return None
    flow = FLOW_LINE.match(message)
    if flow:
        name, state = flow.groups()
        flows[name] = state
        if state not in SHOWN_STATES:
            return None
        shown = f"  {clock}  {name}: {state.lower()}"
        if state == "FAILED":
            shown += message[flow.end() :].rstrip(".")  # the error, after the state
        return shown
    if message.startswith("Importing ") or message.startswith("Registering SQL file "):
        return f"  {clock}  read {Path(message.split(' ', 2)[-1].rstrip('.')).name}"
    return f"  {clock}  {message}"


def stop_group(process: subprocess.Popen, wait: float = STOP_WAIT_SECONDS) -> None:
    """SIGTERM the command's process group, SIGKILL what is left after ``wait`` seconds.

    SIGTERM first, so its JVMs shut down cleanly.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while group_alive(process.pid) and time.monotonic() < deadline:
            process.poll()  # reap the leader, so it does not count as alive
            time.sleep(0.1)
        if not group_alive(process.pid):
            process.wait()
            return


def group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))  # living members only: a zombie has ended


class CpuMeter:
    """CPU seconds used by a process group, read from /proc every SAMPLE_SECONDS (Linux only).

    Each process counts with the last value read before it ended, so a short run is measured
    a little low (by at most SAMPLE_SECONDS of each process's last moments).
    """

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self.seen: dict[str, int] = {}  # pid -> the most CPU ticks read for it
        self.names: dict[str, str] = {}  # pid -> its program's name ("launcher": see _what)
        self._ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="pipeline-cpu")
        self._thread.start()

    def _sample(self) -> None:
        while PROC.is_dir():
            for stat in group_stats(self.pgid):
                pid = str(stat.pid)
                self.seen[pid] = max(self.seen.get(pid, 0), stat.cpu_ticks)
                # New, or it exec'd another program.
                if self.names.get(pid) not in (stat.name, "launcher"):
                    self.names[pid] = self._what(stat.path, stat.name)
            if self._done.wait(SAMPLE_SECONDS):
                return

    @staticmethod
    def _what(entry: Path, name: str) -> str:
        """The process's name, or "launcher" for spark-class's JVM that builds the command."""
        if name != "java":
            return name
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            return name
        return "launcher" if b"org.apache.spark.launcher.Main" in command else name

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def cpu_seconds(self) -> float | None:
        return sum(self.seen.values()) / self._ticks if self.seen else None

    def jvms(self) -> int:
        """The JVMs the command ran, not counting the brief one spark-class runs first."""
        return sum(name == "java" for name in self.names.values())


# What a failure's output says -> what to do. The first match wins; the advice then quotes the
# command's own words.
KNOWN_FAILURES = (
    (
        "No module named 'yaml'",
        "spark-pipelines needs the [pipelines] extra of pyspark (pyyaml and the Spark Connect "
        "client). Install the course's requirements: pip install -r requirements.txt",
    ),
    (
        "LOCATION_ALREADY_EXISTS",
        "A table's folder exists but the catalog does not know the table: a second run without "
        "the Hive catalog, or a metastore that was deleted while the warehouse stayed. Run the "
        "lesson with --reset.",
    ),
    (
        "failed to connect to all addresses",
        "spark-pipelines could not reach the Spark Connect endpoint given to --remote: the session "
        "that serves it has stopped, or it was started without the Spark Connect plugin "
        "(lesson18_pipeline_runner.py: server_conf).",
    ),
    (
        "JAVA_GATEWAY_EXITED",
        "spark-pipelines could not start its JVM. Run "
        "'python streaming_tutorial/00_setup_environment.py' to check Java and pyspark.",
    ),
    (
        "Traceback (most recent call last)",
        "A Python error: in one of the pipeline's files (its name is in the traceback) or in the "
        "command itself.",
    ),
)
ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)*)\][^\n]*")


def failure_advice(output: str, log: Path) -> str:
    """One paragraph for a failed run: the known cause if any, the error line, and where the
    whole log is."""
    advice = "spark-pipelines failed."
    for marker, known in KNOWN_FAILURES:
        if marker in output:
            advice = known
            break
    error = ERROR_CLASS.search(output)
    lines = [
        line
        for line in output.splitlines()
        if line.strip() and not line.startswith(("\tat ", "        at "))
    ]
    said = error.group(0)[:300] if error else "\n".join(lines[-LOG_TAIL_LINES:])
    return f"{advice}\nspark-pipelines said:\n  {said}\nIts whole output: {paths.display(log)}"
