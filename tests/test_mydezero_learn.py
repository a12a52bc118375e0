"""Tests for "build it yourself": ``mydezero_at.py N DIR --blank [--keep]`` and
``check.py package N DIR``.

* (a) for every step 23..60, ``--blank`` leaves step N's pieces as stubs that the step's
  check fails, naming the step and the piece; the reference bodies filled into those
  stubs (piece by piece, by AST) pass;
* (b) the classic mistakes of a piece fail with the piece's case and the largest
  difference (a backward that forgets ``gy``, ``sum_to`` without keepdims, a transpose
  backward with the wrong axes, Adam without bias correction, dropout scaled at test time,
  im2col with the wrong stride);
* (c) the learner's path adds up: ``--blank`` at 23, fill, check, ``--blank --keep`` to the
  next step ... up to 60; every ``--keep`` only adds lines; the result runs the step
  scripts 23..60 to their goldens and passes the DeZero-compat tests of
  ``tests/test_mydezero.py``;
* (d) ``--keep`` keeps a learner's edit intact over two steps, and refuses (changing
  nothing) when it cannot place a piece; a kept package is not overwritten by a plain
  extraction; ``check.py --list`` and the command line of ``check.py package``.
"""
import ast
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from _subproc import ROOT, python_env

STEPS_DIR = ROOT / 'steps'
sys.path.insert(0, str(STEPS_DIR))

import exercises  # noqa: E402
import mydezero_at  # noqa: E402
import mydezero_blank  # noqa: E402
from exercises import golden  # noqa: E402

STEPS = list(range(mydezero_at.FIRST, mydezero_at.LAST + 1))
WITH_PIECES = [n for n in STEPS if mydezero_at.blank_pieces(n)]


def _tool(*args, cwd=None):
    return subprocess.run([sys.executable, str(STEPS_DIR / 'mydezero_at.py'), *map(str, args)],
                          capture_output=True, text=True, encoding='utf-8', timeout=120,
                          cwd=cwd, env=python_env(PYTHONIOENCODING='utf-8'))


def _check_cli(*args):
    return subprocess.run([sys.executable, str(STEPS_DIR / 'check.py'), *map(str, args)],
                          capture_output=True, text=True, encoding='utf-8', timeout=600,
                          env=python_env(PYTHONIOENCODING='utf-8'))


def _files(folder):
    return {p.name: p.read_text(encoding='utf-8')
            for p in sorted((folder / 'mydezero').glob('*.py'))}


def fill(n, folder, files=None):
    """Fill step n's stubs in folder/mydezero with the reference bodies, piece by piece: each
    piece the tool names is replaced by the reference's definition of that piece (AST).
    ``files``: only these files of the package."""
    reference = mydezero_at.package_at(n)
    for name, quals in mydezero_at.blank_pieces(n).items():
        if files is not None and name not in files:
            continue
        path = folder / 'mydezero' / name
        ref_lines = reference[name].splitlines(keepends=True)
        ref_pieces = mydezero_blank.pieces(ast.parse(reference[name]))
        text = path.read_text(encoding='utf-8')
        for qual in quals:
            lines = text.splitlines(keepends=True)
            mine = mydezero_blank.pieces(ast.parse(text))[qual]
            ref = ref_pieces[qual]
            lines[mydezero_blank._start(mine) - 1:mine.end_lineno] = \
                ref_lines[mydezero_blank._start(ref) - 1:ref.end_lineno]
            text = ''.join(lines)
        path.write_text(text, encoding='utf-8')


def _grade(n, folder):
    return exercises.run(f'package.{n}', path=folder, timeout=120)


def _is_subsequence(old, new):
    it = iter(new)
    return all(line in it for line in old)


# ---------------------------------------------------------------------------
# (a) every step's stubs fail, named; the reference filled in passes

