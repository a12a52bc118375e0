"""Tutorial exercises: every answer passes the learner's checker; stubs and wrong answers fail.

The checks live in one place, ``steps/exercises/<group>.py`` (registered by id, e.g.
``stage4.5``); ``python steps/check.py ID my_answer.py`` runs them on a learner's file and
these tests run them on the answers in ``docs/tutorial/answers/<group>.py`` (shown, hidden
by default, on each stage page).  So an answer and its check cannot drift apart:

* every answer passes its exercise's checks;
* every stub (``check.py ID --stub``) fails with a message naming the check it stopped at;
* deliberately wrong answers (Adam without bias correction, GetItem's backward without
  accumulation for repeated indices, ...) fail naming the check and the size of the difference;
* ``check.py`` run as a learner runs it (a subprocess) lists, prints stubs, passes and fails
  with exit codes 0 / 1.
"""
import ast
import functools
import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from _subproc import python_env

ROOT = pathlib.Path(__file__).resolve().parent.parent
ANSWERS = ROOT / 'docs' / 'tutorial' / 'answers'
CHECK = ROOT / 'steps' / 'check.py'

sys.path.insert(0, str(ROOT / 'steps'))
import exercises  # noqa: E402  (steps/exercises, the checks check.py runs)

IDS = [e.id for e in exercises.all_exercises()]


@functools.lru_cache(maxsize=None)
def answer_module(group):
    return exercises.load_file(ANSWERS / f'{group}.py', f'answers_{group}')


def test_every_group_has_exercises_and_an_answer_file():
    groups = {i.split('.')[0] for i in IDS}
    assert groups == set(exercises.GROUPS)
    for group in groups:
        assert (ANSWERS / f'{group}.py').is_file(), group
    # the new "build a piece" exercises of stages 4-5 and the theory set are registered
    assert {'stage4.5', 'stage4.6', 'stage5.5', 'stage5.6', 'theory.1', 'theory.4'} <= set(IDS)
    assert len(IDS) == len(set(IDS)) >= 35


@pytest.mark.parametrize('ident', IDS)
def test_answer_passes(ident):
    ok, message = exercises.run(ident, module=answer_module(ident.split('.')[0]))
    assert ok, message
    assert message.startswith(f'통과: {ident} ')


@pytest.mark.parametrize('ident', IDS)
def test_stub_fails_naming_the_check(ident, tmp_path):
    stub = exercises.get(ident).stub
    tree = ast.parse(stub)  # a stub is valid Python ...
    names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    names += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Name)]
    answer = answer_module(ident.split('.')[0])
    missing = [n for n in names if not hasattr(answer, n)]
    assert names and not missing, f'{ident}: the answer lacks the stub names {missing}'
    assert 'NotImplementedError' in stub or '...' in stub
    ok, message = exercises.run(ident, path=exercises.stub_module(ident, tmp_path))
    assert not ok
    assert message.startswith(f'실패: {ident} ')
    assert re.search(r'^(틀린|예외가 난) 확인: \S', message, re.M), message  # which check
    assert '(통과한 확인 0개)' in message, message


