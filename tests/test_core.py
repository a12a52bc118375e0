"""The engine: Variable, Function, Config, the backward loop, memory."""
import gc
import math
import pathlib
import subprocess
import sys
import textwrap
import weakref
from unittest import mock

import numpy as np
import pytest

import dezero_kr
import dezero_kr.functions as F
from dezero_kr import Config, Constant, Function, Parameter, Variable, no_grad, using_config
from dezero_kr.core import as_array, as_variable
from _subproc import ROOT, python_env


def var(*values):
    return Variable(np.array(*values, dtype=np.float64))


# --- Variable basics ----------------------------------------------------------
@pytest.mark.parametrize('bad', [1.0, 3, [1, 2], (1,), np.float64(1.0), np.int64(2), 'x', True])
def test_variable_rejects_non_arrays_naming_the_type(bad):
    with pytest.raises(TypeError) as e:
        Variable(bad)
    assert type(bad).__name__ in str(e.value)
    assert 'ndarray' in str(e.value)


def test_variable_accepts_ndarray_and_none():
    assert Variable(None).data is None
    v = Variable(np.zeros((2, 3), np.float32), name='v')
    assert (v.shape, v.ndim, v.size, v.dtype, len(v), v.name) == ((2, 3), 2, 6, np.float32, 2, 'v')
    assert v.grad is None and v.creator is None and v.generation == 0


def test_repr_matches_dezero():
    assert repr(Variable(None)) == 'variable(None)'
    assert repr(var(1.5)) == 'variable(1.5)'
    assert repr(Variable(np.array([[1, 2], [3, 4]]))) == 'variable([[1 2]\n          [3 4]])'


def test_name_can_be_set_and_cleared():
    v = var(1.0)
    assert v.name is None
    v.name = 'x'
    assert v.name == 'x'
    v.name = None
    assert v.name is None


def test_as_array_and_as_variable():
    a = as_array(np.float64(2.0))
    assert isinstance(a, np.ndarray) and a.shape == ()
    arr = np.ones(2)
    assert as_array(arr) is arr
    v = var(1.0)
    assert as_variable(v) is v
    assert isinstance(as_variable(arr), Variable)


# --- the seed documents' worked examples -----------------------------------------
def test_shared_value_gradients_accumulate_seed_000():
    x, y = var(2.0), var(3.0)
    u = x * y
    L = u * u + u
    L.backward(retain_grad=True)
    assert L.data == 42.0
    assert u.grad.data == 13.0
    assert (x.grad.data, y.grad.data) == (39.0, 26.0)


def test_square_exp_square_gradient():
    for x0, expected in [(0.5, 3.297442541400256), (2.0, 23847.663896333823)]:
        x = var(x0)
        y = (F.exp(x ** 2)) ** 2
        y.backward()
        assert math.isclose(x.grad.data, expected, rel_tol=1e-14)
        assert math.isclose(x.grad.data, 4 * x0 * math.exp(2 * x0 ** 2), rel_tol=1e-14)


def test_chain_rule_3x_plus_1_squared_seed_001():
    x = var(1.0)
    y = (3 * x + 1) ** 2
    y.backward()
    assert y.data == 16.0 and x.grad.data == 24.0


def test_diamond_graph_is_processed_in_generation_order():
    x = var(2.0)
    a = x ** 2
    y = a ** 2 + a ** 2
    y.backward()
    assert y.data == 32.0 and x.grad.data == 64.0


def test_generation_counts_depth():
    x = var(1.0)
    a = F.sin(x)
    b = a * x
    assert (x.generation, a.generation, b.generation) == (0, 1, 2)
    assert b.creator.generation == 1


# --- backward contract ------------------------------------------------------------------
def test_leaf_grads_accumulate_until_cleargrad():
    x = var(3.0)
    y = x * x
    y.backward()
    y.backward()
    assert x.grad.data == 12.0
    x.cleargrad()
    y.backward()
    assert x.grad.data == 6.0


def test_intermediate_grads_dropped_unless_retained():
    x = var(2.0)
    a = x * x
    b = a * 3
    b.backward()
    assert a.grad is None and b.grad is None  # DeZero clears even the root's grad
    b.backward(retain_grad=True)
    assert a.grad.data == 3.0 and b.grad.data == 1.0


def test_per_variable_retain_grad():
    x = var(2.0)
    a = x * x
    a.retain_grad()
    b = F.sin(a) + a
    b.backward()
    assert math.isclose(a.grad.data, math.cos(4.0) + 1)
    assert b.grad is None


def test_preset_grad_is_the_seed():
    x = var(2.0)
    y = x * 5
    y.grad = var(2.0)
    y.backward()
    assert x.grad.data == 10.0


