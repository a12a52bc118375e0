"""Gradient clipping: by value, by norm (global or per tensor) and adaptive (AGC).

Every function takes ``params``, any iterable of Variables/Parameters (a list,
``model.params()`` which is a generator, ...), skips those whose ``grad`` is
None and changes the gradients in place, as seen through ``param.grad``:

==============================  ===============================================
``clip_grad_value``             ``g_i <- min(max(g_i, -c), c)`` element by element
``clip_grad_norm``              one norm over *all* gradients as a single vector;
                                ``g <- g * min(1, c / (||g|| + eps))``; returns
                                the pre-clip norm (PyTorch ``clip_grad_norm_``)
``clip_grad_norm_per_tensor``   the same rule applied to each gradient on its own
``adaptive_clip_grad``          AGC (NFNet): unit-wise ``||G_i|| / max(||W_i||, eps) > λ``
                                -> ``G_i <- λ max(||W_i||, eps) / ||G_i|| * G_i``
==============================  ===============================================

How "in place" is done: the gradient *Variable* keeps its identity and its
``.data`` is rebound to the clipped array.  The old array is never written to,
because the engine may hand out read-only broadcast views (the gradient of
``sum``) or arrays shared with a seed the caller still holds.  Parameters whose
gradients are one array (``a.grad is b.grad``, or two grads with the same
``.data``) are clipped once, and that array counts once in a global norm: the
gradients are grouped by the identity of their array.

The optimizer hooks ``ClipGradNorm``, ``ClipGradValue`` and ``AdaptiveClipGrad``
are callables ``hook(params)`` as DeZero's ``Optimizer.add_hook`` expects; each
keeps the last pre-clip norm in ``last_norm`` for the training loop to log.
"""
import math

import numpy as np

from dezero_kr import cuda
from dezero_kr.hooks import host_operation

__all__ = ['clip_grad_value', 'clip_grad_norm', 'clip_grad_norm_per_tensor', 'adaptive_clip_grad',
           'ClipGradNorm', 'ClipGradValue', 'AdaptiveClipGrad']


# =============================================================================
# Gathering gradients
# =============================================================================
class _GradGroup:
    """One gradient array and every gradient Variable (and its parameter) that holds it."""
    __slots__ = ('array', 'grads', 'params')

    def __init__(self, array):
        self.array = array
        self.grads = []
        self.params = []

    def set(self, new_array):
        """Rebind every gradient Variable of the group to ``new_array`` (dtype kept)."""
        if new_array.dtype != self.array.dtype:
            new_array = new_array.astype(self.array.dtype)
        for g in self.grads:
            g.data = new_array
        self.array = new_array


_MISSING = object()


def _grad_groups(params, what, scales=False):
    """Group the non-None gradients of ``params`` by the identity of their array.

    ``scales``: the caller multiplies gradients by a factor, which an integer
    array cannot hold (it would round to a wrong value): TypeError naming the parameter.
    """
    groups = {}
    for i, p in enumerate(params):
        g = getattr(p, 'grad', _MISSING)
        if g is _MISSING:
            raise TypeError(f'{what}: params must be Variables/Parameters, got {type(p).__name__}')
        if g is None:
            continue
        if scales and g.data.dtype.kind not in 'fc':
            raise TypeError(f'{what}: the gradient of parameter #{i} ({p.name or "unnamed"}, shape '
                            f'{g.data.shape}) has dtype {g.data.dtype}; scaling it needs a '
                            f'floating-point gradient (give the parameter float data)')
        group = groups.get(id(g.data))
        if group is None:  # the dict keeps the array alive, so its id stays unique
            group = groups[id(g.data)] = _GradGroup(g.data)
        if not any(h is g for h in group.grads):
            group.grads.append(g)
        group.params.append(p)
    return list(groups.values())


# =============================================================================
# Norms
# =============================================================================
def _norm_order(norm_type, what):
    """``norm_type`` as a float p > 0 (``inf`` allowed), else a ValueError."""
    if isinstance(norm_type, str) and norm_type.lower() == 'inf':
        return math.inf
    try:
        p = float(norm_type)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: norm_type must be a positive number or 'inf', "
                         f'got {norm_type!r}') from None
    if not p > 0:
        raise ValueError(f"{what}: norm_type must be a positive number or 'inf', got {norm_type!r}")
    return p


def _array_norm(a, p):
    """The p-norm of an array seen as one flat vector: a 0-d float64 array where ``a`` lives
    (accumulated in float64; for other p, ``||a|| = m ||a / m||`` with m = max |a|, so
    ``|a|^p`` cannot overflow)."""
    xp = cuda.get_array_module(a)
    if a.size == 0:
        return xp.zeros((), xp.float64)
    a = xp.abs(a.ravel()).astype(xp.float64, copy=False)
    if p == math.inf:
        return a.max()
    if p == 1:
        return a.sum()
    if p == 2:
        return xp.sqrt(xp.dot(a, a))
    m = a.max()
    usable = (m != 0) & xp.isfinite(m)  # 0, inf or NaN: the norm is m itself
    safe = xp.where(usable, m, 1.0)
    return xp.where(usable, safe * ((a / safe) ** p).sum() ** (1.0 / p), m)


