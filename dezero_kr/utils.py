"""DeZero's ``utils``: gradient checks, array helpers, graph export, downloads.

The pieces live in their own modules and are re-exported here under DeZero's
names: array helpers in ``array_utils``, graph export in ``graph``, downloads
in ``download``, BLAS thread control (``set_blas_threads``) in ``blas``.  This module
itself holds DeZero's numerical gradient checks, thin callers of the package's
one central-differences routine (``numerical.central_differences``).
"""
import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import (get_conv_outsize, get_deconv_outsize, logsumexp,  # noqa: F401
                                   max_backward_shape, pair, reshape_sum_backward, sum_to)
from dezero_kr.blas import set_blas_threads  # noqa: F401
from dezero_kr.core import Variable, as_variable  # noqa: F401  (as_variable: DeZero's utils has it)
from dezero_kr.download import get_file  # noqa: F401
from dezero_kr.graph.backprop_view import plot_backward  # noqa: F401
from dezero_kr.graph import find_renderer, get_dot_graph, plot_dot_graph  # noqa: F401
from dezero_kr.autograd.numerical import as_float64, central_differences, float64_copy

# DeZero's utils.cache_dir is a path string; ours follows $DEZERO_KR_CACHE at import
# time (download.cache_dir() reads it on every call).
from dezero_kr.download import cache_dir as _cache_dir  # noqa: E402
cache_dir = _cache_dir()


def numerical_grad(f, x, *args, eps=1e-4, **kwargs):
    """Central-difference gradient of ``sum(f(x, *args, **kwargs))`` with respect to ``x``.

    ``dL/dx[i] ~ (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)`` with
    ``L = sum(f(x, *args, **kwargs))`` for every element i (``2 * x.size``
    calls of ``f``, under ``no_grad()``).  ``x`` (an array or a Variable, NumPy
    or CuPy, any float dtype) is perturbed as a float64 copy wrapped in a
    Variable, so the caller's array is never modified; ``f`` may return a
    Variable or an array, summed in float64.  ``args``/``kwargs`` are passed
    through unchanged (a float32 parameter stays float32).  Returns a float64
    NumPy ndarray of ``x``'s shape.  DeZero's default step ``eps=1e-4``;
    ``autograd.gradcheck`` uses the same routine
    (``numerical.central_differences``) with its own default 1e-6.
    """
    work = float64_copy(x, 'numerical_grad')
    x_var = Variable(work)

    def total():
        return as_float64(f(x_var, *args, **kwargs)).sum()

    return central_differences(total, work, eps)


def gradient_check(f, x, *args, rtol=1e-4, atol=1e-5, **kwargs):
    """Compare backprop's gradient of ``L = sum(f(x, *args, **kwargs))`` with
    ``numerical_grad``; return True if close.

    Both gradients are taken at a float64 copy of ``x`` (the caller's data is
    untouched; ``x`` is an array or a Variable of any float dtype): first
    ``numerical_grad(f, x, *args, **kwargs)`` (its default ``eps=1e-4``), then
    ``f(x_var).backward()``, whose implied seed of ones gives ``dL/dx`` also
    for a many-element output.  True when ``|num - bp| <= atol + rtol * |bp|``
    for every element (``array_allclose(num, bp)``, DeZero's tolerances).
    Otherwise prints the largest absolute and relative errors and the first
    failing elements and returns False; it also returns False, with a message,
    when backprop gives no gradient for ``x`` or one of another shape.
    """
    x_var = Variable(float64_copy(x, 'gradient_check'))
    num_grad = numerical_grad(f, x_var.data, *args, **kwargs)
    y = f(x_var, *args, **kwargs)
    y.backward()
    if x_var.grad is None:
        print('gradient_check: backprop gave no gradient for x (is f connected to x?)')
        return False
    bp_grad = cuda.as_numpy(x_var.grad.data)
    if bp_grad.shape != num_grad.shape:
        print(f'gradient_check: backprop grad shape {bp_grad.shape} != x shape {num_grad.shape}')
        return False
    ok = array_allclose(num_grad, bp_grad, rtol=rtol, atol=atol)
    if not ok:
        print(_mismatch_report(num_grad, bp_grad, rtol, atol))
    return ok


def _mismatch_report(num_grad, bp_grad, rtol, atol, eps=1e-12):
    abs_err = np.abs(num_grad - bp_grad)
    rel_err = abs_err / np.maximum(np.maximum(np.abs(num_grad), np.abs(bp_grad)), eps)
    bad = np.argwhere(abs_err > atol + rtol * np.abs(bp_grad))
    worst = np.unravel_index(abs_err.argmax(), abs_err.shape) if abs_err.size else ()
    lines = ['', '========== FAILED (Gradient Check) ==========',
             f'max abs error {abs_err.max():.3e} at {worst}, max rel error {rel_err.max():.3e}',
             f'{len(bad)} of {abs_err.size} elements outside rtol={rtol}, atol={atol}; first: '
             + ', '.join(f'{tuple(i)}: num={num_grad[tuple(i)]:.6g} bp={bp_grad[tuple(i)]:.6g}'
                         for i in bad[:5])]
    return '\n'.join(lines)


def show_progress(block_num, block_size, total_size):
    """DeZero's download progress hook (``urllib.request.urlretrieve``'s ``reporthook``).

    Prints ``\\r[#####.....] 12.34%`` (30 characters, percentage capped at
    100).  ``total_size`` <= 0 (the server sent no length) prints the bytes
    received instead of a wrong percentage.  ``get_file`` here shows its own
    progress bar; this is kept for code that passes it to ``urlretrieve``.
    """
    downloaded = block_num * block_size
    if total_size <= 0:
        print(f'\r{downloaded} bytes', end='')
        return
    fraction = min(downloaded / total_size, 1.0)
    filled = int(fraction * 30)
    print(f'\r[{"#" * filled}{"." * (30 - filled)}] {fraction * 100:.2f}%', end='')


def array_equal(a, b):
    """True if two arrays/Variables (NumPy or CuPy) have equal shape and elements."""
    return np.array_equal(cuda.as_numpy(a), cuda.as_numpy(b))


def array_allclose(a, b, rtol=1e-4, atol=1e-5, strict_shape=False):
    """``np.allclose(a, b, rtol, atol)`` on arrays/Variables (NumPy or CuPy), as in DeZero.

    True when ``|a - b| <= atol + rtol * |b|`` elementwise after broadcasting,
    so shapes (1,) and () compare equal, as DeZero's tests expect.  With
    ``strict_shape=True`` (or ``array_allclose_strict``) differing shapes give
    False instead.  Shapes that do not broadcast raise ValueError naming both.
    """
    a, b = cuda.as_numpy(a), cuda.as_numpy(b)
    if a.shape != b.shape:
        if strict_shape:
            return False
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise ValueError(f'array_allclose: shapes {a.shape} and {b.shape} do not broadcast '
                             f'together') from None
    return bool(np.allclose(a, b, atol=atol, rtol=rtol))


def array_allclose_strict(a, b, rtol=1e-4, atol=1e-5):
    """``array_allclose`` that also requires equal shapes (False when they differ)."""
    return array_allclose(a, b, rtol=rtol, atol=atol, strict_shape=True)