def test_seed_with_wrong_shape_is_a_clear_error():
    x = Variable(np.ones(3))
    y = x * 2
    y.grad = Variable(np.ones(2))
    with pytest.raises(ValueError, match=r'\(2,\).*\(3,\)'):
        y.backward()


def test_backward_on_a_leaf_sets_its_grad_to_the_seed():
    x = Variable(np.array([1.0, 2.0]))
    x.backward()
    np.testing.assert_array_equal(x.grad.data, [1.0, 1.0])


def test_seed_dtype_follows_data():
    x = Variable(np.ones(3, np.float32))
    y = (x * 2.5).sum()
    y.backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32


class _Split2(Function):
    """A two-output test function: (x * 2, x * 3)."""

    def forward(self, x):
        return x * 2, x * 3

    def backward(self, g0, g1):
        assert g0 is not None and g1 is not None  # the engine supplies zeros
        return g0 * 2 + g1 * 3


def test_multi_output_function_unused_output_gets_zero_grad():
    x = Variable(np.array([1.0, 2.0]))
    a, b = _Split2()(x)
    assert isinstance(a, Variable) and isinstance(b, Variable)
    a.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 2.0])


def test_multi_output_function_dead_output_weakref_is_handled():
    x = Variable(np.array([1.0, 2.0]))
    b = _Split2()(x)[1]  # output 0 is dropped at once: its weakref is dead
    gc.collect()
    b.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 3.0])


class _WrongShape(Function):
    def forward(self, x):
        return x * 2

    def backward(self, gy):
        return gy.sum()


class _WrongCount(Function):
    def forward(self, x0, x1):
        return x0 + x1

    def backward(self, gy):
        return gy


def test_gradient_of_wrong_shape_from_a_user_function_is_a_clear_error():
    x = Variable(np.ones((2, 3)))
    y = _WrongShape()(x)
    with pytest.raises(ValueError) as e:
        y.backward()
    assert '_WrongShape' in str(e.value) and '(2, 3)' in str(e.value) and '()' in str(e.value)


def test_wrong_number_of_gradients_is_a_clear_error():
    x = Variable(np.ones(2))
    y = _WrongCount()(x, x)
    with pytest.raises(ValueError, match='_WrongCount.backward returned 1 gradients for 2 inputs'):
        y.backward()


class _ArrayBackward(Function):
    """DeZero-era user code sometimes returns raw arrays from backward."""

    def forward(self, x):
        return x ** 2

    def backward(self, gy):
        return 2 * self.inputs[0].data * gy.data


def test_backward_returning_an_ndarray_is_accepted():
    x = var(3.0)
    _ArrayBackward()(x).backward()
    assert isinstance(x.grad, Variable) and x.grad.data == 6.0


def test_forward_error_names_function_and_shapes():
    with pytest.raises(ValueError) as e:
        Variable(np.ones((2, 3))) @ Variable(np.ones((4, 5)))
    assert 'MatMul' in str(e.value) and '(2, 3)' in str(e.value) and '(4, 5)' in str(e.value)


def test_function_rejects_non_array_inputs_naming_the_function():
    with pytest.raises(TypeError, match='Sin: .*float'):
        F.sin(1.0)


def test_user_function_without_backward_or_jvp():
    class NoBackward(Function):
        def forward(self, x):
            return x

    y = NoBackward()(var(1.0))
    with pytest.raises(NotImplementedError, match='NoBackward.backward'):
        y.backward()
    with pytest.raises(NotImplementedError, match='NoBackward.jvp'):
        NoBackward().jvp(None)


# --- higher order --------------------------------------------------------------
def test_nth_derivative_of_tanh():
    x = var(1.0)
    y = F.tanh(x)
    y.backward(create_graph=True)
    t = math.tanh(1.0)
    expected = [1 - t ** 2, -2 * t * (1 - t ** 2), (1 - t ** 2) * (6 * t ** 2 - 2)]
    assert math.isclose(x.grad.data, expected[0], rel_tol=1e-12)
    for want in expected[1:]:
        gx = x.grad
        x.cleargrad()
        gx.backward(create_graph=True)
        assert math.isclose(x.grad.data, want, rel_tol=1e-12)


def test_newtons_method_with_second_derivative():
    # f(x) = x^4 - 2x^2 from x = 2 converges to the minimum at x = 1.
    x = var(2.0)
    for _ in range(10):
        y = x ** 4 - 2 * x ** 2
        x.cleargrad()
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        x.data = x.data - gx.data / x.grad.data
    assert math.isclose(x.data, 1.0, rel_tol=1e-12)


def test_without_create_graph_grads_have_no_creator():
    x = var(2.0)
    (x ** 3).backward()
    assert x.grad.creator is None
    x.cleargrad()
    (x ** 3).backward(create_graph=True)
    assert x.grad.creator is not None