@pytest.mark.parametrize('n', WITH_PIECES, ids=[f'step{n}' for n in WITH_PIECES])
def test_blank_stubs_fail_naming_the_piece_and_filled_pass(n, tmp_path):
    done = _tool(n, tmp_path, '--blank')
    assert done.returncode == 0, done.stderr
    assert 'NotImplementedError' in done.stdout
    pieces = [q for qs in mydezero_at.blank_pieces(n).values() for q in qs]
    ok, message = _grade(n, tmp_path)
    assert not ok
    assert f'{n}단계: ' in message and any(f'{q}을(를)' in message for q in pieces), message
    assert 'NotImplementedError' in message
    fill(n, tmp_path)
    ok, message = _grade(n, tmp_path)
    assert ok, message
    assert '확인 ' in message and '개 모두 맞습니다' in message


def test_stubs_keep_signature_and_docstring_and_raise_naming_step_and_piece():
    text = mydezero_at.package_at(41, blank=True)['functions.py']
    tree = ast.parse(text)
    backward = mydezero_blank.pieces(tree)['MatMul.backward']
    assert [a.arg for a in backward.args.args] == ['self', 'gy']
    assert 'dL/dx' in ast.get_docstring(backward)
    assert ast.unparse(backward.body[-1]) == \
        "raise NotImplementedError('41단계: MatMul.backward을(를) 채우세요')"
    # the reference's own docstring is kept
    sum_to = mydezero_blank.pieces(ast.parse(mydezero_at.package_at(40, blank=True)['utils.py']))
    assert ast.get_docstring(sum_to['sum_to']) == 'x를 더해서 shape으로 만든다 (broadcast_to의 반대).'
    # everything before step 41 is the reference's, unchanged
    assert mydezero_at.package_at(41, blank=True)['core_simple.py'] == \
        mydezero_at.package_at(41)['core_simple.py']


def test_a_changed_piece_keeps_the_old_code_under_a_comment_and_raise():
    text = mydezero_at.package_at(40, blank=True)['core.py']
    add = mydezero_blank.pieces(ast.parse(text))['Add.backward']
    body = ast.unparse(add)
    assert "raise NotImplementedError('40단계: Add.backward을(를) 고치세요')" in body
    assert 'gx0, gx1 = (gy, gy)' in body  # the step-39 code, below the raise
    assert '# 40단계: 이 부품을 고치세요.\n        # (브로드캐스트: ' in text


def test_im2col_is_written_at_step_56_57_adds_conv_and_58_max_pooling_on_it():
    at56 = mydezero_at.blank_pieces(56)
    assert at56['functions_conv.py'] == [
        'Im2col.__init__', 'Im2col.forward', 'Im2col.backward', 'im2col', 'Col2im.__init__',
        'Col2im.forward', 'Col2im.backward', 'col2im', 'im2col_array', 'col2im_array',
        'AveragePooling.__init__', 'AveragePooling.forward', 'AveragePooling.backward',
        'average_pooling']
    at57 = mydezero_at.blank_pieces(57)['functions_conv.py']
    assert 'Conv2d.forward' in at57 and 'Deconv2d.forward' in at57
    assert not any('pool' in q.lower() for q in at57)  # max pooling is step 58's
    at58 = mydezero_at.blank_pieces(58)['functions_conv.py']
    assert 'Pooling.forward' in at58 and 'pooling_simple' in at58
    for at in (at57, at58):
        assert not any('im2col' in q.lower() or 'col2im' in q.lower() for q in at)
    # step 56's package has the file, re-exported as F.im2col; no conv2d yet
    files = mydezero_at.package_at(56)
    assert 'def im2col_array(' in files['functions_conv.py']
    assert 'conv2d' not in files['functions_conv.py']
    assert 'from mydezero.functions_conv import im2col\n' in files['functions.py']
    assert 'import mydezero.functions_conv\n' in files['__init__.py']


SCRIPT_ONLY = sorted(mydezero_at.SCRIPT_ONLY)


