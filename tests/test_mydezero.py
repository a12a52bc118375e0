"""Tests for ``steps/mydezero``: the learner's own DeZero, grown step by step.

* (a) no file of the package imports ``dezero_kr`` (the reference must stay outside);
* (b) every step 23..60 runs against the package *as of that step* (written by
  ``steps/mydezero_at.py``) and prints its golden output;
* (c) DeZero-style code with ``import mydezero as dezero`` agrees with ``dezero_kr`` on values
  and gradients, and both agree with float64 central differences;
* (d) the snapshot tool: which files exist at which step, ``A-B`` blocks vanish after ``B``,
  malformed markers are errors, and ``docs/tutorial/mydezero.md`` is current; on the command
  line it never writes into its source, keeps a learner's own or edited package, leaves
  exactly step N's files, and answers bad arguments with a message.
"""
import ast
import json
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from _subproc import ROOT

STEPS_DIR = ROOT / 'steps'
PACKAGE_DIR = STEPS_DIR / 'mydezero'
sys.path.insert(0, str(STEPS_DIR))
# MYDEZERO_UNDER_TEST=폴더: the (c) tests run on 폴더/mydezero instead (tests/test_mydezero_learn.py
# runs them on a package a learner built with --blank/--keep)
UNDER_TEST = os.environ.get('MYDEZERO_UNDER_TEST')
if UNDER_TEST:
    sys.path.insert(0, UNDER_TEST)

import mydezero as dezero  # noqa: E402  (the finished package, as a learner's DeZero code would)
import mydezero.functions as F  # noqa: E402
import mydezero.layers as L  # noqa: E402
import mydezero_at  # noqa: E402
from mydezero import Variable, optimizers  # noqa: E402
from mydezero.models import MLP  # noqa: E402

import dezero_kr  # noqa: E402  (the reference)
import dezero_kr.functions as RF  # noqa: E402
import dezero_kr.layers as RL  # noqa: E402
from dezero_kr import optimizers as roptimizers  # noqa: E402
from dezero_kr.models import MLP as RMLP  # noqa: E402


# ---------------------------------------------------------------------------
# (a) the package never imports dezero_kr

@pytest.mark.parametrize('name', sorted(p.name for p in PACKAGE_DIR.glob('*.py')))
def test_package_file_does_not_import_dezero_kr(name):
    tree = ast.parse((PACKAGE_DIR / name).read_text(encoding='utf-8'))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or '']
        else:
            continue
        assert not any(m.split('.')[0] == 'dezero_kr' for m in modules), \
            f'steps/mydezero/{name}:{node.lineno} imports dezero_kr'


def test_package_has_dezeros_module_layout():
    modules = {p.stem for p in PACKAGE_DIR.glob('*.py')}
    assert modules == {'__init__', 'core_simple', 'core', 'functions', 'functions_conv', 'layers',
                       'models', 'optimizers', 'utils', 'datasets', 'dataloaders', 'transforms',
                       'cuda'}


# ---------------------------------------------------------------------------
# (b) every step runs against the package as of that step

SNAPSHOT_STEPS = list(range(mydezero_at.FIRST, mydezero_at.LAST + 1))


def run_against_snapshot(n):
    """Write mydezero as of step n beside copies of steps 23..n and _common.py, run step n
    there (as tests/test_steps.py runs steps: FAST, fresh cwd) and return (stdout, problem)."""
    import test_steps  # the golden comparison and the environment of the step tests
    with tempfile.TemporaryDirectory() as tmp:
        src, cwd = os.path.join(tmp, 'src'), os.path.join(tmp, 'cwd')
        os.makedirs(cwd)
        mydezero_at.write_package(n, src)
        shutil.copy(STEPS_DIR / '_common.py', src)
        # later steps import earlier ones (24, 28, 37 ...)
        for k in range(mydezero_at.FIRST, n + 1):
            shutil.copy(STEPS_DIR / f'step{k:02d}.py', src)
        proc = test_steps.run_python([os.path.join(src, f'step{n:02d}.py')], cwd)
    if proc.returncode != 0:
        return None, f'step{n:02d} failed against its snapshot:\n{proc.stderr[-3000:]}'
    golden = test_steps.golden_path(STEPS_DIR / f'step{n:02d}.py').read_text(encoding='utf-8')
    problems = test_steps.compare_output(proc.stdout, golden)
    return proc.stdout, '\n'.join(problems[:10]) if problems else None