# id -> (text of the answer file, its wrong replacement, fragments the failure must show).
# Every wrong answer must fail at a named check with the size of the difference.
WRONG = {
    'stage4.5': (  # Adam without bias correction: the first step is 3.16 alpha, not alpha
        'lr = self.alpha * np.sqrt(1 - self.beta2 ** t) / (1 - self.beta1 ** t)',
        'lr = self.alpha',
        ['틀린 확인: Adam(alpha=0.1): 1번째 갱신 뒤 매개변수 0', '최대 절대 차이: 2.1']),
    'stage4.6': (  # overwrite instead of add: repeated indices keep one gradient
        'np.add.at(gx, self.slices, gy)',
        'gx[self.slices] = gy',
        ['x[정수 배열 [0, 2, 2, 4, 0] (겹치는 자리)]의 x.grad', '최대 절대 차이']),
    'stage5.5': (  # backward without the 1 / (K*K)
        'g = (gy.data / (K * K))[:, :, None, None]',
        'g = gy.data[:, :, None, None]',
        ['x(2, 3, 6, 6), K=2, S=2, P=0: x.grad (중앙 차분과 비교)', '최대 절대 차이']),
    'stage5.6': (  # the update gate the other way round
        'return z * h + (1 - z) * g',
        'return (1 - z) * h + z * g',
        ['h_new (NumPy로 쓴 GRU 식과 비교)', '최대 절대 차이']),
    'theory.1': ('return np.sqrt(2 / n)', 'return np.sqrt(1 / n)',
                 ['he_std(1) = sqrt(2/n)', '최대 절대 차이: 4.142e-01']),
    'theory.2': ('return s * (1 - s)', 'return s',
                 ['sigmoid_slope(z) (F.sigmoid의 역전파와 비교)', '최대 절대 차이']),
    'theory.3': ('grad *= 1 + a * (1 - np.tanh(h) ** 2)', 'grad *= a * (1 - np.tanh(h) ** 2)',
                 ['residual_grad(0.5, 0.1, 10) (역전파와 비교)', '최대 절대 차이']),
    'theory.4': ('        if id(v) not in visited:\n', '        if True:\n',
                 ['c = a*b, d = c + a: 목록의 길이', '기대값: 4', '받은 값: 5']),
    'stage3.1': ('return gy * -F.sin(x)', 'return gy * -np.sin(x.data)',
                 ['2차 미분 -cos(0.7)']),
    'stage4_tensors.4': ('Transpose(tuple(np.argsort(self.axes)))(gy)',
                         'Transpose(self.axes)(gy)',
                         # mydezero (like DeZero) stores a gradient of the wrong shape
                         # without a word; the check's shape comparison catches it
                         ['틀린 확인: Transpose((2, 0, 1))의 x.grad (기울기가 원래 자리로)',
                          '받은 모양: (3, 4, 2)']),
    'stage2.1': ('grad_step14 = 8.0', 'grad_step14 = 6.0',
                 ['grad_step14 (step14의 역전파와 비교)', '최대 절대 차이: 2.000e+00']),
    # one wrong answer for every other exercise too
    'stage1.1': ('forward_error = 3 * h + h ** 2',
        'forward_error = 3 * h',
        ['틀린 확인: forward_error (전진 차분 - 3)', '최대 절대 차이']),
    'stage1.2': ('return exp(square(exp(x)))',
        'return exp(exp(x))',
        ['틀린 확인: y (x = 0.5)', '최대 절대 차이']),
    'stage1.3': ('return 3 * x ** 2 * gy',
        'return x ** 2 * gy',
        ['틀린 확인: x.grad = 3x^2 (x = -1.5)', '최대 절대 차이']),
    'stage1.4': ('x_grad = 2.0 ** 1020',
        'x_grad = 2.0 * 1020',
        ['틀린 확인: x_grad (08단계의 역전파와 비교)', '최대 절대 차이']),
    'stage2.2': ('variable_generations = [0, 1, 2, 3]',
        'variable_generations = [0, 1, 2, 2]',
        ['틀린 확인: variable_generations ([x, a, b, y])', '기대값']),
    'stage2.3': ('return 1 / (1 + exp(-x))',
        'return 1 / (1 + exp(x))',
        ['틀린 확인: sigmoid(x)의 값 (x = -2.0)', '최대 절대 차이']),
    'stage2.4': ('grad_inside = None',
        'grad_inside = 6.0',
        ['틀린 확인: grad_inside (no_grad 안의 y에서 역전파한 x.grad)', '기대값']),
    'stage3.2': ('    for _ in range(n):\n        x.cleargrad()\n',
        '    for _ in range(n):\n',
        ['틀린 확인: nth_derivative(F.tanh, x = 0.5, 2) (닫힌 식과 비교)', '최대 절대 차이']),
    'stage3.3': ('x.data = x.data - gx.data / x.grad.data',
        'x.data = x.data - gx.data',
        ['틀린 확인: newton(x^3/3 - 2x, 1.0, 3)', '최대 절대 차이']),
    'stage3.4': ('        x.cleargrad()\n        y.cleargrad()\n',
        '',
        ['틀린 확인: hessian(matyas, 1.0, 2.0)', '최대 절대 차이']),
    'stage4_tensors.1': ('return F.broadcast_to(gy / n, self.x_shape)',
        'return F.broadcast_to(gy, self.x_shape)',
        ['틀린 확인: Mean(0)의 x.grad (중앙 차분과 비교)', '최대 절대 차이']),
    'stage4_tensors.2': ('b_grad = [3.0, 3.0, 3.0]',
        'b_grad = [1.0, 1.0, 1.0]',
        ['틀린 확인: b_grad (역전파와 비교)', '최대 절대 차이']),
    'stage4_tensors.3': ('summed_axes = (0, 2)',
        'summed_axes = (0, 1)',
        ['틀린 확인: x.sum(axis=summed_axes) (sum_to와 같은 원소인가)', '모양이 다릅니다']),
    'stage4.1': ('return gy * (1 - y * y)',
        'return gy * (1 - y)',
        ['틀린 확인: x.grad (F.tanh의 기울기와 비교)', '최대 절대 차이']),
    'stage4.2': ('params_before = 10 + 20 + 3',
        'params_before = 313',
        ['틀린 확인: params_before (손으로 센 값)', '최대 절대 차이']),
    'stage4.3': ('last_batch = 1000 - 15 * 64',
        'last_batch = 64',
        ['틀린 확인: last_batch (마지막 배치의 크기)', '최대 절대 차이']),
    'stage4.4': ('x_grad = [1 / 8, 2 / 8, 5 / 8 - 1]',
        'x_grad = [1 / 8, 2 / 8, 5 / 8]',
        ['틀린 확인: x_grad (역전파와 비교)', '최대 절대 차이']),
    'stage5.1': ('return (H + 2 * P - K) // S + 1',
        'return (H + P - K) // S + 1',
        ['틀린 확인: conv_outsize(224, 7, 2, 3)', '최대 절대 차이']),
    'stage5.2': ('n_params = 16 * 3 * 3 * 3 + 16',
        'n_params = 16 * 3 * 3 * 3',
        ['틀린 확인: n_params (Conv2d의 매개변수 원소 수)', '최대 절대 차이']),
    'stage5.3': ('x_grad = [[0, 0, 2, 0],',
        'x_grad = [[0, 0, 0, 2],',
        ['틀린 확인: x_grad (F.pooling의 역전파와 비교)', '최대 절대 차이']),
    'stage5.4': ('grad_c0 = 0.9 ** 10',
        'grad_c0 = 0.9 ** 9',
        ['틀린 확인: grad_c0 (역전파한 dc_10/dc_0과 비교)', '최대 절대 차이']),
    'stage6_beyond.1': ('scale = min(1.0, max_norm / norm) if norm > 0 else 1.0',
        'scale = max_norm / norm',
        ['틀린 확인: 경우 3: 자른 기울기 0 (clip_grad_norm과 비교)', '최대 절대 차이']),
    'stage6_beyond.2': ('[np.cos(x0), 0.0, 1.0],',
        '[np.sin(x0), 0.0, 1.0],',
        ['틀린 확인: x = [0.5, -1.0, 2.0]: J의 0번째 열 (jvp와 비교)', '최대 절대 차이']),
    'stage6_beyond.3': ('grad_alternating = 0.75 ** 5',
        'grad_alternating = 1.5 ** 10',
        ['틀린 확인: grad_alternating (역전파한 x.grad의 첫 성분과 비교)', '최대 절대 차이']),
}


