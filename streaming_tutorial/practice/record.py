"""Record what Spark emits for an exercise's scenarios, from its reference solution.

    python -m practice.record 07.1 [ID ...]     (run from streaming_tutorial/, or via
                                                 python -m tools.record_exercises)

Writes the exercise folder's ``expected.json``, one row per line. Review its diff: it is what
every check of that exercise will expect, so read it against the task before committing it.
"""

from __future__ import annotations

import json
import sys

from practice import catalog
from practice.checking import run_scenario
from practice.session import exercise_session, workdir_for


def dumps(observations: list[dict]) -> str:
    """The expected output as JSON, one row (and the column names) per line, so that its diff
    reads row by row."""
    inline = []

    def placeholder(value) -> str:
        inline.append(json.dumps(value, ensure_ascii=False))
        return f"@inline{len(inline) - 1}@"

    shaped = [
        {
            **observation,
            "columns": placeholder(observation["columns"]),
            "batches": [
                {**batch, "rows": [placeholder(row) for row in batch["rows"]]}
                for batch in observation["batches"]
            ],
        }
        for observation in observations
    ]
    text = json.dumps({"scenarios": shaped}, indent=1, ensure_ascii=False)
    for number, compact in enumerate(inline):
        text = text.replace(f'"@inline{number}@"', compact, 1)
    return text + "\n"


def record(spark, exercise) -> list:
    module = catalog.load_module(catalog.solution(exercise), "solution")
    observations = []
    for number, scenario in enumerate(exercise.scenarios):
        workdir = workdir_for(exercise.id) / f"record-{number}"
        observations.append(run_scenario(spark, exercise, module, scenario, workdir).to_json())
    return observations


def main(argv: list[str]) -> int:
    exercises = catalog.all_exercises()
    wanted = [catalog.find(exercises, name) for name in argv] or exercises
    spark = exercise_session()
    for exercise in wanted:
        observations = record(spark, exercise)
        target = catalog.expected_file(exercise)
        target.write_text(dumps(observations), encoding="utf-8")
        print(f"{exercise.id} {exercise.title}: wrote {target}")
        for number, observation in enumerate(observations):
            print(f"  scenario {number}: {json.dumps(observation)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