@pytest.fixture(scope='module')
def snapshot_runs():
    """All snapshot runs at once, in parallel (each is a subprocess)."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(zip(SNAPSHOT_STEPS, pool.map(run_against_snapshot, SNAPSHOT_STEPS)))


@pytest.mark.slow
@pytest.mark.parametrize('n', SNAPSHOT_STEPS, ids=[f'step{n:02d}' for n in SNAPSHOT_STEPS])
def test_step_runs_against_its_own_snapshot(n, snapshot_runs):
    stdout, problem = snapshot_runs[n]
    assert problem is None, f'step{n:02d} with mydezero as of step {n}:\n{problem}'


def test_snapshot_runner_catches_a_step_that_needs_a_later_piece(tmp_path, monkeypatch):
    """A step that uses a piece added later fails against its snapshot (the runner can fail)."""
    fake_steps = tmp_path / 'steps'
    fake_steps.mkdir()
    for name in ['_common.py'] + [f'step{k:02d}.py' for k in range(23, 31)]:
        shutil.copy(STEPS_DIR / name, fake_steps / name)
    # step 30 made to use Tanh, which mydezero gets only at step 35
    text = (fake_steps / 'step30.py').read_text(encoding='utf-8')
    text = text.replace('from mydezero.functions import cos, sin',
                        'from mydezero.functions import cos, sin, tanh')
    (fake_steps / 'step30.py').write_text(text, encoding='utf-8')
    monkeypatch.setattr(sys.modules[__name__], 'STEPS_DIR', fake_steps)
    stdout, problem = run_against_snapshot(30)
    assert problem is not None and 'tanh' in problem


# ---------------------------------------------------------------------------
# helpers for (c)

def test_package_under_test_is_the_one_named():
    expected = (os.path.join(os.path.realpath(UNDER_TEST), 'mydezero') if UNDER_TEST
                else os.path.realpath(PACKAGE_DIR))
    assert os.path.dirname(os.path.realpath(dezero.__file__)) == expected
    assert os.path.realpath(mydezero_at.__file__) == os.path.realpath(STEPS_DIR / 'mydezero_at.py')

def central_difference(f, x, eps=1e-6):
    """d sum(f(x)) / dx by central differences on a float64 copy (f takes an ndarray)."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        plus = np.sum(f(x.copy()))
        x[idx] = old - eps
        minus = np.sum(f(x.copy()))
        x[idx] = old
        grad[idx] = (plus - minus) / (2 * eps)
    return grad


def value_and_grads(module, f, arrays):
    """f(*Variables) with ``module``'s Variable; returns the value and each input's gradient."""
    vs = [module.Variable(np.array(a, dtype=np.float64)) for a in arrays]
    y = f(*vs)
    y.backward()
    return y.data, [v.grad.data for v in vs]


RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3))
B = RNG.standard_normal((2, 3))
ROW = RNG.standard_normal(3)
POS = RNG.uniform(0.5, 2.0, (2, 3))
MAT = RNG.standard_normal((3, 4))
X4 = RNG.standard_normal((2, 3, 6, 6))
W4 = RNG.standard_normal((4, 3, 3, 3))
B4 = RNG.standard_normal(4)

