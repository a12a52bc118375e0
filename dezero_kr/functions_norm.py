"""Normalisation: layer_norm, rms_norm, batch_norm (one ``_Normalize`` rule for the three)."""
import math
import warnings

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import rounded_to, sum_to as _sum_to_array, widen
from dezero_kr.core import Config, Function, Variable, as_variable, state_lock
from dezero_kr.operators import (
    add_tangents, array_grad, as_grad, broadcast_to, cached_or_rebuilt, operands, sum_to)
from dezero_kr.operators_shape import reshape
from dezero_kr.functions_math import mean
from dezero_kr.functions_activation import in_float32

# =============================================================================
# Normalisation (batch norm, layer norm, RMS norm)
# =============================================================================
class _Normalize(Function):
    """Shared math of the normalisations, over the reduction axes ``axes``:

    xhat = (x - mean) / sqrt(var + eps)   (``center=False``: x / sqrt(mean(x^2) + eps))
    y    = xhat * gamma (+ beta), gamma/beta broadcast as ``pshape``; y = xhat without gamma
           (LayerNorm/RMSNorm called with x alone: nothing to learn, no multiply by ones).

    dL/dxhat = gy gamma;  dL/dx = r (g - mean(g) - xhat mean(g xhat)) with r = 1/sqrt(...)
    (no ``mean(g)`` term when not centred); dL/dgamma = sum(gy xhat); dL/dbeta = sum(gy).
    """
    __slots__ = ('axes', 'eps', 'center', 'pshape', 'xhat', 'inv_std')

    def _normalize(self, x):
        """Raw forward: store xhat and r; return xhat, the mean (None if not centred) and var.

        float16 is normalised in float32 (squared deviations overflow from 256): xhat, r
        and the statistics are float32 then, and the callers round y to float16.
        """
        xp = cuda.get_array_module(x)
        x = widen(x)
        # sum / n: ndarray.mean's and .var's numbers bit for bit (DeZero's batch statistics),
        # without their Python wrappers' ~1.4 us a call (measured)
        n = math.prod(x.shape[a] for a in self.axes)
        mu = x.sum(axis=self.axes, keepdims=True) / n if self.center else None
        xc = x - mu if self.center else x
        var = (xc * xc).sum(axis=self.axes, keepdims=True) / n
        self.inv_std = 1 / xp.sqrt(var + self.eps)
        self.xhat = xc * self.inv_std
        return self.xhat, mu, var

    def _affine(self, xhat, gamma, beta, x):
        """y = xhat gamma + beta, in NumPy's result dtype of x, gamma and beta (a float16 x
        was normalised in float32: y is rounded to float16 once, here)."""
        dtype = x.dtype if gamma is None else np.result_type(
            x.dtype, gamma.dtype, *(() if beta is None else (beta.dtype,)))
        if gamma is None:
            return rounded_to(xhat, dtype)  # may share the cache: ops never write into inputs
        y = xhat * gamma.reshape(self.pshape)
        if beta is not None:
            y += beta.reshape(self.pshape)
        return rounded_to(y, dtype)

    def _stats(self):
        """(xhat, r): graph Variables built from x while recording, else the cached arrays."""
        return cached_or_rebuilt((self.xhat, self.inv_std), self._rebuild_stats)

    def _rebuild_stats(self):
        x = self.inputs[0]
        xc = x - mean(x, self.axes, keepdims=True) if self.center else x
        inv_std = (mean(xc * xc, self.axes, keepdims=True) + self.eps) ** -0.5
        return xc * inv_std, inv_std

    def _dxhat_to_dx(self, g, xhat, inv_std):
        """Map a gradient (or tangent) on xhat to one on x: the Jacobian of xhat is symmetric.

        Written with ``.sum`` (arrays and Variables both have it), so the plain
        first-order pass stays on arrays.
        """
        n = xhat.size // inv_std.size  # elements per normalised group
        proj = xhat * ((g * xhat).sum(axis=self.axes, keepdims=True) * (1 / n))
        if self.center:
            proj = proj + g.sum(axis=self.axes, keepdims=True) * (1 / n)
        return (g - proj) * inv_std

    def _param_grads(self, gy, xhat, to_grad):
        """dL/dgamma = sum(gy xhat), dL/dbeta = sum(gy) over the normalised axes; gy an array or a Variable."""
        if len(self.inputs) == 1:
            return ()
        gamma = self.inputs[1]
        ggamma = None
        if gamma.requires_grad:
            ggamma = _sum_to_param(gy * xhat, self.pshape, gamma, to_grad)
        if len(self.inputs) < 3:
            return (ggamma,)
        beta = self.inputs[2]
        gbeta = _sum_to_param(gy, self.pshape, beta, to_grad) if beta.requires_grad else None
        return ggamma, gbeta

    def backward(self, gy):
        return self._vjp(as_grad, operands(gy)[0])

    def backward_arrays(self, gy):
        gxs = self._vjp(array_grad, gy)
        return gxs if len(gxs) > 1 else gxs[0]

    def _vjp(self, to_grad, g):
        """The rule on the operand ``g`` (Variable or array); ``to_grad`` makes each result."""
        x = self.inputs[0]
        xhat, inv_std = self._stats()
        g, = in_float32(g)  # float16: the sums below in float32 (array path)
        gx = None
        if x.requires_grad:
            gx = to_grad(rounded_to(self._grad_x(g, xhat, inv_std), x.dtype), x)
        return (gx,) + self._param_grads(g, xhat, to_grad)

    def _grad_x(self, gy, xhat, inv_std):
        """dL/dx from gy: gamma first (dL/dxhat = gy gamma), then ``_dxhat_to_dx``."""
        gxhat = gy if len(self.inputs) == 1 else gy * operands(self.inputs[1])[0].reshape(self.pshape)
        return self._dxhat_to_dx(gxhat, xhat, inv_std)

    def _tangent_x(self, dx, xhat, inv_std):
        """The tangent of y from that of x: ``_dxhat_to_dx`` (the Jacobian is symmetric), then gamma."""
        t = self._dxhat_to_dx(dx, xhat, inv_std)
        return t if len(self.inputs) == 1 else t * reshape(self.inputs[1], self.pshape)

    def jvp(self, dx, dgamma=None, dbeta=None):
        x = self.inputs[0]
        xhat, inv_std = self._stats()
        t = None
        if dx is not None:
            t = self._tangent_x(dx, xhat, inv_std)
        if dgamma is not None:
            t = add_tangents(t, xhat * reshape(dgamma, self.pshape))
        if dbeta is not None:
            t = add_tangents(t, broadcast_to(reshape(dbeta, self.pshape), x.shape))
        return t


