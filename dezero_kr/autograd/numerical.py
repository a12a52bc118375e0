"""Numerical derivatives by central differences: the one implementation, and the
gradient checker built on it.

``central_differences`` is the only place in the package that perturbs an
input: ``utils.numerical_grad`` (DeZero's), ``utils.gradient_check`` (through
``numerical_grad``) and ``gradcheck`` here all call it.  Each caller decides
what to differentiate (the sum of ``f``'s output, or every output element)
and keeps its own default step ``eps``; the convention is the same for all::

    d out / d x[i]  ~  (out(x + eps e_i) - out(x - eps e_i)) / (2 eps)

evaluated on a float64 copy of ``x``, without recording a graph.
"""
import numpy as np

from dezero_kr import cuda
from dezero_kr.core import Constant, Variable, array_types, no_grad
from dezero_kr.autograd.reverse import as_tuple, outputs_of, reverse_jacobians


def float64_copy(x, what='float64_copy'):
    """A new float64 NumPy array with the values of ``x`` (an array or a Variable,
    NumPy or CuPy, or a number), safe to perturb: the caller's data is never touched.

    The memory layout of ``x`` is kept (a transposed input stays Fortran-ordered),
    so ``f`` sees the same strides it would see on the original.  Integer and
    boolean values are converted.  Raises TypeError, naming the caller ``what``,
    for anything else: a Variable without data, a list, a string or a complex
    array (central differences here perturb real values only).
    """
    data = x.data if isinstance(x, Variable) else x
    if not isinstance(data, array_types) and not np.isscalar(data):
        raise TypeError(f'{what}: x must be an array, a number or a Variable with data, '
                        f'got {type(data).__name__}')
    data = cuda.as_numpy(data)
    if data.dtype.kind not in 'biuf':
        raise TypeError(f'{what}: x must hold real numbers, got dtype {data.dtype}')
    return np.array(data, dtype=np.float64, copy=True)


def as_float64(y):
    """The values of ``y`` (an array, a NumPy scalar or a Variable, NumPy or CuPy)
    as a float64 NumPy array, copied only when needed."""
    data = y.data if isinstance(y, Variable) else y
    return np.asarray(cuda.as_numpy(data), dtype=np.float64)


def central_differences(evaluate, x, eps, out_shape=()):
    """``d evaluate() / d x`` by central differences, perturbing ``x`` in place.

    ``x`` is a float64 ndarray that ``evaluate`` reads (make it with
    ``float64_copy``); ``evaluate()`` takes no argument and returns a float64
    array of shape ``out_shape``.  For every index ``i`` of ``x`` (C order)::

        result[i] = (evaluate() at x + eps e_i - evaluate() at x - eps e_i) / (2 eps)

    so the result has shape ``x.shape + out_shape`` and dtype float64; the
    truncation error is O(eps^2) and the rounding error about
    ``1e-16 * |out| / eps``.  Every element is put back after its two
    evaluations, even when ``evaluate`` raises.  The evaluations run under
    ``no_grad()``: ``2 * x.size`` calls, no graph recorded.

    Raises TypeError when ``x`` is not a float64 ndarray (perturbing a float32
    array would round ``x + eps`` to float32 and differentiate a different step).
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float64:
        raise TypeError(f'central_differences: x must be a float64 ndarray (use float64_copy), '
                        f'got {type(x).__name__} of dtype {getattr(x, "dtype", None)}')
    result = np.zeros(x.shape + tuple(out_shape))
    with no_grad():
        for i in np.ndindex(x.shape):
            old = x[i]
            try:
                x[i] = old + eps
                plus = evaluate()
                x[i] = old - eps
                minus = evaluate()
            finally:
                x[i] = old
            result[i] = (plus - minus) / (2 * eps)
    return result


# =============================================================================
# gradcheck
# =============================================================================
class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when analytic and numerical Jacobians differ; the
    message is the report (largest errors and the first failing entries)."""


def gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compare the Jacobians of ``f(*inputs)`` from backprop with central differences.

    ``inputs`` is one argument or a sequence of them; ``f`` returns a Variable
    or a tuple of Variables.  Every float array/Variable input ``x_i`` is checked
    on a float64 copy (Constants, integer and complex arrays and Python scalars
    pass through unchecked).  For every output ``y_k`` and checked input ``x_i``
    the analytic Jacobian ``dy_k/dx_i`` (shape ``(y_k.size, x_i.size)``, one
    reverse pass per element of ``y_k``) is compared with
    ``central_differences`` (step ``eps``, evaluated in float64).  An entry fails
    when ``|analytic - numeric| > atol + rtol * |numeric|``; the report gives,
    per pair, the largest absolute and relative error
    (``|g1 - g2| / max(|g1|, |g2|, eps)``) and the first failing entries.

    Returns True; on failure raises ``GradcheckError`` (or prints the report and
    returns False when ``raise_exception=False``).  Raises ValueError when no
    input is a float array or Variable or ``f`` returns an empty tuple, TypeError
    when ``f`` does not return Variables.
    """
    args, checked = _float64_arguments(inputs)
    xs = [args[i] for i in checked]
    outputs = outputs_of(f(*args), 'gradcheck')
    if not outputs:
        raise ValueError('gradcheck: f returned no outputs, so there is nothing to compare')
    analytic = [reverse_jacobians(y, xs) for y in outputs]
    numeric = _numerical_jacobians(f, args, xs, outputs, eps)
    lines = []
    for n, (i, x) in enumerate(zip(checked, xs)):
        for k, y in enumerate(outputs):
            lines += _compare(cuda.as_numpy(analytic[k][n]), numeric[k][n], i, x, k, y,
                              eps, atol, rtol)
    if not lines:
        return True
    report = '\n'.join(['gradcheck failed: the analytic Jacobian differs from central '
                        f'differences (eps={eps}, atol={atol}, rtol={rtol})'] + lines)
    if raise_exception:
        raise GradcheckError(report)
    print(report)
    return False


def _float64_arguments(inputs):
    """``(args, checked)``: the arguments with each float input replaced by a float64
    Variable, and the positions of those inputs."""
    args = list(as_tuple(inputs))
    checked = []
    for i, a in enumerate(args):
        data = a.data if isinstance(a, Variable) else a
        if isinstance(a, Constant) or not hasattr(data, 'dtype') or data.dtype.kind != 'f':
            continue
        args[i] = Variable(float64_copy(data, 'gradcheck'))
        checked.append(i)
    if not checked:
        raise ValueError('gradcheck: no input to check (give float arrays or Variables)')
    return args, checked


def _numerical_jacobians(f, args, xs, outputs, eps):
    """``[[J_ki]]`` for output k, input i, shape ``(y_k.size, x_i.size)``, by central differences."""
    sizes = [y.data.size for y in outputs]

    def evaluate():  # every output, flattened into one float64 vector
        ys = outputs_of(f(*args), 'gradcheck')
        return np.concatenate([as_float64(y).reshape(-1) for y in ys])

    jac = [[None] * len(xs) for _ in outputs]
    for n, x in enumerate(xs):
        columns = central_differences(evaluate, x.data, eps, (sum(sizes),))
        rows = columns.reshape(x.data.size, sum(sizes)).T  # (all outputs' elements, x.size)
        for k, block in enumerate(np.split(rows, np.cumsum(sizes)[:-1])):
            jac[k][n] = block
    return jac


def _compare(a, num, i, x, k, y, eps, atol, rtol, shown=5):
    abs_err = np.abs(a - num)
    bad = np.argwhere(abs_err > atol + rtol * np.abs(num))
    if len(bad) == 0:
        return []
    rel_err = abs_err / np.maximum(np.maximum(np.abs(a), np.abs(num)), eps)
    lines = [f'  input #{i} (shape {x.shape}) -> output #{k} (shape {y.shape}): max abs error '
             f'{abs_err.max():.3e}, max rel error {rel_err.max():.3e}, {len(bad)} of '
             f'{abs_err.size} entries fail']
    for r, c in bad[:shown]:
        out_idx = [int(i) for i in np.unravel_index(r, y.shape)]
        in_idx = [int(i) for i in np.unravel_index(c, x.shape)]
        lines.append(f'    d out{out_idx} / d in{in_idx}: analytic={a[r, c]:.6g} '
                     f'numeric={num[r, c]:.6g}')
    return lines