# (name, function of the functions module and Variables, inputs)
CASES = [
    ('add/mul/sub/div/pow',
     lambda f, a, b: (a + b) * a - b / (a * a + 1) + a ** 3 - 2.0 / (b * b + 1), (A, B)),
    ('broadcast add/mul', lambda f, a, r: a * r + r - a / (r * r + 1), (A, ROW)),
    ('neg and python numbers', lambda f, a: -a * 3.0 + 1.0 - 2 * a, (A,)),
    ('exp/log/sin/cos/tanh', lambda f, a, p: f.exp(a) + f.log(p) * f.sin(a) + f.cos(p) * f.tanh(a),
     (A, POS)),
    ('sum axis keepdims',
     lambda f, a: f.sum(a, axis=1, keepdims=True) * f.sum(a, axis=0) + f.sum(a), (A,)),
    ('reshape/transpose',
     lambda f, a: f.reshape(a, (3, 2)) * f.transpose(a) + a.T.reshape(6).sum(), (A,)),
    ('broadcast_to/sum_to', lambda f, r: f.sum_to(f.broadcast_to(r, (2, 3)) * A, (1, 3)), (ROW,)),
    ('matmul', lambda f, a, w: f.matmul(a, w) * f.matmul(a, w), (A, MAT)),
    ('linear', lambda f, a, w, b: f.linear(a, w, b) ** 2, (A, MAT, RNG.standard_normal(4))),
    ('get_item repeated index', lambda f, a: a[np.array([0, 1, 0]), np.array([2, 2, 2])] * 3
     + f.get_item(a, 1) ** 2, (A,)),
    ('sigmoid/relu', lambda f, a: f.sigmoid(a) * f.relu(a), (A,)),
    ('softmax', lambda f, a: f.softmax(a) * B, (A,)),
    ('softmax_cross_entropy', lambda f, a: f.softmax_cross_entropy(a, np.array([2, 0])), (A,)),
    ('mean_squared_error', lambda f, a, b: f.mean_squared_error(a, b), (A, B)),
    ('max/min', lambda f, a: f.max(a, axis=1) * f.min(a, axis=0).sum(), (A,)),
    ('clip', lambda f, a: f.clip(a, -0.5, 0.5) * a, (A,)),
    ('conv2d', lambda f, x, w, b: f.conv2d(x, w, b, stride=2, pad=1) ** 2, (X4, W4, B4)),
    ('conv2d no bias', lambda f, x, w: f.conv2d(x, w, stride=1, pad=0) ** 2, (X4, W4)),
    ('pooling', lambda f, x: f.pooling(x, 2, 2) ** 2, (X4,)),
    ('pooling 3/2 pad 1', lambda f, x: f.pooling(x, 3, 2, 1) * 2, (X4,)),
    ('average_pooling', lambda f, x: f.average_pooling(x, 2, 2) ** 2, (X4,)),
    ('im2col', lambda f, x: f.im2col(x, 3, 2, 1) ** 2, (X4,)),
    ('deconv2d', lambda f, x, w: f.deconv2d(x, w, stride=2, pad=1) ** 2,
     (RNG.standard_normal((1, 2, 3, 3)), RNG.standard_normal((2, 3, 3, 3)))),
    ('flatten/average', lambda f, a: f.flatten(f.reshape(a, (2, 1, 3))) * f.average(a)
     + f.mean(a, axis=0), (A,)),
    ('log_softmax', lambda f, a: f.log_softmax(a) * B, (A,)),
    ('softmax_simple', lambda f, a: f.softmax_simple(a) * B, (A,)),
    ('softmax_cross_entropy_simple',
     lambda f, a: f.softmax_cross_entropy_simple(a, np.array([2, 0])), (A,)),
    ('mean_squared_error_simple', lambda f, a, b: f.mean_squared_error_simple(a, b), (A, B)),
]


@pytest.mark.parametrize('name, fn, arrays', CASES, ids=[c[0] for c in CASES])
def test_values_and_grads_match_reference_and_central_differences(name, fn, arrays):
    mine = value_and_grads(dezero, lambda *v: fn(F, *v), arrays)
    ref = value_and_grads(dezero_kr, lambda *v: fn(RF, *v), arrays)
    np.testing.assert_allclose(mine[0], ref[0], rtol=1e-12, atol=1e-12)
    for i, (g, r) in enumerate(zip(mine[1], ref[1])):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)

        def only_i(a, i=i):
            args = [np.array(x, dtype=np.float64) for x in arrays]
            args[i] = a
            with dezero.no_grad():
                return fn(F, *[Variable(x) for x in args]).data
        num = central_difference(only_i, arrays[i])
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings('ignore:backward\\(create_graph=True\\) stored')  # dezero_kr's note
def test_higher_order_tanh_matches_reference():
    """Four derivatives of tanh by create_graph=True, against dezero_kr and the closed form."""
    def derivatives(module, f):
        x = module.Variable(np.array([0.3, -1.2]))
        y = f.tanh(x)
        out = []
        for _ in range(4):
            x.cleargrad()
            y.backward(create_graph=True)
            y = x.grad
            out.append(y.data.copy())
        x.cleargrad()  # drop the graph held by x.grad (no reference cycle left behind)
        return out
    mine, ref = derivatives(dezero, F), derivatives(dezero_kr, RF)
    np.testing.assert_allclose(mine, ref, rtol=1e-12)
    t = np.tanh(np.array([0.3, -1.2]))
    np.testing.assert_allclose(mine[0], 1 - t ** 2, rtol=1e-12)
    np.testing.assert_allclose(mine[1], -2 * t * (1 - t ** 2), rtol=1e-12)