def _sum_to_param(g, pshape, p, to_grad):
    """``g`` summed to ``pshape`` and shaped like the parameter ``p``, made a gradient by
    ``to_grad`` (of ``p``'s dtype: a float16 parameter's gradient is summed in float32,
    then rounded)."""
    if isinstance(g, Variable):
        return reshape(sum_to(g, pshape), p.shape)
    return to_grad(rounded_to(_sum_to_array(g, pshape).reshape(p.shape), p.dtype), p)


class LayerNorm(_Normalize):
    """Layer normalisation over the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta."""
    __slots__ = ()

    def __init__(self, eps=1e-5):
        self.axes = (-1,)
        self.eps = eps
        self.center = True
        self.pshape = None

    def forward(self, x, gamma=None, beta=None):
        self.pshape = None if gamma is None else gamma.shape
        return self._affine(self._normalize(x)[0], gamma, beta, x)


def _check_feature_param(fname, x, p, axis, what):
    n = x.shape[axis]
    if p.ndim != 1 or p.shape[0] != n:
        raise ValueError(f'{fname}: {what} has shape {p.shape} but x has shape {x.shape}; '
                         f'expected ({n},) (axis {axis} of x)')


def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    """Normalise each row over the last axis; gamma, beta have shape (D,) = x.shape[-1:].

    Without gamma and beta: y = (x - mean) / sqrt(var + eps), no affine part.
    """
    x = as_variable(x)
    if gamma is None and beta is None:
        return LayerNorm(eps)(x)
    if gamma is None or beta is None:
        raise ValueError('layer_norm: pass both gamma and beta, or neither (no affine part)')
    gamma, beta = as_variable(gamma), as_variable(beta)
    _check_feature_param('layer_norm', x, gamma, -1, 'gamma')
    _check_feature_param('layer_norm', x, beta, -1, 'beta')
    return LayerNorm(eps)(x, gamma, beta)


class RMSNorm(LayerNorm):
    """RMS normalisation over the last axis: y = x / sqrt(mean(x^2) + eps) * gamma (no centring, no beta)."""
    __slots__ = ()

    def __init__(self, eps=1e-5):
        super().__init__(eps)
        self.center = False


def rms_norm(x, gamma=None, eps=1e-5):
    """y = x / sqrt(mean(x^2, axis=-1) + eps) * gamma; gamma has shape (D,) = x.shape[-1:] (None: no gain)."""
    x = as_variable(x)
    if gamma is None:
        return RMSNorm(eps)(x)
    gamma = as_variable(gamma)
    _check_feature_param('rms_norm', x, gamma, -1, 'gamma')
    return RMSNorm(eps)(x, gamma)


