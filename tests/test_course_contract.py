"""The promises the README and the lesson contract make, checked for every lesson and tool.

These tests start no Spark session: they read files and run --help.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "streaming_tutorial").glob("[0-9][0-9]_*.py"))
SIMULATORS = sorted(p for p in (ROOT / "data_generators").glob("*.py") if p.name != "__init__.py")
SECTIONS = ("What you'll learn", "Run", "What you'll see")


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_lessons_are_numbered_without_gaps():
    numbers = [int(path.name[:2]) for path in LESSONS]
    assert numbers == list(range(len(numbers))) and len(numbers) >= 8


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_lesson_docstring_has_every_section_and_names_itself(lesson):
    text = docstring(lesson)
    for section in SECTIONS:
        assert re.search(rf"^{re.escape(section)}\s*$", text, re.MULTILINE), f"{lesson.name}: no '{section}' section"
    run_section = text.split("Run", 1)[1].split("What you'll see", 1)[0]
    assert f"python streaming_tutorial/{lesson.name}" in run_section


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_lesson_follows_the_skeleton(lesson):
    source = lesson.read_text(encoding="utf-8")
    tree = ast.parse(source)
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert functions and functions[0] == "main", f"{lesson.name}: main() should come first"
    assert source.rstrip().endswith("run_lesson(main)"), f"{lesson.name}: end with the __main__ guard"
    assert "import *" not in source


@pytest.mark.parametrize("script", LESSONS + SIMULATORS, ids=lambda p: p.stem)
def test_help_works_from_another_directory(script, tmp_path):
    result = subprocess.run(
        [sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_every_lesson_takes_the_common_flags(lesson, tmp_path):
    result = subprocess.run([sys.executable, str(lesson), "--help"], capture_output=True, text=True, timeout=120)
    for flag in ("--duration", "--master", "--checkpoint-dir", "--reset"):
        assert flag in result.stdout, f"{lesson.name} lacks {flag}"


def test_readme_indexes_every_lesson_and_simulator():
    text = readme()
    for path in LESSONS + SIMULATORS:
        assert path.name in text, f"README does not mention {path.name}"


def test_quick_reference_links_every_lesson():
    text = (ROOT / "QUICK_REFERENCE.md").read_text(encoding="utf-8")
    for lesson in LESSONS:
        assert f"streaming_tutorial/{lesson.name}" in text, f"QUICK_REFERENCE does not link {lesson.name}"


def quick_start_commands() -> list[str]:
    section = readme().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:bash|sh)?\n(.*?)```", section, re.DOTALL)
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_quick_start_is_exactly_two_commands():
    assert quick_start_commands() == ["python course.py tour", "python course.py test"]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = quick_start_commands()[1]
    assert re.search(rf"^python3? {re.escape(test_command.split(' ', 1)[1])}\s*$", ci, re.MULTILINE)


def test_requirements_are_pinned_and_match_the_delta_jar():
    pins = dict(
        line.split("==")
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert all(version for version in pins.values())
    import importlib.metadata

    for package in ("pyspark", "delta-spark"):
        assert importlib.metadata.version(package) == pins[package], f"{package} in this env differs from the pin"

