"""Every folder the course reads or writes, relative to the project root.

Nothing here depends on the current directory, so a lesson works whether it is
started from the project root, from ``streaming_tutorial/`` or from anywhere
else. Generated folders (data, checkpoints, output, .runtime) live under
``COURSE_HOME``, which is the project root unless the environment variable
``STREAMING_COURSE_HOME`` points elsewhere (the tests use that to keep a
learner's own data untouched).
"""

import importlib.util
import os
import shutil
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LESSONS_DIR = PROJECT_ROOT / "streaming_tutorial"
GENERATORS_DIR = PROJECT_ROOT / "data_generators"
# Reference data shipped with the course (committed, read-only).
REFERENCE_DIR = PROJECT_ROOT / "data" / "reference"
PRODUCTS_CSV = REFERENCE_DIR / "products.csv"

COURSE_HOME = Path(os.environ.get("STREAMING_COURSE_HOME", PROJECT_ROOT)).resolve()
DATA_DIR = COURSE_HOME / "data"
CHECKPOINT_DIR = COURSE_HOME / "checkpoints"
OUTPUT_DIR = COURSE_HOME / "output"
# PID files, the local Kafka broker's data and logs.
RUNTIME_DIR = COURSE_HOME / ".runtime"

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


def remove_tree(path: Path, *, allow_outside: bool = False) -> None:
    """Delete a generated folder; refuses anything outside COURSE_HOME unless the learner chose it
    (``allow_outside``: a --checkpoint-dir elsewhere)."""
    path = path.resolve()
    if COURSE_HOME not in path.parents and not allow_outside:
        raise ValueError(f"refusing to delete {path}: it is outside {COURSE_HOME}")
    shutil.rmtree(path, ignore_errors=True)


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