def test_every_exercise_has_a_wrong_answer():
    assert sorted(WRONG) == sorted(IDS)


@pytest.mark.parametrize('ident', sorted(WRONG))
def test_wrong_answer_fails_naming_the_check_and_the_difference(ident, tmp_path):
    group = ident.split('.')[0]
    old, new, fragments = WRONG[ident]
    source = (ANSWERS / f'{group}.py').read_text(encoding='utf-8')
    assert source.count(old) == 1, f'the answer to {ident} no longer says {old!r}'
    wrong = tmp_path / f'wrong_{group}.py'
    wrong.write_text(source.replace(old, new), encoding='utf-8')
    ok, message = exercises.run(ident, path=wrong)
    assert not ok, message
    for fragment in fragments:
        assert fragment in message, message


def test_adam_without_bias_correction_reports_the_first_step_difference(tmp_path):
    """Hand-checked size: at t = 1, m = 0.1 g and sqrt(v) = sqrt(0.001) |g|, so the step
    without correction is alpha * 0.1 / sqrt(0.001) = 3.162 alpha instead of alpha; with
    alpha = 0.1 that is 0.2162 more on every coordinate."""
    old, new, _ = WRONG['stage4.5']
    wrong = tmp_path / 'adam.py'
    wrong.write_text((ANSWERS / 'stage4.py').read_text(encoding='utf-8').replace(old, new),
                     encoding='utf-8')
    ok, message = exercises.run('stage4.5', path=wrong)
    assert not ok
    diff = float(re.search(r'최대 절대 차이: ([0-9.e+-]+)', message).group(1))
    assert abs(diff - 0.1 * (0.1 / 0.001 ** 0.5 - 1)) < 1e-3, message
    # docs/tutorial/index.md quotes this very message
    page = (ROOT / 'docs' / 'tutorial' / 'index.md').read_text(encoding='utf-8')
    quoted = re.search(r'```text\n(실패: stage4\.5 .*?)```', page, re.S).group(1)
    assert quoted.rstrip('\n') == message


