"""Functional reverse mode: ``grad`` and ``vjp`` return gradients instead of
storing them in ``.grad``, plus the argument checks the functional API shares.

Both run the engine's one reverse pass (``core.backprop``) with a ``capture``
dict: the gradient of each requested input is taken out of the pass as it
completes, so no Variable's ``.grad`` is read or written.  ``forward_mode``,
``numerical`` and ``autograd`` (``jacobian``, ``hessian``) reuse the argument
checks below, so every functional tool reports a bad argument the same way.
"""
from dezero_kr import cuda
from dezero_kr.core import Constant, Variable, array_types, backprop, using_config


# =============================================================================
# Arguments shared by the functional tools
# =============================================================================
def as_tuple(obj):
    """``obj`` as a tuple: a tuple or list unpacked, anything else as the only element."""
    return tuple(obj) if isinstance(obj, (tuple, list)) else (obj,)


def as_primal(p, what, index, differentiable=True):
    """A primal input as a Variable: arrays are wrapped; so is a Constant when the
    caller needs a gradient for it (``differentiable``)."""
    if isinstance(p, Variable):
        if p.data is None:
            raise ValueError(f'{what}: primal #{index} has no data')
        if differentiable and not p.requires_grad:
            return Variable(p.data, name=p.name)
        return p
    if isinstance(p, array_types):
        return Variable(p)
    raise TypeError(f'{what}: primal #{index} must be a Variable or an ndarray, '
                    f'got {type(p).__name__}')


def outputs_of(ys, what):
    """The outputs of ``f`` as a tuple of Variables; TypeError naming ``what`` for another output."""
    outs = as_tuple(ys)
    for i, y in enumerate(outs):
        if not isinstance(y, Variable):
            raise TypeError(f'{what}: f must return a Variable or a tuple of Variables; '
                            f'output #{i} is a {type(y).__name__}')
    return outs


def single_output(y, what):
    """``y`` when it is one Variable; TypeError naming ``what`` otherwise."""
    if not isinstance(y, Variable):
        raise TypeError(f'{what}: f must return one Variable, got {type(y).__name__}')
    return y


def constant_like(x, value=None):
    """A Constant in ``x``'s dtype and array module: ``value``, or zeros of ``x``'s shape."""
    xp = cuda.get_array_module(x.data)
    if value is None:
        return Constant(xp.zeros(x.data.shape, dtype=x.data.dtype))
    return Constant(xp.asarray(value, dtype=x.data.dtype))


# =============================================================================
# grad and vjp
# =============================================================================
def grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
         allow_unused=False, materialize_grads=False):
    """Return ``sum_k d(outputs[k] . grad_outputs[k]) / d inputs[i]`` for each input, as a tuple.

    ``outputs``: a Variable or a sequence of Variables; ``inputs``: a Variable
    or a sequence of Variables (each must require a gradient, so not a
    ``Constant``).  ``grad_outputs``: one array/Variable per output, of that
    output's shape (an array is converted to the output's dtype); it may be
    omitted (None) only for outputs with one element, whose seed is 1.  Entry
    ``i`` of the result is a Variable of ``inputs[i]``'s shape and dtype (None
    for an unused input with ``allow_unused``).

    No ``.grad`` attribute is read or written (leaves keep what they had), as
    ``torch.autograd.grad``.  ``create_graph=True`` records the gradient
    computation (higher order).  ``retain_graph`` is accepted for
    compatibility: this engine never frees a graph during backward, so a graph
    can always be differentiated again.

    Raises ValueError for empty ``outputs``/``inputs``, an input that is a
    Constant, a ``grad_outputs`` of the wrong count or shape; TypeError for an
    output or input that is not a Variable with data; RuntimeError for a
    many-element output without ``grad_outputs``, and for an input the outputs
    do not depend on unless ``allow_unused`` (its entry is None) or
    ``materialize_grads`` (zeros of its shape).
    """
    outputs = as_tuple(outputs)
    inputs = as_tuple(inputs)
    if not inputs:
        raise ValueError('grad: inputs is empty')
    for i, x in enumerate(inputs):
        if not isinstance(x, Variable) or x.data is None:
            raise TypeError(f'grad: input #{i} must be a Variable with data, got {x!r:.60}')
        if not x.requires_grad:
            raise ValueError(f'grad: input #{i} is a {type(x).__name__} (requires_grad is False), '
                             f'so no gradient flows into it; make it a Variable')
    seeds = _seeds(outputs, grad_outputs)
    capture = dict.fromkeys(inputs)
    backprop(seeds, create_graph=create_graph, capture=capture)
    result = []
    for i, x in enumerate(inputs):
        g = capture[x]
        if g is None:
            if materialize_grads:
                g = Variable(cuda.get_array_module(x.data).zeros_like(x.data))
            elif not allow_unused:
                raise RuntimeError(f'grad: input #{i} (shape {x.shape}) was not used to compute '
                                   f'the outputs, so it has no gradient; pass allow_unused=True '
                                   f'(None for it) or materialize_grads=True (zeros)')
        result.append(g)
    return tuple(result)


