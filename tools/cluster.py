"""A real Spark standalone cluster on this machine: one master, one worker, from installed pyspark.

    python course.py cluster start [--cores 2] [--memory 2g] [--port 7077]   # master + worker
    python course.py cluster status   # URL, UIs, workers, cores
    python course.py cluster stop     # both, and their executors

Then run any lesson on it, unchanged::

    python streaming_tutorial/06_windowing.py --master spark://127.0.0.1:7077
    .venv/bin/spark-submit --master spark://127.0.0.1:7077 streaming_tutorial/06_windowing.py

How it works
  - ``spark-class org.apache.spark.deploy.master.Master`` and ``...worker.Worker``: the same
    daemons a data centre runs (``sbin/start-master.sh`` wraps them; the pip package has no
    ``sbin`` scripts). Both listen on 127.0.0.1 only.
  - Each daemon runs in a process group of its own; the worker starts an *executor* JVM per
    application in its group, so ``stop`` ends the executors with it and leaves nothing behind.
  - Logs, PID files, the ports chosen and the worker's scratch folder (each application's
    executor logs: ``work/app-*/0/stderr``) live under ``.runtime/spark/``.
  - A real cluster differs in three ways, all handled by the lesson's session (common/session.py)
    and the storage setting (common/paths.py): the driver must be reachable from other hosts, every
    path must be on storage all hosts share, and the executors' cores are somewhere else.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import tools  # noqa: F401  (puts streaming_tutorial/ on sys.path)
from common import paths
from common.session import LOG4J_CONFIG
from infra import processes
from infra.environment import java_executable, require_java
from infra.errors import CourseError

HOST = "127.0.0.1"
DEFAULT_PORT, DEFAULT_WEBUI_PORT, DEFAULT_WORKER_WEBUI_PORT = 7077, 8080, 8081
DEFAULT_CORES, DEFAULT_MEMORY = 2, "2g"
START_TIMEOUT_SECONDS = 90.0
STOP_TIMEOUT_SECONDS = 20.0
# The daemons only schedule: a small heap and the quick compiler, as for the course's Kafka broker.
# Only they get these (spark-class reads SPARK_DAEMON_JAVA_OPTS for the Master and Worker classes):
# the worker builds each executor's command from the application's spark.executor.extraJavaOptions,
# so executors keep the JVM's own compiler and collector (common.session.executor_java_options).
DAEMON_MEMORY = "256m"
DAEMON_JAVA_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
ROLES = ("master", "worker")


def home() -> Path:
    return paths.RUNTIME_DIR / "spark"


@dataclass(frozen=True)
class Cluster:
    """Where the cluster listens and how big its one worker is."""

    port: int = DEFAULT_PORT
    webui_port: int = DEFAULT_WEBUI_PORT
    worker_webui_port: int = DEFAULT_WORKER_WEBUI_PORT
    cores: int = DEFAULT_CORES
    memory: str = DEFAULT_MEMORY

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    @property
    def master_ui(self) -> str:
        return f"http://{HOST}:{self.webui_port}"

    @property
    def worker_ui(self) -> str:
        return f"http://{HOST}:{self.worker_webui_port}"


def _pid_file(role: str) -> Path:
    return home() / f"{role}.pid"


def _log_file(role: str) -> Path:
    return home() / f"{role}.log"


def _settings_file() -> Path:
    return home() / "cluster.json"


def recorded() -> Cluster | None:
    """The cluster the last ``start`` wrote down (its ports), if any."""
    try:
        return Cluster(**json.loads(_settings_file().read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def running_pids() -> dict[str, int]:
    """{role: pid} of the daemons whose PID files name a live process group (stale files are
    removed)."""
    alive = {}
    for role in ROLES:
        try:
            pid = int(_pid_file(role).read_text().strip())
        except (OSError, ValueError):
            continue
        if processes.group_members(pid):
            alive[role] = pid
        else:
            _pid_file(role).unlink(missing_ok=True)
    return alive


def master_state(cluster: Cluster, timeout: float = 2.0) -> dict | None:
    """The master's own view (its web UI's /json/ page): workers, cores, applications; None if
    it does not answer."""
    try:
        with urllib.request.urlopen(f"{cluster.master_ui}/json/", timeout=timeout) as answer:
            return json.load(answer)
    except (OSError, ValueError):
        return None


def alive_cores(state: dict | None) -> int:
    """The cores of the workers the master counts as ALIVE."""
    return sum(
        worker.get("cores", 0)
        for worker in (state or {}).get("workers", [])
        if worker.get("state") == "ALIVE"
    )


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _daemon_command(role: str, cluster: Cluster) -> list[str]:
    spark_class = str(spark_home() / "bin" / "spark-class")
    if role == "master":
        return [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            HOST,
            "--port",
            str(cluster.port),
            "--webui-port",
            str(cluster.webui_port),
        ]
    return [
        spark_class,
        "org.apache.spark.deploy.worker.Worker",
        "--host",
        HOST,
        "--cores",
        str(cluster.cores),
        "--memory",
        cluster.memory,
        "--webui-port",
        str(cluster.worker_webui_port),
        "--work-dir",
        str(home() / "work"),
        cluster.master_url,
    ]


def _daemon_environment() -> dict[str, str]:
    java = java_executable()
    environment = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "SPARK_DAEMON_JAVA_OPTS": f"{DAEMON_JAVA_OPTIONS} "
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}",
        # Executors run Python with the driver's interpreter (the venv), as a lesson does locally.
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
    }
    if java and "JAVA_HOME" not in environment:
        environment["JAVA_HOME"] = str(Path(java).resolve().parents[1])
    return environment


def _launch(role: str, cluster: Cluster) -> int:
    home().mkdir(parents=True, exist_ok=True)
    with open(_log_file(role), "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            _daemon_command(role, cluster),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_daemon_environment(),
            cwd=home(),
            # Its own group: Ctrl-C in this terminal does not reach it, and
            # stop() ends it together with the executors it started.
            start_new_session=True,
        )
    _pid_file(role).write_text(str(process.pid))
    return process.pid


def _ports_in_use(cluster: Cluster) -> list[int]:
    from infra.simulators import port_open

    return [
        port
        for port in (cluster.port, cluster.webui_port, cluster.worker_webui_port)
        if port_open(HOST, port)
    ]


def start(
    cluster: Cluster = Cluster(), *, say=print, timeout: float = START_TIMEOUT_SECONDS
) -> Cluster:
    """Start master and worker, wait until the master counts the worker's cores; return the cluster.

    When the course's cluster already runs, say so and return it as it was started.
    """
    if running_pids():
        running = recorded() or cluster
        say(f"The course's Spark cluster is already running at {running.master_url}.")
        return running
    busy = _ports_in_use(cluster)
    if busy:
        from infra.simulators import free_port

        raise CourseError(
            f"Port(s) {', '.join(map(str, busy))} on {HOST} are in use by another program, so the "
            f"course's Spark cluster cannot listen there. Find it with 'lsof -i :{busy[0]}', or "
            f"choose ports that are free now: python course.py cluster start --port "
            f"{free_port(HOST)} --webui-port {free_port(HOST)} --worker-webui-port "
            f"{free_port(HOST)}, and run the lessons with --master spark://{HOST}:<that port>."
        )
    require_java()
    home().mkdir(parents=True, exist_ok=True)
    _settings_file().write_text(json.dumps(asdict(cluster)), encoding="utf-8")
    started = time.monotonic()
    _launch("master", cluster)
    try:
        _wait_for(cluster, lambda state: state is not None, "the master to answer", timeout)
        _launch("worker", cluster)
        _wait_for(
            cluster,
            lambda state: alive_cores(state) >= cluster.cores,
            f"the worker to register its {cluster.cores} cores",
            timeout,
        )
    except BaseException:
        stop(say=lambda text: None)
        raise
    say(
        f"Spark standalone cluster up in {time.monotonic() - started:.1f} s: 1 worker, "
        f"{cluster.cores} cores, {cluster.memory}.\n{describe(cluster)}"
    )
    return cluster


def _wait_for(cluster: Cluster, ready, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready(master_state(cluster)):
            return
        launched = [role for role in ROLES if _pid_file(role).exists()]
        alive = running_pids()  # (removes the PID file of a daemon that died)
        dead = [role for role in launched if role not in alive]
        if dead:
            raise CourseError(
                f"The Spark {dead[0]} stopped while starting. The end of its log "
                f"({paths.display(_log_file(dead[0]))}) says:\n{log_tail(dead[0])}"
            )
        time.sleep(0.5)  # polling a starting daemon, not a test oracle
    raise CourseError(
        f"Waited {timeout:.0f} s for {what}, in vain. The end of the logs says:\n"
        f"{log_tail('master')}\n{log_tail('worker')}"
    )


def log_tail(role: str, lines: int = 12) -> str:
    try:
        text = _log_file(role).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return f"  ({role}: no log)"
    return "\n".join(f"  {line}" for line in text[-lines:])


def describe(cluster: Cluster) -> str:
    return (
        f"  master URL:  {cluster.master_url}    (lessons: --master {cluster.master_url})\n"
        f"  master UI:   {cluster.master_ui}\n"
        f"  worker UI:   {cluster.worker_ui}\n"
        f"  logs:        {paths.display(home())}"
    )


def status() -> str:
    cluster, pids = recorded(), running_pids()
    if not pids or cluster is None:
        return (
            "The course's Spark cluster is not running. "
            "Start it with: python course.py cluster start"
        )
    state = master_state(cluster)
    if state is None:
        return (
            f"The course's Spark daemons run (PIDs {pids}) but the master does not answer.\n"
            f"{describe(cluster)}"
        )
    workers = [worker for worker in state.get("workers", []) if worker.get("state") == "ALIVE"]
    apps = [app.get("name", "?") for app in state.get("activeapps", [])]
    return (
        f"The course's Spark cluster is running: {len(workers)} worker(s), {alive_cores(state)} "
        f"cores ({state.get('coresused', 0)} in use), applications: "
        f"{', '.join(apps) or 'none'}.\n{describe(cluster)}"
    )


def stop(*, say=print, timeout: float = STOP_TIMEOUT_SECONDS) -> bool:
    """Stop worker (with its executors) and master; True if any ran."""
    pids = running_pids()
    for role in reversed(ROLES):  # the worker first, so the master does not log it as lost
        if role in pids:
            _stop_group(pids[role], timeout)
            _pid_file(role).unlink(missing_ok=True)
    if pids:
        say("Stopped the course's Spark cluster.")
    return bool(pids)


def _stop_group(pgid: int, timeout: float) -> None:
    """SIGTERM the daemon's whole group (a worker's executors too), then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not processes.group_members(pgid):
                return
            time.sleep(0.2)  # waiting for processes to exit


