"""단계 스크립트의 출력을 정답 파일(tests/golden/steps/stepNN.txt)과 비교한다.

tests/test_steps.py와 패키지 확인기(``check.py package N 폴더``)가 함께 쓴다.

* 줄 수가 같아야 한다;
* 줄마다 수(``-12``, ``3.5``, ``1e-07``, ``2.``)는 ``|받은 값 - 기대값| <= ATOL + RTOL * |기대값|``로
  비교한다(BLAS/libm에 따라 마지막 자리가 다르다);
* 수 사이의 글은 같아야 한다(이어진 빈칸은 하나로 보고, 줄 끝의 빈칸은 보지 않는다).
"""
import os
import pathlib
import re
import shutil
import sys
import tempfile

from . import sandbox

RTOL = 1e-6
ATOL = 1e-9
NUMBER = re.compile(r'[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?')
STEPS_DIR = pathlib.Path(__file__).resolve().parent.parent
GOLDEN_DIR = STEPS_DIR.parent / 'tests' / 'golden' / 'steps'


def _split(line):
    """'x = 1.5, y = [2. 3.]' -> (['x = ', ', y = [', ' ', ']'], [1.5, 2.0, 3.0])"""
    texts, numbers, pos = [], [], 0
    for m in NUMBER.finditer(line):
        texts.append(line[pos:m.start()])
        numbers.append(m.group())
        pos = m.end()
    texts.append(line[pos:])
    texts = [re.sub(r' +', ' ', t) for t in texts]
    texts[-1] = texts[-1].rstrip()
    return texts, numbers


def compare_line(actual, expected):
    """Return None if the lines match, else a short reason."""
    a_texts, a_nums = _split(actual)
    e_texts, e_nums = _split(expected)
    if a_texts != e_texts or len(a_nums) != len(e_nums):
        return 'text differs'
    for a, e in zip(a_nums, e_nums):
        if abs(float(a) - float(e)) > ATOL + RTOL * abs(float(e)):
            return f'number {a} != {e}'
    return None


def compare_output(actual, expected):
    """Return a list of human-readable mismatch descriptions (empty if equal)."""
    a_lines, e_lines = actual.splitlines(), expected.splitlines()
    problems = []
    for i, (a, e) in enumerate(zip(a_lines, e_lines), 1):
        reason = compare_line(a, e)
        if reason:
            problems.append(f'line {i}: {reason}\n  expected: {e!r}\n  actual:   {a!r}')
    if len(a_lines) != len(e_lines):
        problems.append(f'{len(a_lines)} lines, golden has {len(e_lines)}')
    return problems


def step_env():
    """단계를 돌리는 환경: 정답 파일과 같은 설정 (DEZERO_KR_FAST=1, BLAS 스레드 1개 ...)."""
    env = dict(os.environ)
    root = str(STEPS_DIR.parent)  # 저장소의 dezero_kr (기준)
    env['PYTHONPATH'] = os.pathsep.join([root] + [p for p in env.get('PYTHONPATH', '').split(
        os.pathsep) if p])
    env.update(DEZERO_KR_FAST='1', MPLBACKEND='Agg', PYTHONIOENCODING='utf-8',
               PYTHONHASHSEED='0', PYTHONDONTWRITEBYTECODE='1')
    for var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
        env[var] = '1'
    return env


def run_step_on(n, folder, timeout):
    """stepNN.py를 ``folder/mydezero`` 옆에서 돌려 정답과 비교한다: (맞는가, 한국어 메시지).

    패키지와 23~N단계 스크립트, _common.py를 임시 폴더에 복사해 그 폴더에서 돌린다(스크립트는
    자기 폴더의 mydezero를 import한다). 그림은 임시 폴더에 쓰고 지운다.
    """
    golden = GOLDEN_DIR / f'step{n:02d}.txt'
    with tempfile.TemporaryDirectory(prefix='dezero-step-') as tmp:
        src, cwd = os.path.join(tmp, 'src'), os.path.join(tmp, 'cwd')
        os.makedirs(cwd)
        shutil.copytree(os.path.join(folder, 'mydezero'), os.path.join(src, 'mydezero'),
                        ignore=shutil.ignore_patterns('__pycache__'))
        shutil.copy(STEPS_DIR / '_common.py', src)
        for k in range(23, n + 1):
            shutil.copy(STEPS_DIR / f'step{k:02d}.py', src)
        run = sandbox.run_script([sys.executable, os.path.join(src, f'step{n:02d}.py')],
                                 cwd, step_env(), timeout)
    name = f'step{n:02d}.py'
    if run.timed_out:
        return False, f'{name}이(가) {timeout:g}초 안에 끝나지 않았습니다.'
    if run.returncode != 0:
        return False, (f'{name}이(가) 종료 코드 {run.returncode}로 끝났습니다 (내 패키지로 '
                       f'돌렸습니다):\n{run.stderr[-3000:]}')
    problems = compare_output(run.stdout, golden.read_text(encoding='utf-8'))
    if problems:
        shown = '\n'.join(problems[:5])
        return False, (f'{name}의 출력이 정답(tests/golden/steps/{golden.name})과 '
                       f'{len(problems)}곳 다릅니다:\n{shown}')
    return True, f'{name}의 출력이 정답과 같습니다.'
