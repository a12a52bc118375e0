"""Gradient tools beyond DeZero, the front door: every name is importable from here.

==================  =================  ======================================
name                lives in           what it does
==================  =================  ======================================
``grad``            ``reverse_mode``   d(outputs)/d(inputs) as a tuple; no
                                       ``.grad`` is touched (the contract of
                                       PyTorch's ``torch.autograd.grad``)
``vjp``             ``reverse_mode``   ``(f(x), v^T J)``: one reverse pass
``jvp``             ``forward_mode``   ``(f(x), J t)``: one forward pass that
                                       carries tangents
``jacobian``        here               the full J: n JVPs (forward, n =
                                       inputs) or m VJPs (reverse)
``hessian``         here               forward-over-reverse: the JVPs of the
                                       gradient function
``detect_anomaly``  ``anomaly``        raise ``AnomalyError`` at the first op
                                       that makes NaN/inf or reads an array
                                       changed in place
``gradcheck``       ``numerical``      compare the analytic Jacobian with
                                       central differences
==================  =================  ======================================

``jacobian`` and ``hessian`` live here because they combine the two modes.
Central differences are implemented once, in ``numerical``; DeZero's
``utils.numerical_grad`` and ``utils.gradient_check`` use the same routine.
"""
from dezero_kr import cuda
from dezero_kr.autograd.anomaly import AnomalyError, detect_anomaly
from dezero_kr.core import using_config
from dezero_kr.autograd.forward import jvp
from dezero_kr.autograd.numerical import GradcheckError, gradcheck
from dezero_kr.autograd.reverse import as_primal, reverse_jacobians, single_output, grad, vjp

__all__ = ['grad', 'vjp', 'jvp', 'jacobian', 'hessian', 'detect_anomaly', 'AnomalyError',
           'gradcheck', 'GradcheckError']


def jacobian(f, x, mode='auto'):
    """The Jacobian of ``f`` at ``x``: ``J[j..., i...] = d f(x)[j...] / d x[i...]``.

    ``x`` is one Variable or ndarray; ``f`` returns one Variable.  The result
    is a raw array (NumPy or CuPy, like ``x``) of shape ``f(x).shape +
    x.shape`` (float32 ``x`` and ``f`` give a float32 Jacobian).  ``mode='forward'`` builds it column by
    column with ``x.size`` JVPs, ``'reverse'`` row by row with ``f(x).size``
    VJPs on one graph; ``'auto'`` picks forward when ``x`` has fewer elements
    than ``f(x)``.  Both modes give the same matrix, also at kinks (each op has
    one rule for both).  The graph is recorded even inside ``no_grad()``.

    Raises ValueError for another ``mode``, TypeError when ``x`` is not a
    Variable/ndarray or ``f`` does not return one Variable.
    """
    if mode not in ('auto', 'forward', 'reverse'):
        raise ValueError(f"jacobian: mode must be 'auto', 'forward' or 'reverse', got {mode!r}")
    x = as_primal(x, 'jacobian', 0)
    if mode == 'forward':
        return _forward_jacobian(f, x)
    with using_config('enable_backprop', True):
        y = single_output(f(x), 'jacobian')
    if mode == 'auto' and x.data.size < y.data.size:
        return _forward_jacobian(f, x)
    return reverse_jacobians(y, [x])[0].reshape(y.shape + x.shape)


def _forward_jacobian(f, x):
    xp = cuda.get_array_module(x.data)
    columns, y = [], None
    for i in range(x.data.size):
        e = xp.zeros(x.data.size, dtype=x.data.dtype)
        e[i] = 1
        y, t = jvp(f, (x,), (e.reshape(x.shape),))
        y = single_output(y, 'jacobian')
        columns.append(t.data.reshape(-1))
    if y is None:  # x has no elements
        y = single_output(f(x), 'jacobian')
        return xp.zeros(y.shape + x.shape, dtype=y.data.dtype)
    return xp.stack(columns, axis=-1).reshape(y.shape + x.shape)


def hessian(f, x):
    """The Hessian of a scalar ``f`` at ``x``: ``H[i..., j...] = d^2 f / d x[i...] d x[j...]``.

    Forward-over-reverse: column j is the JVP, along ``e_j``, of the gradient
    function ``x -> grad(f(x), x, create_graph=True)``, so ``x.size`` forward
    passes through the forward and the backward computation.  ``x`` is one
    Variable or ndarray; the result is a raw array of shape ``x.shape +
    x.shape`` (float32 in, float32 out).  Works inside ``no_grad()``.

    Raises ValueError when ``f(x)`` has more than one element, TypeError when
    ``x`` is not a Variable/ndarray or ``f`` does not return one Variable.
    """
    x = as_primal(x, 'hessian', 0)

    def gradient(x):
        with using_config('enable_backprop', True):  # no_grad around hessian must not zero it
            y = single_output(f(x), 'hessian')
        if y.data.size != 1:
            raise ValueError(f'hessian: f must return one element, got shape {y.shape}')
        return grad(y, x, create_graph=True, materialize_grads=True)[0]

    return jacobian(gradient, x, mode='forward')