def run_cli(*args: str, home: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m tools.cluster ARGS`` for the course home ``home``, as course.py runs it.

    A process of its own: the course's folders are fixed when common.paths is imported, and the
    tests and benchmarks keep their clusters out of the learner's ``.runtime/``.
    """
    return subprocess.run(
        [sys.executable, "-m", "tools.cluster", *args],
        cwd=paths.PROJECT_ROOT,
        env={**os.environ, "STREAMING_COURSE_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python course.py cluster", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    begin = sub.add_parser("start", help="start a master and a worker on 127.0.0.1")
    begin.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="the master's port (default: %(default)s)"
    )
    begin.add_argument(
        "--webui-port",
        type=int,
        default=DEFAULT_WEBUI_PORT,
        help="its web UI (default: %(default)s)",
    )
    begin.add_argument(
        "--worker-webui-port",
        type=int,
        default=DEFAULT_WORKER_WEBUI_PORT,
        help="the worker's web UI (default: %(default)s)",
    )
    begin.add_argument(
        "--cores", type=int, default=DEFAULT_CORES, help="the worker's cores (default: %(default)s)"
    )
    begin.add_argument(
        "--memory", default=DEFAULT_MEMORY, help="the worker's memory (default: %(default)s)"
    )
    begin.add_argument(
        "--timeout", type=float, default=START_TIMEOUT_SECONDS, help=argparse.SUPPRESS
    )
    sub.add_parser("status", help="is it running; URL, UIs, cores, applications")
    sub.add_parser("stop", help="stop the worker (and its executors) and the master")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            start(
                Cluster(
                    args.port, args.webui_port, args.worker_webui_port, args.cores, args.memory
                ),
                timeout=args.timeout,
            )
            print(
                "It keeps running after this command ends; stop it with: python course.py cluster "
                "stop"
            )
        elif args.command == "status":
            print(status())
        elif not stop():
            print("The course's Spark cluster is not running.")
    except CourseError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
