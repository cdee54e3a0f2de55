"""infra.environment.check_java: the advice a learner reads when Java is missing, a stub, or too
old.

Each test puts a fake `java` script first on an otherwise empty PATH: no JDK runs.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from infra.environment import check_java, install_jdk_advice

MACOS_STUB_OUTPUT = (
    "The operation couldn't be completed. Unable to locate a Java Runtime.\n"
    "Please visit http://www.java.com for information on installing Java.\n"
)
OLD_MACOS_STUB_OUTPUT = "No Java runtime present, requesting install.\n"


def fake_java(folder: Path, stderr: str, exit_code: int) -> Path:
    """A `java` that prints ``stderr`` to stderr and exits with ``exit_code``, as the real one
    does."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "java"
    # cat by its full path: the tests leave only the fake java on PATH.
    script.write_text(
        f"#!/bin/sh\n{shutil.which('cat')} >&2 <<'EOF'\n{stderr}EOF\nexit {exit_code}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


@pytest.fixture
def path_with(monkeypatch, tmp_path):
    """Put a fake java alone on PATH, with JAVA_HOME unset."""

    def install(stderr: str, exit_code: int = 0) -> Path:
        script = fake_java(tmp_path / "bin", stderr, exit_code)
        monkeypatch.setenv("PATH", str(script.parent))
        monkeypatch.delenv("JAVA_HOME", raising=False)
        return script

    return install


@pytest.mark.parametrize(
    "output", [MACOS_STUB_OUTPUT, OLD_MACOS_STUB_OUTPUT], ids=["current", "older"]
)
def test_the_macos_java_stub_is_named_and_the_brew_jdk_put_on_path(path_with, output):
    script = path_with(output, exit_code=1)
    check = check_java()
    assert not check.ok
    assert check.detail.startswith(f"No Java is installed: {script} is only macOS's placeholder")
    assert output.splitlines()[0].strip() in check.detail  # quotes what the stub said
    assert "brew install openjdk@17" in check.detail
    assert (
        'export JAVA_HOME="$(brew --prefix openjdk@17)/libexec/openjdk.jdk/Contents/Home"'
        in check.detail
    )
    assert 'export PATH="$JAVA_HOME/bin:$PATH"' in check.detail
    assert "/Library/Java/JavaVirtualMachines/openjdk-17.jdk" in check.detail
    assert "did not report a version" not in check.detail


def test_a_real_jdk_17_passes(path_with):
    script = path_with(
        'openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6)\n'
    )
    check = check_java()
    assert check.ok and check.detail == f"17 ({script})"


def test_java_8_is_too_old(path_with):
    path_with('java version "1.8.0_402"\n')
    check = check_java()
    assert not check.ok and check.detail.startswith("Java 8 is too old")


def test_a_java_that_prints_no_version_is_reported(path_with):
    script = path_with("Error: could not open `lib/jvm.cfg'\n", exit_code=1)
    check = check_java()
    assert not check.ok and check.detail.startswith(f"'{script} -version' did not report a version")


def test_no_java_at_all_gives_install_advice(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    check = check_java()
    assert not check.ok
    assert check.detail.startswith("Java was not found.") and check.detail.endswith(
        install_jdk_advice()
    )


def test_java_home_without_bin_java_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    check = check_java()
    assert not check.ok and check.detail.startswith(
        f"JAVA_HOME is set to {tmp_path}, but there is no bin/java"
    )


def test_the_macos_advice_says_how_to_put_the_brew_jdk_on_path():
    advice = install_jdk_advice("darwin")
    assert "brew install openjdk@17" in advice and "JAVA_HOME" in advice and "~/.zshrc" in advice


def test_the_linux_advice_names_apt_and_wsl2():
    advice = install_jdk_advice("linux")
    assert "sudo apt install openjdk-17-jdk-headless" in advice and "WSL2" in advice