def test_conv2d_second_order_matches_central_differences():
    """d/dx of sum(dL/dW)^2 through Conv2DGradW (DeZero's own version failed here)."""
    x0 = RNG.standard_normal((1, 2, 4, 4))
    w = RNG.standard_normal((2, 2, 3, 3))

    def grad_w_norm(x_data, module, f):
        x = module.Variable(x_data)
        W = module.Variable(w.copy())
        y = f.sum(f.conv2d(x, W, pad=1) ** 2)
        y.backward(create_graph=True)
        z = f.sum(W.grad ** 2)
        x.cleargrad()
        z.backward()
        return z.data, x.grad.data

    z, gx = grad_w_norm(x0, dezero, F)
    num = central_difference(lambda a: grad_w_norm(a, dezero, F)[0], x0)
    np.testing.assert_allclose(gx, num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('name', ['SGD', 'MomentumSGD', 'AdaGrad', 'RMSprop', 'Adam'])
def test_mlp_training_with_each_optimizer_matches_reference(name):
    x = RNG.standard_normal((20, 3))
    t = RNG.integers(0, 2, 20)
    params = []
    for module, mlp, opts, f in ((dezero, MLP, optimizers, F),
                                 (dezero_kr, RMLP, roptimizers, RF)):
        np.random.seed(5)
        model = mlp((6, 2))
        optimizer = getattr(opts, name)().setup(model)
        losses = []
        for _ in range(5):
            loss = f.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            losses.append(float(loss.data))
        params.append((losses, [p.data.copy() for p in model.params()]))
    (mine, mine_p), (ref, ref_p) = params
    np.testing.assert_allclose(mine, ref, rtol=1e-6)
    assert len(mine_p) == len(ref_p) == 4
    for a, b in zip(mine_p, ref_p):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert mine[-1] < mine[0]


def test_lstm_and_rnn_match_reference_over_three_steps():
    xs = RNG.standard_normal((3, 2, 1)).astype(np.float32)
    for layer, ref_layer in ((L.LSTM, RL.LSTM), (L.RNN, RL.RNN)):
        outs = []
        for make, f in ((layer, F), (ref_layer, RF)):
            np.random.seed(1)
            cell = make(4)
            ys = [cell(x) for x in xs]
            loss = f.sum(ys[-1] * ys[-1])
            loss.backward()
            outs.append(([y.data for y in ys], [p.grad.data for p in cell.params()]))
        (ys, gs), (rys, rgs) = outs
        for a, b in zip(ys + gs, rys + rgs):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_freeze_param():
    np.random.seed(0)
    model = MLP((4, 2), activation=F.relu)
    x = RNG.standard_normal((3, 5))
    loss = F.sum(model(x) ** 2)
    model.cleargrads()
    loss.backward()
    before = [p.data.copy() for p in model.params()]
    optimizer = optimizers.SGD(lr=0.1).setup(model)
    optimizer.add_hook(optimizers.FreezeParam(model.l0))  # DeZero's FreezeParam crashed here
    optimizer.update()
    after = [p.data for p in model.params()]
    np.testing.assert_array_equal(after[0], before[0])  # l0 frozen
    np.testing.assert_array_equal(after[1], before[1])
    assert not np.array_equal(after[2], before[2])  # l1 updated


def test_unchain_backward_cuts_the_graph():
    x = Variable(np.array(2.0))
    h = x * x
    y = h * 3.0
    y.unchain_backward()
    assert h.creator is None and y.creator is not None
    y.backward()
    assert x.grad is None and float(h.grad.data) == 3.0


def test_dropout_and_test_mode_match_reference():
    x = RNG.standard_normal((50, 40))
    np.random.seed(3)
    mine = F.dropout(Variable(x), 0.3).data
    np.random.seed(3)
    ref = RF.dropout(dezero_kr.Variable(x), 0.3).data
    np.testing.assert_array_equal(mine != 0, ref != 0)  # the same mask from the same seed
    np.testing.assert_allclose(mine, ref, rtol=1e-15)
    kept = mine != 0
    np.testing.assert_allclose(mine[kept], x[kept] / 0.7, rtol=1e-15)
    with dezero.test_mode():
        assert dezero.Config.train is False
        np.testing.assert_array_equal(F.dropout(Variable(x)).data, x)
    assert dezero.Config.train is True


def test_accuracy():
    y = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    t = np.array([1, 0, 0, 0])
    assert float(F.accuracy(y, t).data) == 0.75
    assert float(F.accuracy(y, t).data) == float(RF.accuracy(y, t).data)


def test_datasets_and_loaders_match_reference():
    for mine, ref in ((dezero.datasets.Spiral(train=False), dezero_kr.datasets.Spiral(train=False)),
                      (dezero.datasets.SinCurve(), dezero_kr.datasets.SinCurve()),
                      (dezero.datasets.Digits(train=False),
                       dezero_kr.datasets.Digits(train=False))):
        np.testing.assert_array_equal(mine.data, ref.data)
        np.testing.assert_array_equal(mine.label, ref.label)
    data = dezero.datasets.SinCurve()
    for mine_cls, ref_cls, kwargs in ((dezero.DataLoader, dezero_kr.DataLoader, {'shuffle': True}),
                                      (dezero.SeqDataLoader, dezero_kr.SeqDataLoader, {})):
        np.random.seed(0)
        mine = [b for _ in range(2) for b in mine_cls(data, 100, **kwargs)]
        np.random.seed(0)
        ref = [b for _ in range(2) for b in ref_cls(data, 100, **kwargs)]
        assert len(mine) == len(ref) == 20
        for (x, t), (rx, rt) in zip(mine, ref):
            np.testing.assert_array_equal(x, rx)
            np.testing.assert_array_equal(t, rt)


def test_save_and_load_weights_round_trip_without_pickle(tmp_path):
    np.random.seed(0)
    model = MLP((5, 3))
    x = RNG.standard_normal((2, 4))
    y = model(x).data
    path = str(tmp_path / 'w.npz')
    model.save_weights(path)
    with np.load(path, allow_pickle=False) as f:
        assert sorted(f.files) == ['l0/W', 'l0/b', 'l1/W', 'l1/b']
    other = MLP((5, 3))
    other(x)
    other.load_weights(path)
    np.testing.assert_array_equal(other(x).data, y)
    wrong = MLP((5, 2))
    wrong(x)
    before = [p.data.copy() for p in wrong.params()]
    with pytest.raises(ValueError, match='l1/W'):
        wrong.load_weights(path)
    for p, b in zip(wrong.params(), before):  # all or nothing
        np.testing.assert_array_equal(p.data, b)


def test_cuda_switch_without_gpu_is_numpy():
    from mydezero import cuda
    if cuda.gpu_enable:
        pytest.skip('GPU present: the NumPy fallback is not what runs here')
    assert cuda.get_array_module(Variable(np.ones(2))) is np
    with pytest.raises(Exception, match='CuPy'):
        cuda.as_cupy(np.ones(2))


def test_core_simple_grads_are_arrays():
    from mydezero import core_simple
    x = core_simple.Variable(np.array(3.0))
    y = x ** 2 + 2 * x - x / 3.0
    y.backward()
    # an ndarray (0-d arithmetic gives NumPy scalars; the engine wraps them): never a Variable
    assert type(x.grad) is np.ndarray and float(x.grad) == pytest.approx(2 * 3 + 2 - 1 / 3)


# ---------------------------------------------------------------------------
# (d) the snapshot tool

def test_snapshot_files_by_step(tmp_path):
    at = lambda n: set(mydezero_at.package_at(n))  # noqa: E731
    assert at(23) == {'__init__.py', 'core_simple.py'}
    assert 'core.py' in at(32) and 'functions.py' in at(32)
    assert 'layers.py' not in at(43) and 'layers.py' in at(44)
    assert 'functions_conv.py' not in at(55) and 'functions_conv.py' in at(56)
    assert at(60) == {p.name for p in PACKAGE_DIR.glob('*.py')}
    target = mydezero_at.write_package(23, str(tmp_path))
    assert sorted(p.name for p in (tmp_path / 'mydezero').iterdir()) == [
        '.mydezero_at', '__init__.py', 'core_simple.py']
    assert '#@' not in (tmp_path / 'mydezero' / '__init__.py').read_text(encoding='utf-8')
    assert target.endswith('mydezero')


def test_snapshot_ranges_disappear_after_their_last_step():
    at39 = mydezero_at.package_at(39)['functions.py']
    at40 = mydezero_at.package_at(40)['functions.py']
    assert '39단계의 임시판' in at39 and '39단계의 임시판' not in at40
    assert 'class BroadcastTo' not in at39 and 'class BroadcastTo' in at40
    assert 'xp = np  #' in mydezero_at.package_at(51)['core.py']
    assert 'xp = np  #' not in mydezero_at.package_at(52)['core.py']
    assert 'get_array_module' in mydezero_at.package_at(52)['core.py']
    init = mydezero_at.package_at(29)['__init__.py']
    assert 'core_simple' in init and 'mydezero.core ' not in init
    assert 'from mydezero.core import Variable' in mydezero_at.package_at(30)['__init__.py']
    assert 'core_simple' not in mydezero_at.package_at(30)['__init__.py']


def test_every_snapshot_parses_and_has_no_markers():
    for n in range(mydezero_at.FIRST, mydezero_at.LAST + 1):
        for name, text in mydezero_at.package_at(n).items():
            ast.parse(text, filename=f'{n}/{name}')
            assert '#@' not in text, (n, name)


@pytest.mark.parametrize('text, message', [
    ('x = 1\n', '첫 줄'),
    ('#@ file step 30\n#@ step 31\n#@ step 32\n#@ end\n', '블록 안에'),
    ('#@ file step 30\n#@ end\n', '열리지 않은'),
    ('#@ file step 30\n#@ step 31\nx = 1\n', '닫히지 않은'),
    ('#@ file step 30\n#@ step 29\n#@ end\n', '범위'),
    ('#@ file step 30\n#@ step 35-33\n#@ end\n', '범위'),
    ('#@ file step 30\n#@ stpe 31\n', '알 수 없는'),
])
def test_malformed_markers_are_errors(tmp_path, text, message):
    path = tmp_path / 'bad.py'
    path.write_text(text, encoding='utf-8')
    with pytest.raises(mydezero_at.MarkerError, match=message):
        mydezero_at.parse(str(path))


def test_range_block_semantics(tmp_path):
    path = tmp_path / 'm.py'
    path.write_text('#@ file step 30\na = 1\n#@ step 31-32\nb = 2\n#@ end\n#@ step 33\n'
                    'c = 3\n#@ end\n', encoding='utf-8')
    assert mydezero_at.text_at(str(path), 29) is None
    assert mydezero_at.text_at(str(path), 30) == 'a = 1\n'
    assert mydezero_at.text_at(str(path), 32) == 'a = 1\nb = 2\n'
    assert mydezero_at.text_at(str(path), 33) == 'a = 1\nc = 3\n'


def test_docs_page_is_current():
    page = ROOT / 'docs' / 'tutorial' / 'mydezero.md'
    assert page.read_text(encoding='utf-8') == mydezero_at.docs_page(), (
        'docs/tutorial/mydezero.md is out of date: python steps/mydezero_at.py --docs')


# The command line as a learner runs it, on a copy of the tool and its source (so a bug here
# can never overwrite the real steps/mydezero).

@pytest.fixture
def tool(tmp_path):
    copy = tmp_path / 'repo' / 'steps'
    shutil.copytree(PACKAGE_DIR, copy / 'mydezero', ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(STEPS_DIR / 'mydezero_at.py', copy)
    shutil.copy(STEPS_DIR / 'mydezero_blank.py', copy)
    return copy / 'mydezero_at.py'


def _at(tool, *args, cwd):
    import subprocess
    return subprocess.run([sys.executable, str(tool), *map(str, args)], capture_output=True,
                          text=True, encoding='utf-8', cwd=cwd, timeout=120,
                          env={**os.environ, 'PYTHONIOENCODING': 'utf-8'})


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob('*')) if p.is_file()}


