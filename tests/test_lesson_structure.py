"""Every lesson file holds its lesson, and shared code never reaches back into a lesson.

Read from the syntax trees, not by grepping text (a comment or a docstring that mentions
``readStream`` does not count):

- every lesson that runs a streaming query (01-17) writes out its own source chain,
  ``spark.readStream ... .load()/.json()/.text()/.table()...``, and its own sink chain,
  ``.writeStream ... .start()`` or ``.toTable(...)``, in a function of the lesson file;
- lesson 18's streams are its pipeline's table definitions (``pipelines/shop/``), which
  ``spark-pipelines`` runs: they write out their ``readStream`` chains;
- no shared module (``common/``, ``teaching/``, ``infra/``, the lessons' companions
  ``lessonNN_*.py``, ``tools/``) imports a lesson, statically or dynamically;
- the shared packages have no import cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

LESSONS_DIR = ROOT / "streaming_tutorial"
LESSONS = sorted(LESSONS_DIR.glob("[0-9][0-9]_*.py"))
QUERY_LESSONS = [path for path in LESSONS if "01" <= path.name[:2] <= "17"]
PIPELINE_DEFINITIONS = LESSONS_DIR / "pipelines" / "shop" / "transformations"
SHARED_PACKAGES = ("common", "teaching", "infra")
SHARED = sorted(
    [
        *(path for package in SHARED_PACKAGES for path in (LESSONS_DIR / package).glob("*.py")),
        *LESSONS_DIR.glob("lesson[0-9][0-9]_*.py"),
        *(ROOT / "tools").glob("*.py"),
    ]
)
SOURCE_ENDS = {"load", "json", "text", "csv", "parquet", "table", "orc"}
SINK_ENDS = {"start", "toTable"}
# Calls that load a module by name or path: a shared module may not point one at a lesson.
DYNAMIC_IMPORTS = {
    "import_lesson",
    "import_module",
    "__import__",
    "run_path",
    "spec_from_file_location",
    "SourceFileLoader",
}


def chain(node: ast.expr) -> list[str]:
    """The attribute names of a builder chain, outermost last: spark.readStream.x().y() ->
    ['spark', 'readStream', 'x', 'y']."""
    names: list[str] = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            names.append(node.id)
            return names[::-1]
        else:
            return names[::-1]


def streams_written_out(source: str) -> tuple[list[int], list[int]]:
    """Lines of each readStream chain that ends in a source call, and of each writeStream chain
    that ends in start()/toTable(), inside the lesson's functions."""
    reads, writes = [], []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            names = chain(node)
            if "readStream" in names and names[-1] in SOURCE_ENDS:
                reads.append(node.lineno)
            if "writeStream" in names and names[-1] in SINK_ENDS:
                writes.append(node.lineno)
    return reads, writes


@pytest.mark.parametrize("lesson", QUERY_LESSONS, ids=lambda path: path.stem)
def test_a_lesson_writes_out_its_own_streams(lesson: Path):
    reads, writes = streams_written_out(lesson.read_text(encoding="utf-8"))
    assert reads, f"{lesson.name} opens no stream itself (spark.readStream ... .load())"
    assert writes, f"{lesson.name} starts no sink itself (.writeStream ... .start()/.toTable())"


def test_the_declarative_pipelines_definitions_write_out_their_streams():
    definitions = sorted(PIPELINE_DEFINITIONS.rglob("*.py"))
    reads = [
        line
        for path in definitions
        for line in streams_written_out(path.read_text(encoding="utf-8"))[0]
    ]
    assert definitions and reads


def test_the_check_needs_a_whole_chain_in_a_function():
    hidden = "def main(spark):\n    events = sources.read_events(spark)\n    start(events)\n"
    written = (
        "def read_events(spark):\n"
        "    return spark.readStream.format('json').schema(S).load('in')\n\n"
        "def start(df):\n"
        "    return df.writeStream.format('console').option('checkpointLocation', 'c').start()\n"
    )
    mentioned = '"""spark.readStream ... writeStream ... start()"""\n# spark.readStream.load()\n'
    assert streams_written_out(hidden) == ([], [])
    assert streams_written_out(mentioned) == ([], [])
    assert streams_written_out(written) == ([2], [5])


def lesson_imports(source: str) -> list[str]:
    """Each way ``source`` imports a lesson (NN_name), as 'line N: how'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        elif isinstance(node, ast.Call):
            name = (
                node.func.attr
                if isinstance(node.func, ast.Attribute)
                else getattr(node.func, "id", "")
            )
            if name not in DYNAMIC_IMPORTS:
                continue
            argument = node.args[0] if node.args else None
            named = argument.value if isinstance(argument, ast.Constant) else None
            # import_lesson loads lessons only; other loaders count when their argument could
            # name one (not a constant naming something else).
            if name == "import_lesson" or not isinstance(named, str) or is_lesson(named):
                found.append(
                    f"line {node.lineno}: {name}({ast.unparse(argument) if argument else ''})"
                )
            continue
        else:
            continue
        found.extend(
            f"line {node.lineno}: import {module}" for module in modules if is_lesson(module)
        )
    return found


def is_lesson(name: str) -> bool:
    stem = Path(name.replace(".", "/")).name
    return len(stem) > 3 and stem[:2].isdigit() and stem[2] == "_"


@pytest.mark.parametrize("module", SHARED, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_shared_code_never_imports_a_lesson(module: Path):
    found = lesson_imports(module.read_text(encoding="utf-8"))
    if module == LESSONS_DIR / "common" / "paths.py":
        # paths.import_lesson is the loader a lesson (or a test) calls to reuse an earlier
        # lesson's function; paths itself loads no lesson.
        found = [place for place in found if "spec_from_file_location(name)" not in place]
    assert found == []


def test_the_import_check_sees_static_and_dynamic_imports():
    source = (
        "import importlib\n"
        "from common import paths\n"
        "l07 = paths.import_lesson('07_watermarking')\n"
        "l09 = importlib.import_module('09_stream_joins')\n"
        "m = importlib.import_module(name)\n"
        "ok = importlib.import_module('json')\n"
    )
    assert lesson_imports(source) == [
        "line 3: import_lesson('07_watermarking')",
        "line 4: import_module('09_stream_joins')",
        "line 5: import_module(name)",
    ]


def imports_of(path: Path) -> set[str]:
    """The shared modules ``path`` imports (``from infra import x``, ``from common.y import z``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            package, _, module = node.module.partition(".")
            if package in SHARED_PACKAGES:
                found.update(
                    [f"{package}.{module}"]
                    if module
                    else [f"{package}.{alias.name}" for alias in node.names]
                )
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path [a, b, ..., a], or None."""
    state: dict[str, str] = {}

    def visit(module: str, trail: list[str]) -> list[str] | None:
        state[module] = "open"
        for dependency in sorted(graph.get(module, ())):
            if state.get(dependency) == "open":
                return trail[trail.index(dependency) :] + [dependency]
            if dependency not in state:
                cycle = visit(dependency, trail + [dependency])
                if cycle:
                    return cycle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module, [module])
            if cycle:
                return cycle
    return None


def test_the_shared_packages_have_no_import_cycle():
    graph = {
        f"{path.parent.name}.{path.stem}": imports_of(path)
        for package in SHARED_PACKAGES
        for path in (LESSONS_DIR / package).glob("*.py")
    }
    assert find_cycle(graph) is None


def test_the_cycle_finder_finds_an_indirect_cycle():
    assert find_cycle({"kafka": {"config"}, "kafka_broker": {"kafka"}}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
