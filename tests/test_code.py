"""Every Python file of the project passes pyflakes: no undefined name, no unused import.

A name a module uses without importing it fails only when that line runs. Two such lines
(``paths.uri`` in lesson 17's dashboard and in the class archive's training run) once passed
every other test here: the training runs once per machine, outside the suite, and skipped
itself with a NameError, so every lesson's JVM started without its archive.
"""

from __future__ import annotations

import linecache

from pyflakes import api, messages, reporter

from conftest import ROOT

CHECKED = [
    "streaming_tutorial",
    "data_generators",
    "benchmarks",
    "tests",
    "course.py",
    "local_kafka.py",
    "initial_setup.py",
]


class Collect(reporter.Reporter):
    """pyflakes' findings as 'path:line: message' strings; an import marked '# noqa' (a re-export) is kept."""

    def __init__(self):
        super().__init__(None, None)
        self.found: list[str] = []

    def flake(self, message):
        line = linecache.getline(message.filename, message.lineno)
        if isinstance(message, messages.UnusedImport) and "noqa" in line:
            return
        self.found.append(
            f"{message.filename}:{message.lineno}: {message.message % message.message_args}"
        )

    def unexpectedError(self, filename, problem):
        self.found.append(f"{filename}: {problem}")

    def syntaxError(self, filename, problem, lineno, offset, text):
        self.found.append(f"{filename}:{lineno}: {problem}")


def test_pyflakes_finds_nothing():
    found = Collect()
    api.checkRecursive([str(ROOT / name) for name in CHECKED], found)
    assert found.found == []


def test_the_check_sees_an_undefined_name(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def read(spark, table):\n    return spark.read.load(paths.uri(table))\n")
    found = Collect()
    api.checkRecursive([str(broken)], found)
    assert found.found == [f"{broken}:2: undefined name 'paths'"]
