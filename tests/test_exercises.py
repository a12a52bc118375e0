"""Every tutorial exercise's answer runs and passes its own checks.

The answers live in ``docs/tutorial/answers/stageN.py`` (shown, hidden by default,
at the end of each stage page).  Each module-level function named ``exercise_*``
takes no argument and asserts what the exercise asks for (e.g. a learner's ``Cos``
passing ``gradient_check``), so an answer that stops being right fails here.
"""
import importlib.util
import pathlib

import pytest

ANSWERS = pathlib.Path(__file__).resolve().parent.parent / 'docs' / 'tutorial' / 'answers'


def _exercises():
    for path in sorted(ANSWERS.glob('stage*.py')):
        spec = importlib.util.spec_from_file_location(f'answers_{path.stem}', path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name in sorted(vars(module)):
            if name.startswith('exercise_') and callable(getattr(module, name)):
                yield pytest.param(getattr(module, name), id=f'{path.stem}.{name}')


EXERCISES = list(_exercises())


def test_answers_exist():
    assert EXERCISES, f'no exercise answers found under {ANSWERS}'


@pytest.mark.parametrize('exercise', EXERCISES)
def test_exercise_answer(exercise):
    exercise()