def _array_norms(arrays, p):
    """The p-norm of each array, as Python floats.

    GPU arrays: every norm stays on the device and all of them come back in one
    transfer (a float() per gradient would make the host wait for the device each time).
    """
    norms = [_array_norm(a, p) for a in arrays]
    on_host = [isinstance(n, (np.ndarray, np.generic)) for n in norms]
    if all(on_host):
        return [float(n) for n in norms]
    on_device = [n for n, host in zip(norms, on_host) if not host]
    fetched = iter(cuda.as_numpy(cuda.get_array_module(on_device[0]).stack(on_device)))
    return [float(n) if host else float(next(fetched)) for n, host in zip(norms, on_host)]


def _combine_norms(norms, p):
    """The p-norm of the concatenation of vectors whose p-norms are ``norms``."""
    if not norms:
        return 0.0
    if any(math.isnan(n) for n in norms):
        return math.nan
    m = max(norms)
    if p == math.inf or m == 0 or m == math.inf:
        return m
    return m * math.fsum([(n / m) ** p for n in norms]) ** (1.0 / p)


def _check_nonnegative(value, name, what):
    if not value >= 0:
        raise ValueError(f'{what}: {name} must be >= 0, got {value!r}')


# =============================================================================
# Clipping functions
# =============================================================================
@host_operation  # static_graph re-runs the call (see dezero_kr.hooks)
def clip_grad_value(params, clip_value):
    """Clip every gradient element to ``[-clip_value, clip_value]`` (in place; dtype kept)."""
    _check_nonnegative(clip_value, 'clip_value', 'clip_grad_value')
    c = float(clip_value)  # a Python float keeps float32 grads float32
    for group in _grad_groups(params, 'clip_grad_value'):
        xp = cuda.get_array_module(group.array)
        group.set(xp.clip(group.array, -c, c))


@host_operation  # static_graph re-runs the call (see dezero_kr.hooks)
def clip_grad_norm(params, max_norm, norm_type=2.0, error_if_nonfinite=False, eps=1e-6):
    """Scale all gradients together so their global norm is at most ``max_norm``; return the
    norm before clipping (a Python float).

    ``||g|| = (sum_p ||g_p||^q)^(1/q)`` over every gradient (q = ``norm_type``,
    ``inf`` = the largest absolute element); each gradient is multiplied by
    ``min(1, max_norm / (||g|| + eps))``.  Gradients whose global norm is already
    small enough are left untouched (the very same arrays).  A NaN/inf norm raises
    RuntimeError if ``error_if_nonfinite``; otherwise the gradients are scaled by
    it anyway, as PyTorch does (NaN norm -> NaN gradients).

    Summation order: one norm per gradient array, in the order of ``params``,
    combined with ``math.fsum`` -- never one norm over a concatenated buffer.
    An optimizer's fused update (``foreach``) gathers the gradients only after
    its hooks ran on the per-parameter arrays, so the norm, and the clipped
    gradients, are the same with ``foreach`` on or off.
    """
    what = 'clip_grad_norm'
    _check_nonnegative(max_norm, 'max_norm', what)
    p = _norm_order(norm_type, what)
    groups = _grad_groups(params, what, scales=True)
    total = _combine_norms(_array_norms([g.array for g in groups], p), p)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f'{what}: the total norm of order {norm_type} of the gradients of {len(groups)} '
            f'parameter(s) is {total}, so it cannot be clipped (a NaN/inf is already in a '
            f'gradient; clipping cannot repair it). Find the op that produced it with '
            f'dezero_kr.autograd.detect_anomaly(), or pass error_if_nonfinite=False to scale '
            f'by the non-finite norm anyway.')
    _scale_if_above(groups, max_norm, total + eps)  # norm inf -> 0, NaN -> NaN, as PyTorch
    return total


def _scale_if_above(groups, max_norm, norm):
    """Multiply the groups' gradients by ``max_norm / norm`` unless that is >= 1."""
    if norm == 0:
        return  # zero gradients (with eps=0): nothing to scale
    coef = max_norm / norm
    if coef >= 1:
        return
    coef = float(coef)  # a Python float: NumPy's weak scalar keeps the grad dtype
    for group in groups:
        group.set(group.array * coef)


@host_operation  # static_graph re-runs the call (see dezero_kr.hooks)
def clip_grad_norm_per_tensor(params, max_norm, norm_type=2.0, eps=1e-6):
    """Clip each gradient on its own: ``g <- g * min(1, max_norm / (||g|| + eps))``.

    Returns the pre-clip norm of each parameter's gradient, in the order of
    ``params`` (None where the gradient is None).
    """
    what = 'clip_grad_norm_per_tensor'
    _check_nonnegative(max_norm, 'max_norm', what)
    p = _norm_order(norm_type, what)
    params = list(params)
    groups = _grad_groups(params, what, scales=True)
    norms = dict(zip((id(g.array) for g in groups), _array_norms([g.array for g in groups], p)))
    result = [None if q.grad is None else norms[id(q.grad.data)] for q in params]
    for group in groups:
        _scale_if_above([group], max_norm, norms[id(group.array)] + eps)
    return result


