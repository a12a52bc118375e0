"""Helpers on raw arrays (NumPy or CuPy), shared by the core and the functions.

Nothing here knows about Variables, so every module may import it.
``dezero_kr.utils`` re-exports these names under DeZero's spelling.
"""
import numpy as np

from dezero_kr import cuda


def normalize_axis(axis, ndim):
    """Return ``axis`` (None, int or tuple) as a sorted tuple of non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (tuple, list)):
        axis = (axis,)
    return tuple(sorted(a % ndim if ndim else a for a in axis))


# =============================================================================
# float16: computed in float32, rounded once (the policy of the whole library)
# =============================================================================
# float16 keeps 11 significant bits and tops out at 65504: summed in float16, a total stops
# growing at 2048 (2048 + 1 rounds to 2048), squares overflow from 256, exp from 11.1.
# So, as PyTorch's CPU kernels, every reduction, normalisation, softmax, loss and GELU
# takes float16 in, computes in float32 and rounds its result to float16 once.  These
# helpers are that policy; for any other dtype they hand the array back untouched.
def widen(a):
    """``a`` as float32 if it is float16 (a copy), else ``a`` itself (no copy)."""
    return a.astype(np.float32) if a.dtype.char == 'e' else a


def rounded_to(a, dtype):
    """``a`` cast to ``dtype`` (the float32 result of a float16 op back to float16); ``a``
    itself when it has that dtype already (a Variable on a recorded path always has)."""
    if a.dtype is dtype or a.dtype == dtype:  # (builtin dtypes are singletons: the first test)
        return a
    return a.astype(dtype)


def array_sum(x, axis=None, keepdims=False):
    """``x.sum(axis, keepdims)``; a float16 ``x`` is accumulated in float32 and the sum
    rounded to float16 once (NumPy would add in float16 along a strided axis)."""
    if x.dtype.char == 'e':
        return x.sum(axis=axis, keepdims=keepdims, dtype=np.float32).astype(np.float16)
    return x.sum(axis=axis, keepdims=keepdims)


def may_hold_nan(a):
    """Whether the array ``a`` may hold a NaN: False for integer and bool arrays; for NumPy
    arrays, whether one does; always True for a GPU array, whose answer would make the host
    wait for the device (the NaN-aware path gives the same numbers, only slower)."""
    if a.dtype.kind not in 'fc':
        return False
    if type(a) is not np.ndarray:
        return True
    return bool(np.isnan(a).any())


def sum_to(x, shape):
    """Sum the array ``x`` down to ``shape`` (the inverse of broadcasting).

    Leading axes that broadcasting added are summed away, and axes of length 1
    in ``shape`` are summed with keepdims.  ``x.shape`` must broadcast from
    ``shape``; anything else raises ValueError naming both shapes.
    """
    shape = tuple(shape)
    if x.shape == shape:
        return x
    ndim = len(shape)
    lead = x.ndim - ndim
    if lead < 0 or any(s != 1 and s != xs for s, xs in zip(shape, x.shape[lead:])):
        raise ValueError(f'sum_to: cannot sum shape {x.shape} to shape {shape}')
    lead_axis = tuple(range(lead))
    axis = tuple(i + lead for i, s in enumerate(shape) if s == 1 and x.shape[i + lead] != 1)
    if not axis and ndim:  # only leading axes (a bias's gradient): summed away directly, so the
        # result is a fresh array, not a reshaped view that a leaf's .grad would have to copy
        return array_sum(x, lead_axis)
    y = array_sum(x, lead_axis + axis, keepdims=True)
    if lead > 0:
        y = y.reshape(y.shape[lead:])
    return y


def reshape_sum_backward(gy, x_shape, axis, keepdims):
    """Reshape the gradient of ``sum(x, axis, keepdims)`` so it broadcasts to ``x_shape``.

    Works on Variables too (it only calls ``.reshape``): the sum's backward
    reinserts the reduced axes as length-1 axes.
    """
    ndim = len(x_shape)
    if ndim == 0 or axis is None or keepdims:
        return gy  # already broadcastable: a 0-d value or kept axes
    shape = list(gy.shape)
    for a in normalize_axis(axis, ndim):
        shape.insert(a, 1)
    return gy.reshape(shape)


def max_backward_shape(x, axis):
    """Shape of ``max(x, axis)`` with the reduced axes kept as length 1."""
    axes = normalize_axis(axis, x.ndim)
    return [1 if i in axes else s for i, s in enumerate(x.shape)]


def logsumexp(x, axis=1):
    """``log(sum(exp(x), axis, keepdims=True))`` without overflow (max shift); float16 is
    computed in float32 and rounded (see ``widen``)."""
    xp = cuda.get_array_module(x)
    dtype, x = x.dtype, widen(x)
    m = x.max(axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)  # an all -inf row stays -inf, not nan
    s = xp.exp(x - m).sum(axis=axis, keepdims=True)
    with np.errstate(divide='ignore'):  # log(0) = -inf is the right answer here
        return rounded_to(xp.log(s) + m, dtype)


def pair(x):
    """``3 -> (3, 3)``; a 2-tuple passes through; anything else is a ValueError."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return (int(x), int(x))
    if isinstance(x, tuple) and len(x) == 2:
        return x
    raise ValueError(f'pair: expected an int or a 2-tuple, got {x!r}')


def get_conv_outsize(input_size, kernel_size, stride, pad):
    """Output length of a convolution: ``(H + 2P - K) // S + 1``."""
    return (input_size + pad * 2 - kernel_size) // stride + 1


def get_deconv_outsize(size, k, s, p):
    """Output length of a transposed convolution: ``S * (H - 1) + K - 2P``."""
    return s * (size - 1) + k - 2 * p