def _snapshot_files(n):
    return {name: text.encode('utf-8') for name, text in mydezero_at.package_at(n).items()}


@pytest.mark.parametrize('args, where', [
    (['45', 'steps'], 'repo'),
    (['45', '.'], 'repo/steps'),
    (['45', ''], 'repo/steps'),
    (['45', 'steps/mydezero'], 'repo'),
    (['45', 'link'], 'repo'),            # a link to steps/: the same folder
    (['45', 'link', '--force'], 'repo'),
], ids=['steps', 'dot-in-steps', 'empty-in-steps', 'inside-source', 'link', 'link-force'])
def test_the_tool_never_writes_into_its_own_source(tool, tmp_path, args, where):
    source = tool.parent / 'mydezero'
    (tmp_path / 'repo' / 'link').symlink_to(tool.parent, target_is_directory=True)
    before = _tree(source)
    done = _at(tool, *args, cwd=tmp_path / where)
    assert done.returncode == 2, done.stdout + done.stderr
    assert 'Traceback' not in done.stderr
    assert '원본 steps/mydezero/에는 쓰지 않는다' in done.stderr or '이름이 비었다' in done.stderr
    assert _tree(source) == before
    assert sorted(p.name for p in tool.parent.iterdir()) == ['mydezero', 'mydezero_at.py',
                                                             'mydezero_blank.py']