def test_cube_backward_that_forgets_gy_fails(tmp_path):
    """The mistake stage1.md's "자주 하는 실수" warns of: 3x^2 without the upstream gy."""
    source = (ANSWERS / 'stage1.py').read_text(encoding='utf-8')
    assert 'return 3 * x ** 2 * gy' in source
    wrong = tmp_path / 'cube.py'
    wrong.write_text(source.replace('return 3 * x ** 2 * gy', 'return 3 * x ** 2'),
                     encoding='utf-8')
    ok, message = exercises.run('stage1.3', path=wrong)
    assert not ok
    assert '틀린 확인: exp(cube(x))의 x.grad = e^{x^3} 3x^2 (x = 0.5, gy를 곱했는가)' in message
    assert '최대 절대 차이' in message


def test_a_missing_name_is_reported(tmp_path):
    empty = tmp_path / 'empty.py'
    empty.write_text('', encoding='utf-8')
    ok, message = exercises.run('stage4.5', path=empty)
    assert not ok and '`Adam`' in message
    broken = tmp_path / 'broken.py'
    broken.write_text('import numpy as np\nx = 1 / 0\n', encoding='utf-8')
    ok, message = exercises.run('stage4.5', path=broken)
    assert not ok
    assert '예외가 난 확인: 답 파일 불러오기 (import)' in message
    assert '(broken.py 2번째 줄, <module>)' in message and 'ZeroDivisionError' in message


def _check(*args, cwd, timeout=300):
    return subprocess.run([sys.executable, str(CHECK), *map(str, args)], capture_output=True,
                          text=True, encoding='utf-8', env=python_env(PYTHONIOENCODING='utf-8'),
                          cwd=cwd, timeout=timeout)