def test_every_step_has_pieces_and_a_check_or_says_what_its_script_writes():
    assert 24 not in WITH_PIECES and 56 in WITH_PIECES
    for n in STEPS:
        assert (n in WITH_PIECES) != (n in mydezero_at.SCRIPT_ONLY), n
        assert (n in exercises.package_steps()) == (n in WITH_PIECES), n
    assert SCRIPT_ONLY == [24, 25, 27, 28, 29, 31, 32, 33, 34, 36, 37]


def added_names(n):
    """The names step n adds to the package, as ``--changes`` lists them: top-level names new to
    the package (a name moved to a new file, as core_simple's into core, is not new; private
    helpers not counted) and the new members of classes that were there (``Variable.max``).
    ``__init__.py`` only re-exports."""
    old = mydezero_at.package_at(n - 1) if n > mydezero_at.FIRST else {}
    before = {x for name, text in old.items() if name != '__init__.py'
              for x in mydezero_at.top_names(text)}
    added = []
    for name, text in mydezero_at.package_at(n).items():
        if name == '__init__.py' or old.get(name) == text:
            continue
        added += [x for x in mydezero_at.top_names(text)
                  if x not in before and not x.startswith('_')]
        if name in old:
            members = mydezero_at.member_names(old[name])
            added += [f'{cls}.{m}' for cls, ms in mydezero_at.member_names(text).items()
                      if cls in members for m in ms if m not in members[cls]]
    return added


MOST_NAMES = 8  # what a learner writes in one sitting
# over that: 23 gathers steps 1-22 (already written once) into core_simple; 30 adds Sin, Cos,
# Log and utils' numerical checks to the new core; 52 the cuda module and a to_cpu/to_gpu pair
# on three classes; 58 max pooling (simple and fast, with Variable.max/min) beside VGG16 and
# FreezeParam
OVER = {23: 23, 30: 11, 52: 12, 58: 9}


def test_no_step_adds_more_names_than_a_learner_writes_in_one_sitting():
    counts = {n: len(added_names(n)) for n in STEPS}
    assert {n: c for n, c in counts.items() if c > MOST_NAMES} == OVER, counts
    assert [counts[n] for n in (46, 47, 48, 54, 55, 56, 57, 58)] == [4, 8, 8, 7, 8, 8, 8, 9]


@pytest.mark.parametrize('piece, n', [
    ('SGD', 46), ('MomentumSGD', 46), ('zeros_like', 46), ('Adam', 54), ('AdaGrad', 54),
    ('RMSprop', 54), ('WeightDecay', 54), ('FreezeParam', 58), ('Variable.__getitem__', 47),
    ('get_item', 47), ('softmax_simple', 47), ('softmax_cross_entropy_simple', 47),
    ('clip', 47), ('softmax', 48), ('softmax_cross_entropy', 48), ('log_softmax', 48),
    ('logsumexp', 48), ('get_spiral', 48), ('Max', 55), ('Min', 55), ('max', 55), ('min', 55),
    ('max_backward_shape', 55), ('AveragePooling', 56), ('average_pooling', 56),
    ('conv2d_simple', 57), ('conv2d', 57), ('deconv2d', 57), ('Deconv2d', 57),
    ('Conv2DGradW', 57), ('pooling_simple', 58), ('pooling', 58), ('Pooling', 58),
    ('Pooling2DGrad', 58), ('Pooling2DWithIndexes', 58), ('Variable.max', 58),
    ('Variable.min', 58), ('VGG16', 58)])
def test_a_piece_enters_at_the_step_that_first_uses_it(piece, n):
    assert piece in added_names(n)
    assert not any(piece in added_names(k) for k in STEPS if k != n)
    # the step's own script names it (that no earlier script uses it: each step runs against
    # the package as of that step, tests/test_mydezero.py)
    word = piece.split('.')[-1]
    script = (STEPS_DIR / f'step{n:02d}.py').read_text(encoding='utf-8')
    assert re.search(rf'\b{re.escape(word)}\b', script), (piece, n)