def _unit_axes(ndim):
    """Axes reduced to get one norm per unit (see ``adaptive_clip_grad``); None = whole tensor."""
    if ndim <= 1:
        return None
    if ndim == 2:
        return (0,)
    return tuple(range(1, ndim))


def _unitwise_norm(a, xp):
    axes = _unit_axes(a.ndim)
    if axes is None:
        return xp.sqrt((a * a).sum())
    return xp.sqrt((a * a).sum(axis=axes, keepdims=True))


@host_operation  # static_graph re-runs the call (see dezero_kr.hooks)
def adaptive_clip_grad(params, clipping=0.01, eps=1e-3):
    """Adaptive gradient clipping (AGC, Brock et al. 2021), unit by unit.

    For each unit i: ``||W_i||* = max(||W_i||, eps)``; if ``||G_i|| / ||W_i||* > clipping``
    then ``G_i <- clipping * ||W_i||* / ||G_i|| * G_i``.  A unit (one output) is:

    * 0-d and 1-D parameters (biases, gains): the whole tensor, as NFNet's reference;
    * 2-D ``W (in, out)`` (DeZero's Linear layout): one column ``W[:, j]`` per output;
    * ``ndim >= 3`` ``W (OC, C, KH, KW)`` (Conv2d): one slice ``W[o]`` per output channel.

    NFNet leaves the final classifier layer unclipped: pass the other parameters.
    A gradient shared by several parameters is clipped once, against the first one's W.
    """
    what = 'adaptive_clip_grad'
    if not clipping > 0:
        raise ValueError(f'{what}: clipping must be > 0, got {clipping!r}')
    _check_nonnegative(eps, 'eps', what)
    for group in _grad_groups(params, what, scales=True):
        W, G = group.params[0].data, group.array
        if W is None or W.shape != G.shape:
            raise ValueError(f'{what}: a parameter has data of shape '
                             f'{None if W is None else W.shape} but a gradient of shape {G.shape}')
        xp = cuda.get_array_module(G)
        max_norm = xp.maximum(_unitwise_norm(W, xp), eps) * float(clipping)
        g_norm = _unitwise_norm(G, xp)
        too_big = g_norm > max_norm
        if xp is np and not too_big.any():
            continue  # nothing to clip: keep the very same array (a GPU skips the check: no sync)
        scale = max_norm / xp.maximum(g_norm, xp.finfo(G.dtype).tiny)
        group.set(xp.where(too_big, G * scale, G))


# =============================================================================
# Optimizer hooks
# =============================================================================
class ClipGradNorm:
    """Optimizer hook: global norm clipping to ``max_norm`` (``clip_grad_norm``).

    ``last_norm``: the norm (of order ``norm_type``) before the last clip, for logging.
    """

    def __init__(self, max_norm, norm_type=2.0):
        """``ValueError`` for ``max_norm < 0`` or a ``norm_type`` that is not a positive number or 'inf'."""
        _check_nonnegative(max_norm, 'max_norm', 'ClipGradNorm')
        _norm_order(norm_type, 'ClipGradNorm')
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.last_norm = None

    def __call__(self, params):
        """Clip the gradients of ``params`` in place and store the norm before clipping."""
        self.last_norm = clip_grad_norm(params, self.max_norm, self.norm_type)


class ClipGradValue:
    """Optimizer hook: element-wise clipping to ``[-clip_value, clip_value]``.

    ``last_norm``: the global L2 norm of the gradients before the last clip.
    """

    def __init__(self, clip_value):
        """``ValueError`` for ``clip_value < 0``."""
        _check_nonnegative(clip_value, 'clip_value', 'ClipGradValue')
        self.clip_value = clip_value
        self.last_norm = None

    def __call__(self, params):
        """Clip the gradients of ``params`` in place and store their global L2 norm before clipping."""
        params = list(params)
        self.last_norm = _global_l2(params, 'ClipGradValue')
        clip_grad_value(params, self.clip_value)


class AdaptiveClipGrad:
    """Optimizer hook: unit-wise adaptive clipping (``adaptive_clip_grad``).

    ``last_norm``: the global L2 norm of the gradients before the last clip.
    """

    def __init__(self, clipping=0.01, eps=1e-3):
        """``ValueError`` unless ``clipping > 0``."""
        if not clipping > 0:
            raise ValueError(f'AdaptiveClipGrad: clipping must be > 0, got {clipping!r}')
        self.clipping = clipping
        self.eps = eps
        self.last_norm = None

    def __call__(self, params):
        """Clip the gradients of ``params`` in place and store their global L2 norm before clipping."""
        params = list(params)
        self.last_norm = _global_l2(params, 'AdaptiveClipGrad')
        adaptive_clip_grad(params, self.clipping, self.eps)


def _global_l2(params, what):
    return _combine_norms(_array_norms([g.array for g in _grad_groups(params, what)], 2.0), 2.0)