# --- operators ----------------------------------------------------------------
def test_operators_with_scalars_arrays_and_variables_both_ways():
    a = Variable(np.array([1.0, 2.0]))
    arr = np.array([3.0, 4.0])
    cases = {
        'a + 2': (a + 2, [3, 4]), '2 + a': (2 + a, [3, 4]), 'arr + a': (arr + a, [4, 6]),
        'a - 1': (a - 1, [0, 1]), '1 - a': (1 - a, [0, -1]), 'arr - a': (arr - a, [2, 2]),
        'a * 3': (a * 3, [3, 6]), 'arr * a': (arr * a, [3, 8]),
        'a / 2': (a / 2, [0.5, 1]), '2 / a': (2 / a, [2, 1]), 'arr / a': (arr / a, [3, 2]),
        'a ** 2': (a ** 2, [1, 4]), '2 ** a': (2 ** a, [2, 4]), 'a ** a': (a ** a, [1, 4]),
        '-a': (-a, [-1, -2]), 'a @ arr': (a @ arr, 11), 'arr @ a': (arr @ a, 11),
    }
    for name, (result, want) in cases.items():
        assert isinstance(result, Variable), name
        np.testing.assert_allclose(result.data, want, err_msg=name)


def test_ndarray_on_the_left_dispatches_to_variable():
    a = Variable(np.ones((2, 2)))
    y = np.ones((2, 2)) * a
    assert isinstance(y, Variable) and y.shape == (2, 2)


def test_numpy_ufuncs_refuse_variables():
    with pytest.raises(TypeError):
        np.sin(Variable(np.ones(2)))


def test_power_with_variable_exponent_gradients():
    x, e = var(2.0), var(3.0)
    y = x ** e
    y.backward()
    assert y.data == 8.0
    assert x.grad.data == 12.0  # e * x^(e-1)
    assert math.isclose(e.grad.data, 8 * math.log(2))
    b = var(3.0)
    z = 2 ** b
    z.backward()
    assert math.isclose(b.grad.data, 8 * math.log(2))


def test_variable_methods():
    x = Variable(np.arange(6.0).reshape(2, 3))
    assert x.reshape(3, 2).shape == (3, 2) and x.reshape((6,)).shape == (6,)
    assert x.transpose().shape == (3, 2) and x.T.shape == (3, 2)
    assert x.transpose(1, 0).shape == (3, 2) and x.transpose((1, 0)).shape == (3, 2)
    assert x.sum().data == 15 and x.sum(axis=0, keepdims=True).shape == (1, 3)
    assert x.max().data == 5 and x.min(axis=1).data.tolist() == [0, 3]
    assert x.matmul(x.T).shape == (2, 2) and x.dot(x.T).shape == (2, 2)
    assert x.matmaul(x.T).shape == (2, 2)
    assert x[1].data.tolist() == [3, 4, 5] and x[:, 1].data.tolist() == [1, 4]
    assert [row.data.tolist() for row in x] == [[0, 1, 2], [3, 4, 5]]


# --- dtype ----------------------------------------------------------------------------
@pytest.mark.parametrize('scalar', [2.5, 3, np.float64(2.5), np.int64(3)])
def test_float32_stays_float32_with_python_and_numpy_scalars(scalar):
    x = Variable(np.ones((2, 2), np.float32))
    for y in [x * scalar, scalar * x, x + scalar, x - scalar, scalar - x, x / scalar,
              scalar / x, x ** scalar, F.average(x)]:
        assert y.dtype == np.float32
    y = (x * scalar / 3 + 1).sum()
    y.backward()
    assert x.grad.dtype == np.float32


def test_float16_and_int_arrays_follow_numpy_rules():
    h = Variable(np.ones(2, np.float16))
    assert (h * 2.5).dtype == np.float16
    i = Variable(np.arange(3))
    assert (i * 2).dtype == i.dtype and (i * 2.5).dtype == np.float64


# --- config ---------------------------------------------------------------------------
def test_no_grad_builds_nothing():
    x = var(1.0)
    with no_grad():
        y = F.sin(x * 2)
    assert y.creator is None
    assert Config.enable_backprop is True


def test_using_config_restores_on_error_and_rejects_unknown_names():
    with pytest.raises(RuntimeError):
        with using_config('enable_backprop', False):
            raise RuntimeError('boom')
    assert Config.enable_backprop is True
    with pytest.raises(AttributeError):
        with using_config('no_such_flag', 1):
            pass
    with dezero_kr.test_mode():
        assert Config.train is False
    assert Config.train is True


# --- Constant and detach ---------------------------------------------------------
def test_raw_arrays_become_constants_with_no_stored_gradient():
    W = Parameter(np.ones((3, 2)))
    y = F.matmul(np.ones((4, 3)), W)
    x_const = y.creator.inputs[0]
    assert isinstance(x_const, Constant) and not x_const.requires_grad
    y.sum().backward()
    assert x_const.grad is None
    np.testing.assert_array_equal(W.grad.data, np.full((3, 2), 4.0))