@pytest.mark.parametrize('n', SCRIPT_ONLY, ids=[f'step{n}' for n in SCRIPT_ONLY])
def test_a_step_without_pieces_says_so_and_its_check_grades_the_script(n, tmp_path):
    done = _tool(n, tmp_path, '--blank')
    assert done.returncode == 0, done.stderr
    what = mydezero_at.SCRIPT_ONLY[n]
    assert done.stdout.splitlines()[1:] == [
        f'{n}단계에는 패키지(mydezero)에 더할 부품이 없다: 빈칸이 없고, 패키지는 {n - 1}단계 그대로다.',
        f'이 단계에서 직접 쓰는 것은 단계 스크립트 steps/step{n:02d}.py다: {what}.',
        f'확인: python steps/check.py package {n} 폴더 (그 스크립트를 내 패키지로 돌려 정답 출력과 '
        '비교한다)']
    assert _files(tmp_path) == mydezero_at.package_at(n)  # no stubs: the reference as it is
    checked = _check_cli('package', n, tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout == (
        f'{n}단계에는 패키지에 더한 부품이 없습니다 (확인할 빈칸이 없습니다). 이 단계에서 직접 쓰는 것은\n'
        f'단계 스크립트 steps/step{n:02d}.py입니다: {what}.\n'
        '그 스크립트를 내 패키지로 돌려 정답 출력과 비교합니다.\n'
        f'step{n:02d}.py의 출력이 정답과 같습니다.\n')


@pytest.mark.parametrize('n, name, right, wrong', [
    (24, 'core_simple.py', 'return gy * x1, gy * x0', 'return gy * x1, gy * x1'),
    (34, 'functions.py', 'gx = gy * cos(x)', 'gx = gy * -cos(x)'),
], ids=['step24-mul-backward', 'step34-sin-backward'])
def test_a_step_without_pieces_still_fails_a_wrong_package_by_its_golden(n, name, right,
                                                                        wrong, tmp_path):
    assert _tool(n, tmp_path, '--blank').returncode == 0
    path = tmp_path / 'mydezero' / name
    text = path.read_text(encoding='utf-8')
    assert text.count(right) == 1
    path.write_text(text.replace(right, wrong), encoding='utf-8')
    checked = _check_cli('package', n, tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    # the script's own asserts stop it (exit code 1) before it prints a wrong golden
    assert f'실패: step{n:02d}.py이(가) 종료 코드 1로 끝났습니다' in checked.stdout, checked.stdout
    assert 'AssertionError' in checked.stdout


def test_keep_over_a_step_without_pieces_says_the_files_stay(tmp_path):
    assert _tool(23, tmp_path, '--blank').returncode == 0
    fill(23, tmp_path)
    before = _files(tmp_path)
    done = _tool(24, tmp_path, '--blank', '--keep')
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == \
        f'24단계: {tmp_path / "mydezero"}의 파일은 그대로 두었다 (표시만 24단계로 바꿨다).'
    assert '24단계에는 패키지(mydezero)에 더할 부품이 없다' in done.stdout
    assert _files(tmp_path) == before


# ---------------------------------------------------------------------------
# (b) the classic mistakes

MISTAKES = [
    (41, 'functions.py', 'gx = matmul(gy, W.T)', 'gx = matmul(gy * 0 + 1, W.T)',
     'matmul(x (2, 3), W (3, 4)): 입력 0의 기울기 (dezero_kr와 비교)', '최대 절대 차이'),
    (40, 'utils.py', 'y = x.sum(lead_axis + axis, keepdims=True)',
     'y = x.sum(lead_axis + axis)',
     'utils.sum_to(x (2, 3, 4), (1, 3, 4)) (keepdims로 모양을 지킨다)', '모양이 다릅니다'),
    (38, 'functions.py', 'return transpose(gy, inv_axes)', 'return transpose(gy, self.axes)',
     'transpose(x, (2, 0, 1)) (축을 준 전치): 입력 0의 기울기 (dezero_kr와 비교)',
     '모양이 다릅니다'),
    (54, 'optimizers.py', 'return self.alpha * math.sqrt(fix2) / fix1', 'return self.alpha',
     'Adam: 4번 갱신한 뒤의 매개변수 (dezero_kr의 Adam와 비교) [0]', '최대 절대 차이'),
    (54, 'functions.py', '    else:\n        return x\n',
     '    else:\n        return x * (1.0 - dropout_ratio)\n',
     'test_mode 안의 dropout(x, 0.3) (평가 때는 x 그대로)', '최대 절대 차이'),
    (56, 'functions_conv.py', '= img[:, :, j:j_lim:SH, i:i_lim:SW]',
     '= img[:, :, j:j + OH, i:i + OW]',
     'im2col_array(x (2, 3, 7, 7), 3, stride=2, pad=1, to_matrix=True) (dezero_kr와 비교)',
     '최대 절대 차이'),
    (56, 'functions_conv.py', 'img[:, :, j:j_lim:SH, i:i_lim:SW] += col',
     'img[:, :, j:j_lim:SH, i:i_lim:SW] = col',
     'col2im_array(c, x (2, 3, 7, 7), 3, stride=2, pad=1, to_matrix=True) (dezero_kr와 비교)',
     '최대 절대 차이'),
]


@pytest.mark.parametrize('n, name, right, wrong, label, how', MISTAKES,
                         ids=['forgets-gy', 'sum_to-keepdims', 'transpose-axes',
                              'adam-bias-correction', 'dropout-test-scale', 'im2col-stride',
                              'col2im-overwrites-overlaps'])
def test_a_classic_mistake_fails_with_the_case_and_the_difference(n, name, right, wrong, label,
                                                                  how, tmp_path):
    mydezero_at.write_package(n, str(tmp_path))
    path = tmp_path / 'mydezero' / name
    text = path.read_text(encoding='utf-8')
    assert text.count(right) == 1
    path.write_text(text.replace(right, wrong), encoding='utf-8')
    ok, message = _grade(n, tmp_path)
    assert not ok, message
    assert f'틀린 확인: {label}\n' in message, message
    assert how in message, message
    path.write_text(text, encoding='utf-8')  # and the right one passes
    ok, message = _grade(n, tmp_path)
    assert ok, message


# ---------------------------------------------------------------------------
# (c) the learner's path, 23 -> 60

COMPAT = ('values_and_grads or higher_order or second_order or each_optimizer or lstm_and_rnn '
          'or freeze_param or unchain or dropout_and or test_accuracy or datasets_and '
          'or save_and_load or cuda_switch or core_simple_grads or under_test')


@pytest.fixture(scope='module')
def walked(tmp_path_factory):
    """Walk 23 -> 60 as a learner: --blank at 23, then fill, grade, --blank --keep."""
    folder = tmp_path_factory.mktemp('learner')
    grades, only_added = {}, []
    done = _tool(23, folder, '--blank')
    assert done.returncode == 0, done.stderr
    for n in STEPS:
        if n > 23:
            before = _files(folder)
            done = _tool(n, folder, '--blank', '--keep')
            assert done.returncode == 0, f'step {n}: {done.stderr}'
            after = _files(folder)
            only_added += [(n, name) for name, text in before.items()
                           if not _is_subsequence(text.splitlines(), after[name].splitlines())]
        if n in WITH_PIECES:
            grades[n, 'stub'] = _grade(n, folder)
        fill(n, folder)
        grades[n, 'filled'] = _grade(n, folder)
    return folder, grades, only_added


@pytest.mark.slow
def test_the_walk_grades_each_step_and_keep_only_adds(walked):
    folder, grades, only_added = walked
    assert only_added == []
    # every line of the finished reference is there, in order (the rest: superseded old code)
    for name, text in mydezero_at.package_at(60).items():
        mine = (folder / 'mydezero' / name).read_text(encoding='utf-8').splitlines()
        assert _is_subsequence([x for x in text.splitlines() if x.strip()],
                               [x for x in mine if x.strip()]), name
    for n in STEPS:
        ok, message = grades[n, 'filled']
        assert ok, f'step {n} filled: {message}'
        if n in WITH_PIECES:
            ok, message = grades[n, 'stub']
            assert not ok and f'{n}단계: ' in message, f'step {n} stubs: {message}'


@pytest.mark.slow
def test_the_walked_package_runs_every_step_to_its_golden(walked):
    folder = walked[0]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        results = list(pool.map(lambda n: golden.run_step_on(n, str(folder), 300), STEPS))
    bad = [(n, message) for n, (ok, message) in zip(STEPS, results) if not ok]
    assert bad == []


@pytest.mark.slow
def test_the_walked_package_passes_the_dezero_compat_tests(walked):
    folder = walked[0]
    proc = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         str(ROOT / 'tests' / 'test_mydezero.py'), '-k', COMPAT],
        capture_output=True, text=True, encoding='utf-8', timeout=600, cwd=ROOT / 'tests',
        env=python_env(MYDEZERO_UNDER_TEST=str(folder), PYTHONIOENCODING='utf-8'))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert 'failed' not in summary and 'skipped' not in summary, proc.stdout[-2000:]
    assert int(summary.split(' passed')[0].split()[-1]) >= 40, summary  # the cases ran


