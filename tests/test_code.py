"""The code reads at a glance: ruff's layout and checks, and no packing to save lines.

``ruff format --check`` and ``ruff check`` (pycodestyle, pyflakes, isort, bugbear; line length
100, see ruff.toml) run over the whole repository. A name used without its import fails only
when its line runs, which a test may never reach: pyflakes' part of ruff finds it here.

The packing checks read the lessons' syntax trees, because ruff does not know these habits:
a lambda bound to a name (E731 catches ``f = lambda``; this also catches annotated and tuple
targets), ``(f if x else g)(...)``, a comprehension run for its side effects, and two unrelated
values assigned in one tuple (``a, b = f(), g()``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

LESSONS_DIR = ROOT / "streaming_tutorial"
# Every file a learner reads as a lesson: the lessons, their companions, the pipeline definitions.
READ_AS_LESSONS = sorted(
    [
        *LESSONS_DIR.glob("[0-9][0-9]_*.py"),
        *LESSONS_DIR.glob("lesson[0-9][0-9]_*.py"),
        *(LESSONS_DIR / "pipelines").rglob("*.py"),
    ]
)


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_ruff_format_finds_nothing_to_change():
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_finds_nothing():
    result = ruff("check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_sees_an_undefined_name_and_a_long_line(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(
        f"def read(spark, table):\n    return spark.read.load(paths.uri(table))\n# {'x' * 120}\n"
    )
    result = ruff("check", "--output-format", "concise", "--no-cache", str(broken))
    assert "F821 Undefined name `paths`" in result.stdout
    assert "E501 Line too long" in result.stdout


def packing(source: str) -> list[str]:
    """Each place that packs code to save lines, as 'line N: what'."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Lambda):
            found.append((node.lineno, "a lambda bound to a name (write a def)"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.IfExp):
            found.append((node.lineno, "(f if x else g)(...) (write an if statement)"))
        if isinstance(node, ast.Expr) and isinstance(
            node.value, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            found.append((node.lineno, "a comprehension run for its effects (write a loop)"))
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Tuple)
            and not is_swap(node.targets[0], node.value)
        ):
            found.append((node.lineno, "several values assigned in one tuple (one a line)"))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def is_swap(target: ast.Tuple, value: ast.Tuple) -> bool:
    """``a, b = b, a``: the same names, reordered."""
    names = sorted(ast.unparse(element) for element in target.elts)
    return names == sorted(ast.unparse(element) for element in value.elts)


@pytest.mark.parametrize("path", READ_AS_LESSONS, ids=lambda path: path.name)
def test_a_lesson_is_not_packed_to_save_lines(path: Path):
    assert packing(path.read_text(encoding="utf-8")) == []


def test_the_packing_check_finds_each_habit():
    source = (
        "f = lambda x: x\n"
        "g: object = lambda: 1\n"
        "(print if True else repr)('x')\n"
        "[print(x) for x in range(2)]\n"
        "a, b = len('x'), 2\n"
        "a, b = b, a\n"  # a swap is fine
        "c, d = divmod(7, 2)\n"  # unpacking one value is fine
    )
    assert packing(source) == [
        "line 1: a lambda bound to a name (write a def)",
        "line 2: a lambda bound to a name (write a def)",
        "line 3: (f if x else g)(...) (write an if statement)",
        "line 4: a comprehension run for its effects (write a loop)",
        "line 5: several values assigned in one tuple (one a line)",
    ]