class BatchNorm(_Normalize):
    """Batch normalisation over every axis but the channel axis 1 ((N, C) or (N, C, H, W)).

    Training (``Config.train``): normalise with the batch statistics and update
    the running ``mean`` / ``var`` arrays in place:
    ``mean = decay mean + (1 - decay) batch_mean``, ``var`` likewise with the
    unbiased batch variance.  Test mode: normalise with the running statistics
    (then y is affine in x: dL/dx = gy gamma / sqrt(var + eps)).
    """
    __slots__ = ('mean', 'var', 'decay', 'train')

    def __init__(self, mean, var, decay=0.9, eps=2e-5):
        self.mean = mean
        self.var = var
        self.decay = decay
        self.eps = eps
        self.center = True
        self.train = Config.train

    def forward(self, x, gamma, beta):
        self.axes = (0,) + tuple(range(2, x.ndim))
        self.pshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        if self.train:
            xhat, batch_mean, batch_var = self._normalize(x)
            m = x.size // x.shape[1]
            unbias = m / max(m - 1, 1)  # the running var estimates the population variance
            new_mean = (1 - self.decay) * batch_mean.reshape(-1)
            new_var = ((1 - self.decay) * unbias) * batch_var.reshape(-1)
            with state_lock:  # one whole update at a time when threads share the layer
                self.mean *= self.decay
                self.mean += new_mean
                self.var *= self.decay
                self.var += new_var
        else:
            xp = cuda.get_array_module(x)
            self.inv_std = (1 / xp.sqrt(self.var + self.eps)).astype(x.dtype, copy=False).reshape(self.pshape)
            xhat = (x - self.mean.reshape(self.pshape)) * self.inv_std
            self.xhat = xhat
        return self._affine(xhat, gamma, beta, x)

    def _rebuild_stats(self):
        if self.train:
            return super()._rebuild_stats()
        return (self.inputs[0] - self.mean.reshape(self.pshape)) * self.inv_std, self.inv_std

    def _dxhat_to_dx(self, g, xhat, inv_std):
        if self.train:
            return super()._dxhat_to_dx(g, xhat, inv_std)
        return g * inv_std

    def _through_gamma(self, g, xhat, inv_std):
        """dL/dx (g = gy) and the tangent of y (g = dx) alike: gamma is constant along the
        reduced axes, so it commutes with the symmetric Jacobian of xhat.  Training: DeZero's
        (g - sum(g) / n - xhat sum(xhat g) / n) (gamma r), its grouping; test mode: g (gamma r)."""
        scale = operands(self.inputs[1])[0].reshape(self.pshape) * inv_std
        if not self.train:
            return g * scale
        n = xhat.size // inv_std.size
        axes = self.axes
        return (g - g.sum(axis=axes, keepdims=True) / n
                - xhat * (xhat * g).sum(axis=axes, keepdims=True) / n) * scale

    _grad_x = _tangent_x = _through_gamma


def _check_batch_norm(x, gamma, beta, mean_, var):
    if x.ndim not in (2, 4):
        raise ValueError(f'batch_norm: x must be (N, C) or (N, C, H, W), got shape {x.shape}')
    c = x.shape[1]
    for name, p in (('gamma', gamma), ('beta', beta), ('mean', mean_), ('var', var)):
        if p.shape != (c,):
            raise ValueError(f'batch_norm: {name} has shape {p.shape} but x has shape {x.shape}; '
                             f'expected ({c},)')


def batch_norm(x, gamma, beta, mean, var, decay=0.9, eps=2e-5):
    """Batch normalisation; ``mean``/``var`` are the running statistics (arrays, updated in place
    while training)."""
    x, gamma, beta = as_variable(x), as_variable(gamma), as_variable(beta)
    mean = mean.data if isinstance(mean, Variable) else mean
    var = var.data if isinstance(var, Variable) else var
    _check_batch_norm(x, gamma, beta, mean, var)
    return BatchNorm(mean, var, decay, eps)(x, gamma, beta)


_batch_nrom_warned = False


def batch_nrom(x, gamma, beta, mean, var, decay=0.9, eps=2e-5):
    """Deprecated alias of ``batch_norm`` (DeZero's misspelling); warns once per process."""
    global _batch_nrom_warned
    if not _batch_nrom_warned:
        _batch_nrom_warned = True
        warnings.warn('batch_nrom is a misspelling kept for DeZero code; use batch_norm',
                      DeprecationWarning, stacklevel=2)
    return batch_norm(x, gamma, beta, mean, var, decay, eps)