# ---------------------------------------------------------------------------
# (d) --keep keeps the learner's lines, refuses what it cannot place

def test_a_learners_edit_survives_two_keep_steps(tmp_path):
    assert _tool(41, tmp_path, '--blank').returncode == 0
    fill(41, tmp_path)
    path = tmp_path / 'mydezero' / 'functions.py'
    text = path.read_text(encoding='utf-8')
    mine = ('    def backward(self, gy):\n'
            '        # 내가 쓴 역전파: dL/dx = gy W^T, dL/dW = x^T gy\n'
            '        x, W = self.inputs\n'
            '        return matmul(gy, W.T), matmul(x.T, gy)\n')
    old = ('    def backward(self, gy):\n        x, W = self.inputs\n'
           '        gx = matmul(gy, W.T)\n        gW = matmul(x.T, gy)\n        return gx, gW\n')
    assert text.count(old) == 1
    path.write_text(text.replace(old, mine), encoding='utf-8')
    ok, message = _grade(41, tmp_path)
    assert ok, message
    for n in (42, 43):
        before = _files(tmp_path)
        done = _tool(n, tmp_path, '--blank', '--keep')
        assert done.returncode == 0, done.stderr
        after = _files(tmp_path)
        for name, text in before.items():
            assert _is_subsequence(text.splitlines(), after[name].splitlines()), (n, name)
        fill(n, tmp_path)
    final = path.read_text(encoding='utf-8')
    assert mine in final
    ok, message = _grade(43, tmp_path)
    assert ok, message