def _seeds(outputs, grad_outputs):
    """The dict output -> seed gradient for ``backprop``, checked against the outputs' shapes."""
    if not outputs:
        raise ValueError('grad: outputs is empty')
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = as_tuple(grad_outputs)
        if len(grad_outputs) != len(outputs):
            raise ValueError(f'grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs')
    seeds = {}
    for k, (y, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(y, Variable) or y.data is None:
            raise TypeError(f'grad: output #{k} must be a Variable with data, got {y!r:.60}')
        if g is None:
            if y.data.size != 1:
                raise RuntimeError(f'grad: output #{k} has shape {y.shape}; a gradient can be '
                                   f'implied (1) only for a one-element output, so pass '
                                   f'grad_outputs (one array of shape {y.shape} per output)')
            g = Variable(cuda.get_array_module(y.data).ones_like(y.data))
        else:
            if not isinstance(g, Variable):
                g = Variable(constant_like(y, g).data)  # a seed in the output's dtype
            if g.data.shape != y.data.shape:
                raise ValueError(f'grad: grad_outputs[{k}] has shape {g.data.shape}, '
                                 f'but output #{k} has shape {y.data.shape}')
        seeds[y] = g if y not in seeds else seeds[y] + g
    return seeds


def vjp(f, *primals, v=None, create_graph=False):
    """Return ``(f(*primals), v^T J)``: the vector-Jacobian product by one reverse pass.

    For ``y = f(x_1, ..., x_n)`` the second item is ``sum_k v_k^T dy_k/dx_i``
    for each primal ``x_i``, shaped (and typed) like ``x_i``: a Variable for one
    primal, a tuple for several; a primal the outputs do not depend on gets
    zeros.  ``primals`` are Variables or ndarrays (a Constant is differentiated
    through a Variable sharing its data); ``v`` is one array per output of
    ``f``, shaped like it, and may be None for a one-element output.  The graph
    is recorded even inside ``no_grad()``.

    Raises ValueError without primals (or for a primal with no data), TypeError
    for a primal that is not a Variable/ndarray or an ``f`` that does not return
    Variables, and ``grad``'s errors for a wrong ``v``.
    """
    xs = tuple(as_primal(p, 'vjp', i) for i, p in enumerate(primals))
    if not xs:
        raise ValueError('vjp: give at least one primal')
    with using_config('enable_backprop', True):  # a reverse pass needs the graph, even in no_grad
        ys = f(*xs)
    gs = grad(outputs_of(ys, 'vjp'), xs, grad_outputs=v, create_graph=create_graph,
              materialize_grads=True)
    return ys, gs[0] if len(xs) == 1 else gs


def reverse_jacobians(y, xs):
    """``[J_i]`` with ``J_i`` of shape ``(y.size, x_i.size)``: one reverse pass per element of y."""
    xp = cuda.get_array_module(y.data)
    rows = [[] for _ in xs]
    for j in range(y.data.size):
        seed = xp.zeros(y.data.size, dtype=y.data.dtype)
        seed[j] = 1
        gs = grad(y, xs, grad_outputs=seed.reshape(y.shape), materialize_grads=True)
        for row, g in zip(rows, gs):
            row.append(g.data.reshape(-1))
    return [xp.stack(r) if r else xp.zeros((0, x.data.size), dtype=y.data.dtype)
            for r, x in zip(rows, xs)]