def test_detach_cuts_the_graph():
    x = var(2.0)
    y = x * x
    d = y.detach()
    assert d.creator is None and not d.requires_grad and d.data is y.data
    (d * x).backward()
    assert x.grad.data == 4.0  # only the direct path


# --- unchain ---------------------------------------------------------------------
def test_unchain_and_unchain_backward():
    x = var(1.0)
    a = x * 2
    b = a * 3
    c = b * 4
    b.unchain()
    assert b.creator is None and a.creator is not None
    c.unchain_backward()
    assert a.creator is not None  # a is no longer reachable from c
    d = F.sin(x) * x + x
    d.unchain_backward()
    assert all(v.creator is None for v in d.creator.inputs)


# --- memory and depth ---------------------------------------------------------------
def test_graph_frees_itself_without_the_cycle_collector():
    gc.collect()
    gc.disable()
    try:
        x = Variable(np.ones(3))
        y = F.sin(x) * x + x ** 2
        y.sum().backward()
        ref = weakref.ref(y)
        mid = weakref.ref(y.creator.inputs[0])
        del y
        assert ref() is None and mid() is None  # freed by reference counting alone
    finally:
        gc.enable()
    # create_graph=True links x.grad's graph back to x (a cycle, as in PyTorch);
    # cleargrad() breaks it, and then nothing is left for the collector.
    gc.collect()
    x = Variable(np.ones(3))
    for _ in range(10):
        y = F.tanh(x) * x
        y.sum().backward(create_graph=True)
    x.cleargrad()
    del x, y
    assert gc.collect() == 0


def test_a_recorded_node_keeps_at_most_400_bytes(monkeypatch):
    # Issue 16's budget for graph memory, counted by the routine `python -m bench core_ops`
    # reports with (tracemalloc over a sin chain): 392 bytes per node with NumPy 2.4.
    monkeypatch.syspath_prepend(str(ROOT))
    with mock.patch.dict('os.environ'):  # bench._timing sets the BLAS thread variables: keep ours
        from bench import core_ops
    per_node = core_ops.bytes_per_node(dezero_kr, 20_000)
    assert 300 < per_node <= 400, per_node


def test_million_node_chain_builds_backprops_unchains_and_frees():
    # A subprocess keeps the recursion limit and the memory of this one clean.
    code = textwrap.dedent('''
        import sys, numpy as np, dezero_kr as dz
        sys.setrecursionlimit(1000)
        x = dz.Variable(np.array(1.0))
        y = x
        for _ in range(1_000_000):
            y = -y
        y.backward()
        assert x.grad.data == 1.0, x.grad
        y2 = y * 1.0
        y2.unchain_backward()
        del y, y2
        z = x
        for _ in range(1_000_000):
            z = -z
        del z
        print('ok')
    ''')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300,
                         env=python_env())
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == 'ok'


def test_import_is_light():
    code = ('import sys, time; t = time.perf_counter(); import dezero_kr; '
            'print(time.perf_counter() - t); '
            'print(sorted(m for m in ("matplotlib", "PIL", "graphviz", "cupy", "IPython") '
            'if m in sys.modules))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60,
                         env=python_env())
    seconds, heavy = out.stdout.split('\n')[:2]
    assert heavy == '[]'
    assert float(seconds) < 1.0


def test_subprocesses_of_the_tests_import_this_checkout(tmp_path):
    # Not an installed copy (pip install -e of another checkout) and not "no module": the
    # working tree under test, whatever the current folder and the installs are.
    out = subprocess.run([sys.executable, '-c', 'import dezero_kr; print(dezero_kr.__file__)'],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path, env=python_env())
    assert out.returncode == 0, out.stderr[-2000:]
    assert pathlib.Path(out.stdout.strip()) == ROOT / 'dezero_kr' / '__init__.py'


def test_import_loads_no_http_stack_until_a_download_starts():
    # urllib.request/http.client/ssl cost ~40 ms and nothing downloads at import time.
    code = ('import sys, dezero_kr, dezero_kr.utils, dezero_kr.datasets, dezero_kr.download; '
            'print(sorted(m for m in ("urllib.request", "http.client", "ssl") if m in sys.modules))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60,
                         env=python_env())
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == '[]'


def test_package_exports_dezero_names():
    for name in ['Variable', 'Parameter', 'Function', 'Config', 'using_config', 'no_grad',
                 'test_mode', 'as_array', 'as_variable', 'setup_variable', 'core', 'functions',
                 'utils', 'cuda', 'core_simple']:
        assert hasattr(dezero_kr, name), name
    assert dezero_kr.is_simple_core is False