def test_keep_refuses_when_it_cannot_place_a_piece_and_changes_nothing(tmp_path):
    assert _tool(40, tmp_path, '--blank').returncode == 0
    fill(40, tmp_path)
    path = tmp_path / 'mydezero' / 'functions.py'
    text = path.read_text(encoding='utf-8')
    # the learner renamed broadcast_to, the definition step 41's MatMul follows
    path.write_text(text.replace('def broadcast_to(x, shape):', 'def my_broadcast(x, shape):'),
                    encoding='utf-8')
    before = {p.name: p.read_bytes() for p in (tmp_path / 'mydezero').iterdir()}
    done = _tool(41, tmp_path, '--blank', '--keep')
    assert done.returncode == 2, done.stdout
    assert '41단계의 빈칸을 더하지 못했다. 아무것도 바꾸지 않았다.' in done.stderr
    assert ('functions.py: 41단계의 MatMul, MatMul.forward, MatMul.backward, matmul을(를) '
            'broadcast_to 뒤에 놓아야 하는데 broadcast_to이(가) 없다.') in done.stderr, done.stderr
    assert 'Traceback' not in done.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / 'mydezero').iterdir()} == before


@pytest.mark.parametrize('args, message', [
    (['41', '--blank', '--keep'], '--keep은 mydezero_at.py로 만든(--blank) 패키지에만 더한다'),
    (['43', '--blank', '--keep'], '이 패키지는 40단계다. --keep은 한 단계씩'),
    (['23', '--blank', '--keep'], '23단계는 처음이다'),
    (['41', '--keep'], ''),
], ids=['not-ours', 'skips-steps', 'first-step', 'keep-without-blank'])
def test_keep_refuses_a_package_it_cannot_continue(tmp_path, args, message):
    folder = tmp_path / 'own'
    if args[0] == '41' and message:
        (folder / 'mydezero').mkdir(parents=True)
        (folder / 'mydezero' / 'core.py').write_text('# mine\n', encoding='utf-8')
    else:
        assert _tool(40, folder, '--blank').returncode == 0
    before = {p.name: p.read_bytes() for p in (folder / 'mydezero').iterdir()}
    done = _tool(args[0], folder, *args[1:])
    assert done.returncode == 2
    assert message in done.stderr and 'Traceback' not in done.stderr
    assert {p.name: p.read_bytes() for p in (folder / 'mydezero').iterdir()} == before


