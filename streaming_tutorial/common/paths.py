"""Every folder the course reads or writes, relative to the project root.

Nothing here depends on the current directory, so a lesson works whether it is
started from the project root, from ``streaming_tutorial/`` or from anywhere
else. Generated folders (data, checkpoints, output, .runtime) live under
``COURSE_HOME``, which is the project root unless the environment variable
``STREAMING_COURSE_HOME`` points elsewhere (the tests use that to keep a
learner's own data untouched).

Where the generated data, checkpoints and outputs live is one storage setting: the
``--storage URI`` flag of a lesson, else ``STREAMING_COURSE_STORAGE``, else COURSE_HOME.
A local folder or a ``file:`` URI moves those folders there (on a cluster: a shared mount
with the same path on every host). Any other Hadoop URI (``hdfs://``, ``s3a://``,
``abfss://``, ``gs://``) leaves the Paths below as the local view under COURSE_HOME, and
``uri()`` maps them onto that remote root: every path Spark gets goes through ``uri()``.
"""

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LESSONS_DIR = PROJECT_ROOT / "streaming_tutorial"
GENERATORS_DIR = PROJECT_ROOT / "data_generators"
# Reference data shipped with the course (committed, read-only).
REFERENCE_DIR = PROJECT_ROOT / "data" / "reference"
PRODUCTS_CSV = REFERENCE_DIR / "products.csv"

COURSE_HOME = Path(os.environ.get("STREAMING_COURSE_HOME", PROJECT_ROOT)).resolve()
STORAGE_ENV = "STREAMING_COURSE_STORAGE"
STORAGE_FLAG = "--storage"


def storage_setting(argv: list[str], environ) -> str:
    """The storage the learner chose: ``--storage X`` / ``--storage=X`` in ``argv``, else
    ``$STREAMING_COURSE_STORAGE``, else "" (COURSE_HOME).

    Why argv is read here and not by argparse: the folders below are computed at import, and
    lessons build module-level constants from them before main() parses its flags.
    cli.lesson_parser declares the same flag, so argparse accepts it and --help shows it.
    """
    for index, arg in enumerate(argv):
        if arg == STORAGE_FLAG and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(STORAGE_FLAG + "="):
            return arg.partition("=")[2]
    return environ.get(STORAGE_ENV, "")


def storage_roots(setting: str, home: Path) -> tuple[Path, str | None]:
    """(the local folder that holds data/, checkpoints/ and output/, the remote root or None).

    "" is ``home``; a local folder or a ``file:`` URI is that folder; any other scheme is a
    remote root, with ``home`` as its local view. POSIX paths only (Windows is not supported).
    """
    if not setting:
        return home, None
    scheme = urlsplit(setting).scheme.lower()
    if not scheme:
        return Path(setting).expanduser().resolve(), None
    if scheme == "file":
        parts = urlsplit(setting)
        if parts.netloc not in ("", "localhost"):
            raise ValueError(
                f"{STORAGE_FLAG} {setting}: a file: URI names no host (file:///shared/course)"
            )
        # Not unquoted: Hadoop reads "file:///a%20b" as a folder named "a%20b" too.
        return Path(parts.path).resolve(), None
    return home, setting.rstrip("/")


STORAGE = storage_setting(sys.argv[1:], os.environ)
STORAGE_ROOT, REMOTE_ROOT = storage_roots(STORAGE, COURSE_HOME)
DATA_DIR = STORAGE_ROOT / "data"
CHECKPOINT_DIR = STORAGE_ROOT / "checkpoints"
OUTPUT_DIR = STORAGE_ROOT / "output"
# PID files, the local Kafka broker's data and logs.
RUNTIME_DIR = COURSE_HOME / ".runtime"
# Each lesson's log of its last run: the JVM's warnings and errors with their stack traces.
LOGS_DIR = RUNTIME_DIR / "logs"

# The folders the simulators write into and the file lessons watch.
TRANSACTIONS_DIR = DATA_DIR / "input_stream"
ECOMMERCE_DIR = DATA_DIR / "ecommerce_events"
SENSOR_DIR = DATA_DIR / "sensor_readings"
AD_EVENTS_DIR = DATA_DIR / "ad_events"

GENERATED_DIRS = (DATA_DIR, CHECKPOINT_DIR, OUTPUT_DIR, TRANSACTIONS_DIR, ECOMMERCE_DIR, SENSOR_DIR)


def user_cache_dir() -> Path:
    """Downloads shared by every run and checkout (jar lists, the Kafka broker's jars):
    ``$XDG_CACHE_HOME/streaming-course``, else ``~/.cache/streaming-course``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "streaming-course"


def ensure_dirs(*dirs: Path) -> None:
    """Create the given folders (default: all generated folders) if missing."""
    for folder in dirs or GENERATED_DIRS:
        folder.mkdir(parents=True, exist_ok=True)


def checkpoint_for(lesson: str, query: str = "") -> Path:
    """The checkpoint folder of one query of one lesson: one folder per query."""
    root = CHECKPOINT_DIR / lesson
    return root / query if query else root


def output_for(lesson: str, name: str = "") -> Path:
    root = OUTPUT_DIR / lesson
    return root / name if name else root


def log_for(lesson: str) -> Path:
    """The JVM's log of the lesson's last run (always local, also with --storage)."""
    return LOGS_DIR / f"{lesson}.log"


def remove_tree(path: Path, *, allow_outside: bool = False) -> None:
    """Delete a generated folder; refuses anything outside COURSE_HOME and the storage folder
    unless the learner chose it (``allow_outside``: a --checkpoint-dir elsewhere)."""
    path = path.resolve()
    if COURSE_HOME not in path.parents and STORAGE_ROOT not in path.parents and not allow_outside:
        raise ValueError(f"refusing to delete {path}: it is outside {COURSE_HOME}")
    shutil.rmtree(path, ignore_errors=True)


def uri(path: Path) -> str:
    """The address Spark gets for a course path: on remote storage, the part below the storage
    folder under the remote root; otherwise (and for a path outside it) an explicit file: URI.

    Never a bare path: on YARN, EMR or Dataproc Spark resolves a bare path against
    fs.defaultFS, i.e. HDFS, not the driver's disk. Spelled file:/x, as Hadoop qualifies a
    local path (file:///x means the same, but Delta compares a table's locations as text and
    refuses file:///x for the file:/x it recorded). Not Path.as_uri(): Hadoop does not decode
    %-escapes, so a folder "a b" would become "a%20b".
    """
    path = Path(path).resolve()
    if REMOTE_ROOT is not None and _generated(path):
        below = path.relative_to(STORAGE_ROOT).as_posix()
        return REMOTE_ROOT if below == "." else f"{REMOTE_ROOT}/{below}"
    return f"file:{path}"


def _generated(path: Path) -> bool:
    """True for a path in data/, checkpoints/ or output/, except the reference data shipped with
    the course: it stays where the project is (copy it along if executors cannot see it)."""

    def under(root: Path) -> bool:
        return path == root or root in path.parents

    return any(under(root) for root in (DATA_DIR, CHECKPOINT_DIR, OUTPUT_DIR)) and not under(
        REFERENCE_DIR
    )


def is_remote(path: Path) -> bool:
    """True when Spark reads and writes ``path`` on remote storage, out of Python's reach."""
    return not uri(path).startswith("file:")


def import_lesson(stem: str):
    """A numbered lesson as a module ('07_watermarking' is no module name), to reuse its build_
    functions; its main() does not run."""
    name = f"lesson_{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, LESSONS_DIR / f"{stem}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def display(path: Path) -> str:
    """A path as the learner should read it: relative to the project when possible."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)