def test_a_learners_own_package_is_kept_unless_forced(tool, tmp_path):
    own = tmp_path / 'out' / 'mydezero'
    own.mkdir(parents=True)
    (own / 'core.py').write_text('# my own core\n', encoding='utf-8')
    done = _at(tool, '45', 'out', cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f'out{os.sep}mydezero: mydezero_at.py가 쓴 폴더가 아니다 '
                                  '(.mydezero_at 표시가 없다).\n'), done.stderr
    assert '--force' in done.stderr
    assert _tree(own) == {'core.py': b'# my own core\n'}
    forced = _at(tool, '45', 'out', '--force', cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    tree = _tree(own)
    assert json.loads(tree.pop('.mydezero_at'))['step'] == 45
    assert tree == _snapshot_files(45)


def test_an_edited_snapshot_is_kept_and_the_changes_are_named(tool, tmp_path):
    assert _at(tool, '45', 'out', cwd=tmp_path).returncode == 0
    folder = tmp_path / 'out' / 'mydezero'
    with open(folder / 'core.py', 'a', encoding='utf-8') as f:
        f.write('# my note\n')
    (folder / 'notes.py').write_text('x = 1\n', encoding='utf-8')
    (folder / '__pycache__').mkdir()  # importing the snapshot leaves this: not an edit
    before = _tree(folder)
    done = _at(tool, '46', 'out', cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert '쓴 뒤에 고친 파일: core.py; 더한 것: notes.py.' in done.stderr, done.stderr
    assert _tree(folder) == before


def test_rewriting_a_snapshot_leaves_exactly_step_n(tool, tmp_path):
    assert _at(tool, '60', 'out', cwd=tmp_path).returncode == 0
    folder = tmp_path / 'out' / 'mydezero'
    (folder / '__pycache__').mkdir()
    (folder / '__pycache__' / 'core.cpython-311.pyc').write_bytes(b'stale')
    done = _at(tool, '23', 'out', cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ['.mydezero_at', '__init__.py',
                                                        'core_simple.py']
    tree = _tree(folder)
    mark = json.loads(tree.pop('.mydezero_at'))
    assert mark['step'] == 23 and tree == _snapshot_files(23)
    assert sorted(p.name for p in (tmp_path / 'out').iterdir()) == ['mydezero']  # no temp left


@pytest.mark.parametrize('args, message', [
    (['²', 'out'], "단계는 23~60 사이의 정수여야 한다: '²'"),
    (['٤٥', 'out'], "단계는 23~60 사이의 정수여야 한다: '٤٥'"),  # int() would read 45
    (['22', 'out'], "단계는 23~60 사이의 정수여야 한다: '22'"),
    (['45', 'a_file'], 'a_file: 폴더가 아니라 파일이다.'),
    (['45', 'a_file/sub'], '폴더를 만들 수 없다: a_file/sub'),
], ids=['superscript', 'arabic-indic', 'too-early', 'file', 'under-a-file'])
def test_bad_arguments_give_a_message_not_a_traceback(tool, tmp_path, args, message):
    (tmp_path / 'a_file').write_text('not a folder\n', encoding='utf-8')
    done = _at(tool, *args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(message), done.stderr
    assert 'Traceback' not in done.stderr
    assert not (tmp_path / 'out').exists()
    assert (tmp_path / 'a_file').read_text(encoding='utf-8') == 'not a folder\n'


# ---------------------------------------------------------------------------
# (e) every name the package defines is used by a step (or kept for a stated reason)

# Names no step script uses, each with the reason it stays in the learner's package.
KEPT_WITHOUT_A_STEP = {
    'utils.gradient_check': "DeZero's own tests import it from dezero.utils (the steps use "
                            "_common.gradient_check, which trusts the reference's differences)",
    'utils.array_equal': "DeZero's own tests (test_conv2d, test_im2col, ...) import it from dezero.utils",
}


def _names_used_by_steps(steps_dir, submodules):
    """Names a step reaches in mydezero: imported from it, or an attribute of a mydezero module
    (``F.sum``, ``mydezero.models.MLP``, ``package.layers.LSTM`` where ``package`` is mydezero)."""
    used = set()
    for path in sorted(steps_dir.glob('step*.py')):
        tree = ast.parse(path.read_text(encoding='utf-8'))
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases |= {a.asname or a.name.split('.')[0] for a in node.names
                            if a.name.split('.')[0] == 'mydezero'}
            elif isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == 'mydezero':
                used |= {a.name for a in node.names}
                if node.module == 'mydezero':  # from mydezero import optimizers
                    aliases |= {a.asname or a.name for a in node.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                through_module = isinstance(node.value, ast.Attribute) and node.value.attr in submodules
                if through_module or (isinstance(root, ast.Name) and root.id in aliases):
                    used.add(node.attr)
    return used


def _names_referenced(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
           {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def unused_package_names(package_dir, steps_dir):
    """'module.name' for each public top-level name of the package that no step uses and no other
    top-level statement of the package refers to (``__init__`` re-exports do not count)."""
    trees = {p.stem: ast.parse(p.read_text(encoding='utf-8')) for p in sorted(package_dir.glob('*.py'))}
    used = _names_used_by_steps(steps_dir, set(trees) - {'__init__'})
    statements = [n for stem, tree in trees.items() if stem != '__init__' for n in tree.body
                  if not isinstance(n, (ast.Import, ast.ImportFrom))]
    unused = []
    for stem, tree in trees.items():
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            else:
                continue
            for name in names:
                if name.startswith('_') or name in used:
                    continue
                if not any(name in _names_referenced(other) for other in statements if other is not node):
                    unused.append(f'{stem}.{name}')
    return unused


def test_unused_name_detector(tmp_path):
    package, steps = tmp_path / 'mydezero', tmp_path
    package.mkdir()
    (package / '__init__.py').write_text('from mydezero.functions import kept, dropped\n'
                                         'is_simple = True\n', encoding='utf-8')
    (package / 'functions.py').write_text('class Kept:\n    pass\n\n\ndef kept():\n    return Kept()\n\n\n'
                                          'def dropped():\n    return 1\n\n\ndef _private():\n    pass\n',
                                          encoding='utf-8')
    (steps / 'step01.py').write_text('import mydezero.functions as F\nF.kept()\n'
                                     '"""dropped is only named in a docstring"""\n', encoding='utf-8')
    assert unused_package_names(package, steps) == ['__init__.is_simple', 'functions.dropped']


def test_every_package_name_is_used_by_a_step_or_kept_for_a_reason():
    unused = unused_package_names(PACKAGE_DIR, STEPS_DIR)
    unexplained = sorted(set(unused) - set(KEPT_WITHOUT_A_STEP))
    assert not unexplained, (f'steps/mydezero defines names no step uses: {unexplained}. Use each in the '
                             'step that builds it, remove it, or list it in KEPT_WITHOUT_A_STEP with a reason')
    stale = sorted(set(KEPT_WITHOUT_A_STEP) - set(unused))
    assert not stale, f'KEPT_WITHOUT_A_STEP lists names a step now uses (or that are gone): {stale}'