def test_a_kept_package_is_not_overwritten_by_a_plain_extraction(tmp_path):
    assert _tool(40, tmp_path, '--blank').returncode == 0
    assert _tool(41, tmp_path, '--blank', '--keep').returncode == 0
    before = _files(tmp_path)
    done = _tool(41, tmp_path)
    assert done.returncode == 2
    assert '--blank --keep으로 41단계까지 이어 온 학습자의 패키지다' in done.stderr
    assert _files(tmp_path) == before


def test_check_list_gives_titles_and_the_package_steps():
    listed = _check_cli('--list')
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert 'stage4.1\tTanh 함수' in lines
    assert 'package 41\t41단계: 행렬 곱 MatMul (matmul, x.matmul, x.dot, x @ W)' in lines
    assert [line.split('\t')[0] for line in lines if line.startswith('package ')] == \
        [f'package {n}' for n in sorted(exercises.package_steps())]


def test_check_package_on_the_command_line(tmp_path):
    assert _tool(41, tmp_path, '--blank').returncode == 0
    failed = _check_cli('package', 41, tmp_path)
    assert failed.returncode == 1, failed.stderr
    assert '41단계: matmul을(를) 채우세요' in failed.stdout
    fill(41, tmp_path)
    passed = _check_cli('package', 41, tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert 'step41.py의 출력이 정답과 같습니다.' in passed.stdout
    # the pieces pass but the step script prints something else: a failure, named
    path = tmp_path / 'mydezero' / '__init__.py'
    path.write_text(path.read_text(encoding='utf-8') + 'print("hello")\n', encoding='utf-8')
    wrong = _check_cli('package', 41, tmp_path)
    assert wrong.returncode == 1
    assert '실패: step41.py의 출력이 정답(tests/golden/steps/step41.txt)과' in wrong.stdout
    for args, said in ((['package', '61', tmp_path], '23~60'),
                       (['package', '41', tmp_path / 'nowhere'], 'mydezero/__init__.py가 없습니다'),
                       (['package', '41'], '단계와 폴더를 주세요')):
        bad = _check_cli(*args)
        assert bad.returncode == 2 and said in bad.stderr and 'Traceback' not in bad.stderr


def test_a_stub_no_case_calls_still_fails_by_name(tmp_path):
    """Model.plot (it needs Graphviz) has no case; left as a stub, the check still names it."""
    assert _tool(45, tmp_path, '--blank').returncode == 0
    fill(45, tmp_path)
    ok, message = _grade(45, tmp_path)
    assert ok, message
    path = tmp_path / 'mydezero' / 'models.py'
    text = path.read_text(encoding='utf-8')
    blank = mydezero_at.package_at(45, blank=True)['models.py']
    ref, stub = (mydezero_blank.pieces(ast.parse(t))['Model.plot'] for t in (text, blank))
    lines, stub_lines = text.splitlines(keepends=True), blank.splitlines(keepends=True)
    lines[ref.lineno - 1:ref.end_lineno] = stub_lines[stub.lineno - 1:stub.end_lineno]
    path.write_text(''.join(lines), encoding='utf-8')
    ok, message = _grade(45, tmp_path)
    assert not ok
    assert "틀린 확인: 45단계까지 채우지 않은 빈칸 (raise NotImplementedError 줄)\n" in message
    assert "받은 값: ['models.py: Model.plot (45단계)']" in message


def test_keep_puts_two_pieces_with_the_same_anchor_in_the_reference_order(tmp_path):
    source = tmp_path / 'm.py'
    source.write_text('#@ file step 30\ndef a():\n    return 1\n#@ step 31\n\n\ndef b():\n'
                      '    """b"""\n    return 2\n#@ end\n#@ step 30-30\n\n#@ end\n#@ step 31\n\n\n'
                      'def c():\n    """c"""\n    return 3\n#@ end\n', encoding='utf-8')
    parsed = mydezero_at.parse(str(source))
    learner = 'def a():\n    # mine\n    return 1\n'
    done = mydezero_blank.keep_file(31, parsed, learner, 'm.py')
    assert done.startswith(learner)
    assert done.index('def b():') < done.index('def c():')
    assert "raise NotImplementedError('31단계: b을(를) 채우세요')" in done
    assert "raise NotImplementedError('31단계: c을(를) 채우세요')" in done
    ast.parse(done)


def test_keep_marks_a_changed_piece_in_the_learners_own_function(tmp_path):
    assert _tool(39, tmp_path, '--blank').returncode == 0
    fill(39, tmp_path)
    path = tmp_path / 'mydezero' / 'core.py'
    mine = path.read_text(encoding='utf-8').replace(
        '        gx0, gx1 = gy, gy\n', '        gx0, gx1 = gy, gy  # 내 주석\n')
    path.write_text(mine, encoding='utf-8')
    done = _tool(40, tmp_path, '--blank', '--keep')
    assert done.returncode == 0, done.stderr
    text = path.read_text(encoding='utf-8')
    add = mydezero_blank.pieces(ast.parse(text))['Add.backward']
    body = text.splitlines(keepends=True)[add.lineno - 1:add.end_lineno]
    assert body == ['    def backward(self, gy):\n',
                    '        # 40단계: 이 부품을 고치세요.\n',
                    '        # (브로드캐스트: x0와 x1의 모양이 다르면 기울기를 sum_to로 각 입력의 모양에 '
                    '맞춘다)\n',
                    '        # 고친 뒤 아래 raise 줄을 지운다.\n',
                    "        raise NotImplementedError('40단계: Add.backward을(를) 고치세요')\n",
                    '        gx0, gx1 = gy, gy  # 내 주석\n',
                    '        return gx0, gx1\n']
    assert _is_subsequence(mine.splitlines(), text.splitlines())
    fill(40, tmp_path, files=['functions.py', 'utils.py'])  # the new pieces, not core.py's
    ok, message = _grade(40, tmp_path)
    assert not ok
    assert "NotImplementedError: 40단계: Add.forward을(를) 고치세요" in message, message
    fill(40, tmp_path)
    ok, message = _grade(40, tmp_path)
    assert ok, message
