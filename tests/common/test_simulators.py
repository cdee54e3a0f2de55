"""common.simulators: a file lesson watches its folder (with a simulator) or reads what is there once."""

from __future__ import annotations

from argparse import Namespace

from common.simulators import FileInput, Simulator, file_input_for_lesson


def lesson_args(**flags) -> Namespace:
    return Namespace(**{"available_now": False, "no_simulator": False, **flags})


def test_files_already_there_are_read_once_without_a_simulator(tmp_path, capsys):
    (tmp_path / "tx-1.json").write_text("{}\n")

    with file_input_for_lesson("test-none-running", "simulate_file_data.py", [], tmp_path, lesson_args()) as files:
        assert not files.watching
        assert files.trigger("2 seconds") == {"availableNow": True}
        assert not files.done()  # nothing to wait for: availableNow ends the queries by itself
    assert capsys.readouterr().out == ""  # no simulator started, none advised


def test_available_now_reads_once_even_an_empty_folder(tmp_path):
    with file_input_for_lesson("test-none-running", "x.py", [], tmp_path, lesson_args(available_now=True)) as files:
        assert files.trigger("2 seconds") == {"availableNow": True}


def test_an_empty_folder_is_watched_and_no_simulator_means_the_learner_starts_one(tmp_path, capsys):
    with file_input_for_lesson("test-none-running", "simulate_file_data.py", ["--count", "3"], tmp_path,
                               lesson_args(no_simulator=True)) as files:
        assert files.watching
        assert files.trigger("2 seconds") == {"processingTime": "2 seconds"}
        assert not files.done()  # the learner may start it at any time
    assert "start it yourself in a second terminal: python data_generators/simulate_file_data.py --count 3" in \
        capsys.readouterr().out


def test_done_follows_the_simulator():
    class Finished(Simulator):
        def done(self) -> bool:
            return True

    assert FileInput(watching=True, simulator=Finished("x")).done()
    assert not FileInput(watching=True, simulator=Simulator("x")).done()