def test_check_py_as_a_learner_runs_it(tmp_path):
    listed = _check('--list', cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.split('\n')[:-1]
    assert [line.split('\t')[0] for line in lines if not line.startswith('package ')] == IDS
    assert [line.split('\t')[1] for line in lines[:len(IDS)]] == \
        [exercises.get(i).title for i in IDS]

    stub = _check('stage4.6', '--stub', cwd=tmp_path)
    assert stub.returncode == 0 and stub.stdout == exercises.get('stage4.6').stub
    mine = tmp_path / 'my_getitem.py'
    mine.write_text(stub.stdout, encoding='utf-8')
    failed = _check('stage4.6', mine, cwd=tmp_path)
    assert failed.returncode == 1
    assert 'NotImplementedError' in failed.stdout and 'my_getitem.py' in failed.stdout

    passed = _check('stage4.6', ANSWERS / 'stage4.py', cwd=tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert passed.stdout.startswith('통과: stage4.6 ')

    old, new, fragments = WRONG['stage4.6']
    mine.write_text((ANSWERS / 'stage4.py').read_text(encoding='utf-8').replace(old, new),
                    encoding='utf-8')
    wrong = _check('stage4.6', mine, cwd=tmp_path)
    assert wrong.returncode == 1
    assert all(f in wrong.stdout for f in fragments), wrong.stdout

    # a step-based exercise: the learner's file imports step09 from steps/
    passed = _check('stage1.3', ANSWERS / 'stage1.py', cwd=tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr

    unknown = _check('stage9.9', '--stub', cwd=tmp_path)
    assert unknown.returncode == 2 and 'stage9.9' in unknown.stderr


# ---------------------------------------------------------------------------
# The answer runs in its own process: nothing it does can make check.py pass or hang.

STAGE1 = ANSWERS / 'stage1.py'
RIGHT_11 = 'forward_error = 3 * 0.01 + 0.01 ** 2\ncentral_error = 0.01 ** 2\n'
WRONG_11 = 'forward_error = 3 * 0.01\ncentral_error = 0.01 ** 2\n'


def _answer(tmp_path, text, name='mine.py'):
    path = tmp_path / name
    path.write_text(text, encoding='utf-8')
    return path


@pytest.mark.parametrize('code, fragments', [
    ('import sys\nsys.exit(0)\n', ['SystemExit: 0', 'sys.exit()']),
    ('import sys\nsys.exit(1)\n', ['SystemExit: 1']),
    ('import sys\nsys.exit("bye")\n', ['SystemExit: bye']),
    ('raise KeyboardInterrupt\n', ['KeyboardInterrupt']),
    ('import os\nos._exit(0)\n', ['프로세스를 끝냈습니다 (종료 코드 0;',
                                 '확인 중이던 곳: 답 파일 불러오기 (import)']),
    ('import os\nos._exit(3)\n', ['프로세스를 끝냈습니다 (종료 코드 3;']),
], ids=['exit0', 'exit1', 'exit-msg', 'keyboardinterrupt', 'os_exit0', 'os_exit3'])
def test_an_answer_that_exits_gets_a_failure_verdict(tmp_path, code, fragments):
    done = _check('stage1.1', _answer(tmp_path, code + RIGHT_11), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith('실패: stage1.1 (수치 미분의 오차 예측)\n'), done.stdout
    assert 'Traceback' not in done.stdout + done.stderr
    for fragment in fragments:
        assert fragment in done.stdout, done.stdout
    assert done.stdout.endswith('(통과한 확인 0개)\n'), done.stdout


def test_an_exit_inside_a_check_names_the_check(tmp_path):
    source = STAGE1.read_text(encoding='utf-8').replace(
        '    return exp(square(exp(x)))', '    import os\n    os._exit(0)')
    done = _check('stage1.2', _answer(tmp_path, source), cwd=tmp_path)
    assert done.returncode == 1
    assert '확인 중이던 곳: f(x)의 순전파와 역전파 (x = 0.5)' in done.stdout, done.stdout


@pytest.mark.parametrize('patch', [
    'import numpy as np\nnp.abs = lambda a: a * 0\n',
    'import numpy as np\nnp.asarray = lambda a, *args, **kw: np.zeros(())\n',
    'import builtins\nbuiltins.print = lambda *a, **k: None\n',
], ids=['np.abs', 'np.asarray', 'print'])
def test_a_wrong_answer_that_patches_the_comparison_still_fails(tmp_path, patch):
    done = _check('stage1.1', _answer(tmp_path, patch + WRONG_11), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ('실패: stage1.1 (수치 미분의 오차 예측)\n'
                           '틀린 확인: forward_error (전진 차분 - 3)\n'
                           '  최대 절대 차이: 1.000e-04\n'
                           '  허용: atol=0, rtol=1e-06\n'
                           '  기대값: 0.03010000000001334\n'
                           '  받은 값: 0.03\n'
                           '(통과한 확인 0개)\n'), done.stdout
    right = _check('stage1.1', _answer(tmp_path, patch + RIGHT_11), cwd=tmp_path)
    if 'asarray' not in patch:  # a patched asarray also breaks the answer's own numbers
        assert right.returncode == 0, right.stdout + right.stderr
        assert right.stdout.startswith('통과: stage1.1 '), right.stdout


def test_adam_without_bias_correction_fails_even_with_np_abs_patched(tmp_path):
    old, new, fragments = WRONG['stage4.5']
    source = (ANSWERS / 'stage4.py').read_text(encoding='utf-8').replace(old, new)
    mine = _answer(tmp_path, 'import numpy as np\nnp.abs = lambda a: a * 0\n' + source)
    done = _check('stage4.5', mine, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert all(f in done.stdout for f in fragments), done.stdout


LOOP = 'while True:\n    pass\n'
READ_LOOPS = ('class Loop:\n    def __float__(self):\n        while True:\n            pass\n'
              '\n\nforward_error = Loop()\n')


@pytest.mark.parametrize('code, where', [
    (LOOP, '답 파일 불러오기 (import)'),
    (READ_LOOPS, 'forward_error (전진 차분 - 3)'),
], ids=['loop', 'value-loops-when-read'])
def test_an_answer_that_never_ends_times_out(tmp_path, code, where):
    done = _check('stage1.1', _answer(tmp_path, code), '--timeout', '2', cwd=tmp_path,
                  timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ('실패: stage1.1 (수치 미분의 오차 예측)\n'
                           '시간 초과: 답 코드가 2초 안에 끝나지 않았습니다 (끝나지 않는 반복?).\n'
                           f'  확인 중이던 곳: {where}\n(통과한 확인 0개)\n'), done.stdout


@pytest.mark.skipif(not pathlib.Path('/proc/self/stat').exists(), reason='needs /proc')
def test_the_time_limit_ends_the_answers_whole_process_group(tmp_path):
    pid_file = tmp_path / 'pid'
    code = ('import subprocess, sys\n'
            'p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])\n'
            f'open({str(pid_file)!r}, "w").write(str(p.pid))\n' + LOOP)
    done = _check('stage1.1', _answer(tmp_path, code), '--timeout', '3', cwd=tmp_path,
                  timeout=60)
    assert done.returncode == 1 and '시간 초과' in done.stdout, done.stdout + done.stderr
    stat = pathlib.Path(f'/proc/{int(pid_file.read_text())}/stat')
    assert not stat.exists() or stat.read_text().split(') ')[1][0] in 'ZX'


def test_a_leftover_thread_does_not_hang_the_checker(tmp_path):
    thread = 'import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()\n'
    done = _check('stage1.1', _answer(tmp_path, thread + RIGHT_11), cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith('통과: stage1.1 '), done.stdout


@pytest.mark.skipif(shutil.which('sh') is None, reason='closes stdout with sh')
def test_a_closed_stdout_still_gives_the_verdict_on_stderr(tmp_path):
    def closed(*args):
        return subprocess.run(['sh', '-c', 'exec "$0" "$@" >&-', sys.executable, str(CHECK),
                               *map(str, args)], capture_output=True, text=True,
                              encoding='utf-8', env=python_env(PYTHONIOENCODING='utf-8'),
                              cwd=tmp_path, timeout=120)
    passed = closed('stage1.1', _answer(tmp_path, RIGHT_11))
    assert passed.returncode == 0, passed.stderr
    assert passed.stderr.startswith('통과: stage1.1 '), passed.stderr
    failed = closed('stage1.1', _answer(tmp_path, WRONG_11))
    assert failed.returncode == 1 and failed.stderr.startswith('실패: stage1.1 '), failed.stderr
    listed = closed('--list')
    assert listed.returncode == 2 and 'Traceback' not in listed.stderr, listed.stderr
    assert '출력을 쓸 수 없습니다' in listed.stderr


def test_a_closed_pipe_gives_no_traceback(tmp_path):
    proc = subprocess.Popen([sys.executable, str(CHECK), '--list'], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=python_env(PYTHONIOENCODING='utf-8'),
                            cwd=tmp_path)
    proc.stdout.close()  # as `--list | head -n 0`: closed before the checker writes
    err = proc.stderr.read().decode('utf-8')
    proc.stderr.close()
    assert proc.wait(timeout=120) == 2, err
    assert 'Traceback' not in err and 'Exception ignored' not in err, err
    assert '출력을 쓸 수 없습니다' in err, err


def test_values_cross_the_process_boundary_unchanged():
    """What the child sends is what the answer returned: same type, dtype, shape and bits."""
    import numpy as np
    from exercises import sandbox
    values = [1.5, float('inf'), 7, True, None, 'abc', Ellipsis, 2.0 ** 1020,
              [1, (2.5, [None, ...])], (), np.float64(0.1), np.int64(-3), np.bool_(False),
              np.array([[0.1, float('nan')], [1e-300, -0.0]]), np.arange(6, dtype=np.int32),
              np.array([1.5, 2.25], dtype=np.float16), np.array(['a', 'bc'])]
    for value in values:
        back = sandbox.decode(json.loads(json.dumps(sandbox.encode(value))))
        assert type(back) is type(value), value
        if isinstance(value, np.ndarray):
            assert back.dtype == value.dtype and back.shape == value.shape
            assert back.tobytes() == value.tobytes()
        elif isinstance(value, float) and value != value:
            assert back != back
        else:
            assert back == value or back is value, value
    nan = sandbox.decode(sandbox.encode(float('nan')))
    assert nan != nan
    variable = exercises.load_file  # any object without a number in it
    shadow = sandbox.decode(sandbox.encode(variable))
    assert repr(shadow) == repr(variable) and not hasattr(shadow, 'data')
    assert shadow != shadow  # equal to nothing, so it never passes an equality check
    from dezero_kr import Variable
    v = sandbox.decode(sandbox.encode(Variable(np.array([1.0, 2.0]))))
    assert v.data.tolist() == [1.0, 2.0] and repr(v).startswith('variable(')
    with pytest.raises(ValueError, match='태그'):
        sandbox.decode({'t': 'pickle', 'v': 'gASV'})


def test_every_answer_passes_as_a_learner_runs_it(tmp_path):
    """The isolated path (expected values from the reference here, the answer's values from
    the child) agrees with the in-process one on every exercise."""
    for ident in IDS:
        ok, message = exercises.run(ident, path=ANSWERS / f'{ident.split(".")[0]}.py')
        assert ok, message
        assert message == exercises.run(ident, module=answer_module(ident.split('.')[0]))[1]


def test_stage_pages_document_the_checker():
    pages = ROOT / 'docs' / 'tutorial'
    assert 'steps/check.py' in (pages / 'index.md').read_text(encoding='utf-8')
    assert 'check.py' in (ROOT / 'steps' / 'README.md').read_text(encoding='utf-8')
    text = '\n'.join(p.read_text(encoding='utf-8') for p in pages.glob('*.md'))
    for ident in IDS:  # every exercise is named on a page, so a learner finds its id
        assert f'`python steps/check.py {ident} 내_답.py`' in text, ident


# ---------------------------------------------------------------------------
# From stage 3 on, the "build a piece" exercises use the learner's own package, mydezero.

MYDEZERO_IDS = ('stage3.1', 'stage4_tensors.1', 'stage4_tensors.4', 'stage4.1', 'stage4.5',
                'stage4.6', 'stage5.5', 'stage5.6')


def _imports(source):
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split('.')[0])
    return names


@pytest.mark.parametrize('ident', MYDEZERO_IDS)
def test_piece_stubs_import_mydezero_not_the_reference(ident):
    imported = _imports(exercises.get(ident).stub)
    assert 'mydezero' in imported and 'dezero_kr' not in imported, (ident, imported)


@pytest.mark.parametrize('group', ['stage3', 'stage4_tensors', 'stage4', 'stage5'])
def test_answers_of_stages_3_to_5_import_mydezero(group):
    imported = _imports((ANSWERS / f'{group}.py').read_text(encoding='utf-8'))
    assert 'mydezero' in imported and 'dezero_kr' not in imported, (group, imported)


def test_the_adam_stub_has_the_shape_of_mydezeros_adam():
    """mydezero's Optimizer (step 46) counts no steps: its Adam keeps ``t`` and overrides
    ``update``. The stub asks for the same methods and says so."""
    import mydezero.optimizers
    stub = exercises.get('stage4.5').stub
    cls = next(n for n in ast.parse(stub).body if isinstance(n, ast.ClassDef))
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert methods == {'__init__', 'update', 'update_one'}
    assert methods <= set(vars(mydezero.optimizers.Adam))
    assert not hasattr(mydezero.optimizers.Optimizer(), 't')
    assert 'from mydezero.optimizers import Optimizer' in stub
    assert 'self.t = 0' in stub and '기반 클래스의 update()가 부를 때마다' not in stub


# the learner's package's own pieces, written as an answer file, pass the checks
OWN_PIECES = {
    'stage3.1': 'from mydezero.functions import Cos, cos\n',
    'stage4.1': 'from mydezero.functions import Tanh, tanh\n',
    'stage4.5': 'from mydezero.optimizers import Adam\n',
    'stage4.6': 'from mydezero.functions import GetItem, get_item\n',
    'stage4_tensors.4': 'from mydezero.functions import Transpose\n',
    'stage5.5': 'from mydezero.functions import average_pooling\n',
}


@pytest.mark.parametrize('ident', sorted(OWN_PIECES))
def test_mydezeros_own_pieces_pass_in_the_child_process(ident, tmp_path):
    ok, message = exercises.run(ident, path=_answer(tmp_path, OWN_PIECES[ident]))
    assert ok, message
