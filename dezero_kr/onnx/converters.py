"""One converter per Function class, registered in ``registry`` (``mapping_table`` lists them)."""
import numpy as np

from dezero_kr import functions_activation as _act
from dezero_kr import functions_attention as _attn
from dezero_kr import functions_conv as _conv
from dezero_kr import functions_math as _fmath
from dezero_kr import functions_nn as _nn
from dezero_kr import operators as _ops
from dezero_kr import operators_shape as _shape
from dezero_kr.onnx.registry import INT64_MAX, INT64_MIN, register

# =============================================================================
# Converters: arithmetic
# =============================================================================
def _out_dtype(f, i=0):
    return f.outputs[i]().dtype


def _unary(op, **attrs):
    def convert(b, f, ins, outs):
        b.one(op, ins, outs[0], **attrs)
    return convert


for _cls, _op in ((_ops.Neg, 'Neg'), (_ops.Log, 'Log'), (_fmath.Exp, 'Exp'), (_fmath.Sqrt, 'Sqrt'),
                  (_fmath.Tanh, 'Tanh'), (_fmath.Sin, 'Sin'), (_fmath.Cos, 'Cos'),
                  (_fmath.Tan, 'Tan'), (_fmath.Abs, 'Abs'), (_nn.Sigmoid, 'Sigmoid'),
                  (_nn.ReLU, 'Relu')):
    register(_cls, _op)(_unary(_op))


def _binary(op):
    def convert(b, f, ins, outs):
        b.one(op, ins, outs[0])
    return convert


for _cls, _op in ((_ops.Add, 'Add'), (_ops.Sub, 'Sub'), (_ops.Mul, 'Mul'), (_ops.Div, 'Div'),
                  (_ops.PowVariable, 'Pow'), (_fmath.Maximum, 'Max'), (_fmath.Minimum, 'Min')):
    register(_cls, _op)(_binary(_op))


def _with_constant(op, constant_first):
    def convert(b, f, ins, outs):
        dtype = _out_dtype(f)
        c = b.const(b.same_const('c'), dtype, 'c')
        b.one(op, [c, ins[0]] if constant_first else [ins[0], c], outs[0])
    return convert


for _cls, _op, _first in ((_ops.AddConstant, 'Add', False), (_ops.SubConstant, 'Sub', False),
                          (_ops.RSubConstant, 'Sub', True), (_ops.MulConstant, 'Mul', False),
                          (_ops.DivConstant, 'Div', False), (_ops.RDivConstant, 'Div', True),
                          (_ops.Pow, 'Pow', False), (_ops.RPow, 'Pow', True)):
    register(_cls, f'{_op} (constant {"first" if _first else "second"})')(_with_constant(_op, _first))


@register(_shape.MatMul, 'MatMul')
def _matmul(b, f, ins, outs):
    b.one('MatMul', ins, outs[0])


@register(_fmath.Linear, 'Gemm (x of more axes: Reshape to 2-D first and back, as dezero_kr does)')
def _linear(b, f, ins, outs):
    x = f.inputs[0]
    if x.ndim == 2:
        b.one('Gemm', ins, outs[0])
        return
    flat = b.one('Reshape', [ins[0], b.ints([-1, x.shape[-1]], 'shape')])  # (..., I) -> (rows, I)
    b.reshape(b.one('Gemm', [flat] + ins[1:]), b.out_dims(), outs[0])


@register(_fmath.Clip, 'Clip')
def _clip(b, f, ins, outs):
    dtype = _out_dtype(f)
    bounds = []
    for name in ('x_min', 'x_max'):
        c = getattr(f, name)
        if c is not None and np.ndim(c):
            raise b.error(f'has an array bound {name} of shape {np.shape(c)}',
                          'use scalar bounds, or F.maximum / F.minimum with the array')
        bounds.append('' if c is None else b.const(np.asarray(c, dtype=dtype), hint=name))
    b.one('Clip', [ins[0]] + bounds, outs[0])


@register(_fmath.Where, 'Where (condition constant)')
def _where_op(b, f, ins, outs):
    cond = b.const(np.asarray(b.same_const('condition'), dtype=bool), hint='condition')
    b.one('Where', [cond] + ins, outs[0])


@register(_nn.MaskedFill, 'Where (mask constant)')
def _masked_fill(b, f, ins, outs):
    dtype = _out_dtype(f)
    mask = b.const(np.asarray(b.same_const('mask'), dtype=bool), hint='mask')
    b.one('Where', [mask, b.const(np.asarray(f.value, dtype=dtype), hint='fill'), ins[0]], outs[0])


@register(_nn.LeakyReLU, 'LeakyRelu (float64: Where, Greater, Mul)')
def _leaky_relu(b, f, ins, outs):
    dtype = _out_dtype(f)
    if dtype == np.float32:
        b.one('LeakyRelu', ins, outs[0], alpha=float(f.slope))
        return
    # LeakyRelu's alpha is a float32 attribute: 0.2 would be rounded for float64 data
    positive = b.one('Greater', [ins[0], b.const(np.asarray(0, dtype), hint='zero')])
    scaled = b.one('Mul', [ins[0], b.const(np.asarray(f.slope, dtype), hint='slope')])
    b.one('Where', [positive, ins[0], scaled], outs[0])


@register(_nn.GELU, 'Mul, Add, Tanh (the tanh formula)')
def _gelu(b, f, ins, outs):
    # The order of dezero_kr's forward, so the rounding is the same:
    # u = ((x * x * a + 1) * x) * c;  y = (tanh(u) + 1) * x * 0.5
    dtype = _out_dtype(f)
    x = ins[0]
    u = b.one('Mul', [b.one('Mul', [x, x]), b.const(np.asarray(_act.GELU_A, dtype), hint='gelu_a')])
    u = b.one('Add', [u, b.const(np.asarray(1, dtype), hint='one')])
    u = b.one('Mul', [b.one('Mul', [u, x]), b.const(np.asarray(_act.GELU_C, dtype), hint='gelu_c')])
    t = b.one('Add', [b.one('Tanh', [u]), b.const(np.asarray(1, dtype), hint='one')])
    b.one('Mul', [b.one('Mul', [t, x]), b.const(np.asarray(0.5, dtype), hint='half')], outs[0])


@register(_nn.Softmax, 'Softmax')
def _softmax(b, f, ins, outs):
    _check_int_axis(b, f.axis, 'Softmax')
    b.one('Softmax', ins, outs[0], axis=int(f.axis))


@register(_nn.LogSoftmax, 'LogSoftmax')
def _log_softmax(b, f, ins, outs):
    _check_int_axis(b, f.axis, 'LogSoftmax')
    b.one('LogSoftmax', ins, outs[0], axis=int(f.axis))


def _check_int_axis(b, axis, op):
    if not isinstance(axis, (int, np.integer)):
        raise b.error(f'has axis={axis!r}; ONNX {op} takes one axis', f'use one int axis for {op}')


# =============================================================================
# Converters: shapes, indexing, reductions
# =============================================================================
@register(_shape.Reshape, 'Reshape')
def _reshape(b, f, ins, outs):
    b.reshape(ins[0], b.out_dims(), outs[0])


@register(_shape.Transpose, 'Transpose')
def _transpose(b, f, ins, outs):
    ndim = f.inputs[0].ndim
    axes = range(ndim)[::-1] if f.axes is None else [a % ndim for a in f.axes]
    b.one('Transpose', ins, outs[0], perm=[int(a) for a in axes])


@register(_shape.Sum, 'ReduceSum')
def _sum(b, f, ins, outs):
    b.reduce('ReduceSum', ins[0], _axes(f.axis, f.inputs[0].ndim), f.keepdims, outs[0])


@register(_shape.Max, 'ReduceMax')
def _max(b, f, ins, outs):
    b.reduce('ReduceMax', ins[0], _axes(f.axis, f.inputs[0].ndim), f.keepdims, outs[0])


@register(_shape.Min, 'ReduceMin')
def _min(b, f, ins, outs):
    b.reduce('ReduceMin', ins[0], _axes(f.axis, f.inputs[0].ndim), f.keepdims, outs[0])


def _axes(axis, ndim):
    if axis is None:
        return None
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return [int(a) % ndim for a in axes]


@register(_ops.SumTo, 'ReduceSum + Reshape')
def _sum_to(b, f, ins, outs):
    x_shape, shape = f.inputs[0].shape, f.shape
    lead = len(x_shape) - len(shape)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and x_shape[lead + i] != 1]
    summed = b.reduce('ReduceSum', ins[0], axes, True) if axes else ins[0]
    b.reshape(summed, b.out_dims(), outs[0])


@register(_ops.BroadcastTo, 'Expand')
def _broadcast_to(b, f, ins, outs):
    b.one('Expand', [ins[0], b.shape(b.out_dims())], outs[0])


@register(_fmath.Concat, 'Concat')
def _concat(b, f, ins, outs):
    b.one('Concat', ins, outs[0],
          axis=int(f.axis))


@register(_shape.GetItem, 'Slice + Reshape (basic index), Gather (an int array on one axis)')
def _get_item(b, f, ins, outs):
    items = f.slices if isinstance(f.slices, tuple) else (f.slices,)
    if _shape.is_basic_index(items):
        for f2, n2 in zip(b.f2s, b.batches[1:]):
            if repr(f2.slices) != repr(f.slices):
                items2 = f2.slices if isinstance(f2.slices, tuple) else (f2.slices,)
                raise b.error(f'has the index {_index_text(items)} for batch {b.trace.batch} but '
                              f'{_index_text(items2)} for batch {n2}: the forward computed it '
                              f'from the input', 'index with numbers that do not depend on the '
                              'batch, or export with dynamic_batch=False')
        _basic_index(b, f, ins, outs, items)
        return
    arrays = [i for i, s in enumerate(items) if isinstance(s, np.ndarray)]
    rest_full = all(isinstance(s, slice) and s == slice(None) for i, s in enumerate(items)
                    if i not in arrays)
    if len(arrays) == 1 and rest_full and items[arrays[0]].dtype.kind in 'iu':
        axis = arrays[0]
        b.one('Gather', [ins[0], b.indices(items[axis])], outs[0], axis=axis)
        return
    raise b.error(f'uses advanced indexing {_index_text(items)} (bool masks, several index arrays '
                  f'or lists), which has no ONNX mapping here',
                  'index with ints and slices (basic indexing), or with one integer array on one '
                  'axis and full slices elsewhere (ONNX Gather)')


def _index_text(items):
    return '[' + ', '.join(f'array{s.shape} {s.dtype}' if isinstance(s, np.ndarray) else repr(s)
                           for s in items) + ']'


def _basic_index(b, f, ins, outs, items):
    ndim = f.inputs[0].ndim
    n_real = sum(1 for s in items if s is not None and s is not Ellipsis)
    expanded = []
    for s in items:
        expanded.extend([slice(None)] * (ndim - n_real) if s is Ellipsis else [s])
    starts, ends, axes, steps, axis = [], [], [], [], 0
    for s in expanded:
        if s is None:
            continue
        start, end, step = _slice_bounds(s)
        if (start, end, step) != (0, INT64_MAX, 1):
            starts.append(start), ends.append(end), axes.append(axis), steps.append(step)
        axis += 1
    x = ins[0]
    if axes:
        x = b.one('Slice', [x, b.ints(starts, 'starts'), b.ints(ends, 'ends'), b.ints(axes, 'axes'),
                            b.ints(steps, 'steps')])
    if any(s is None or not isinstance(s, slice) for s in expanded):
        b.reshape(x, b.out_dims(), outs[0])  # ints drop an axis, None adds one
    else:
        b.one('Identity', [x], outs[0])


def _slice_bounds(s):
    """(start, end, step) of an int or a slice for ONNX Slice (NumPy's meaning kept for
    negative indices and steps, on any size of the axis)."""
    if not isinstance(s, slice):
        s = int(s)
        return s, (s + 1 if s != -1 else INT64_MAX), 1
    step = 1 if s.step is None else int(s.step)
    if step > 0:
        return (0 if s.start is None else int(s.start)), \
            (INT64_MAX if s.stop is None else int(s.stop)), step
    return (INT64_MAX if s.start is None else int(s.start)), \
        (INT64_MIN if s.stop is None else int(s.stop)), step


# =============================================================================
# Converters: normalisation
# =============================================================================
@register(_nn.LayerNorm, 'LayerNormalization (float64: the formula, as RMSNorm)')
def _layer_norm(b, f, ins, outs):
    x = f.inputs[0]
    dtype = _out_dtype(f)
    if dtype != np.float32:  # epsilon is a float32 attribute, and ORT's float64 kernel differs
        _normalize_formula(b, f, ins, outs)
        return
    scale = ins[1] if len(ins) > 1 else b.const(np.ones(x.shape[-1], dtype), hint='ones')
    b.one('LayerNormalization', [ins[0], scale] + ins[2:3], outs[0], axis=-1, epsilon=float(f.eps))


@register(_nn.RMSNorm, 'Mul, ReduceSum, Add, Sqrt, Reciprocal (the formula)')
def _normalize_formula(b, f, ins, outs):
    """dezero_kr's order: xc = x - sum(x) / n (LayerNorm only); r = 1 / sqrt(sum(xc * xc) * (1/n)
    + eps); y = xc * r (* gamma) (+ beta), the sums over the last axis."""
    x, dtype = f.inputs[0], _out_dtype(f)
    axes, inv_n = [x.ndim - 1], b.const(np.asarray(1 / x.shape[-1], dtype), hint='inv_n')
    xc = ins[0]
    if f.center:
        mu = b.one('Mul', [b.reduce('ReduceSum', xc, axes, True), inv_n])
        xc = b.one('Sub', [xc, mu])
    var = b.one('Mul', [b.reduce('ReduceSum', b.one('Mul', [xc, xc]), axes, True), inv_n])
    var = b.one('Add', [var, b.const(np.asarray(f.eps, dtype), hint='eps')])
    last = len(ins) - 1  # the step that writes the output: 0 (no gamma), 1 (gamma), 2 (beta)
    y = b.one('Mul', [xc, b.one('Reciprocal', [b.one('Sqrt', [var])])], outs[0] if last == 0 else None)
    for i, op in ((1, 'Mul'), (2, 'Add')):
        if last >= i:
            y = b.one(op, [y, ins[i]], outs[0] if last == i else None)


@register(_nn.BatchNorm, 'BatchNormalization (test mode; float64: the formula)')
def _batch_norm(b, f, ins, outs):
    if f.train:
        raise b.error('was recorded in training mode (it normalises with the batch statistics)',
                      'export runs the model under test_mode(); call F.batch_norm without '
                      'forcing training')
    dtype = _out_dtype(f)
    mean = b.const(f.mean, dtype, 'mean')
    var = b.const(f.var, dtype, 'var')
    if dtype == np.float32:
        b.one('BatchNormalization', ins + [mean, var], outs[0], epsilon=float(f.eps))
        return
    # epsilon is a float32 attribute: float64 data gets dezero_kr's formula, in its order,
    # y = (x - mean) * (1 / sqrt(var + eps)) * gamma + beta, the statistics shaped (1, C, 1, 1)
    pshape = b.ints(f.pshape, 'pshape')
    mean, var, gamma, beta = (b.one('Reshape', [n, pshape]) for n in (mean, var, ins[1], ins[2]))
    var = b.one('Add', [var, b.const(np.asarray(f.eps, dtype), hint='eps')])
    xhat = b.one('Mul', [b.one('Sub', [ins[0], mean]), b.one('Reciprocal', [b.one('Sqrt', [var])])])
    b.one('Add', [b.one('Mul', [xhat, gamma]), beta], outs[0])


# =============================================================================
# Converters: convolution and pooling
# =============================================================================
def _pads(pad):
    return [int(pad[0]), int(pad[1]), int(pad[0]), int(pad[1])]


@register(_conv.Conv2d, 'Conv')
def _conv2d(b, f, ins, outs):
    b.one('Conv', ins, outs[0], strides=list(f.stride), pads=_pads(f.pad))


@register(_conv.Deconv2d, 'ConvTranspose')
def _deconv2d(b, f, ins, outs):
    (H, W), (KH, KW) = f.inputs[0].shape[2:], f.inputs[1].shape[2:]
    out_hw = f.outputs[0]().shape[2:]
    natural = [s * (n - 1) + k - 2 * p for s, n, k, p in zip(f.stride, (H, W), (KH, KW), f.pad)]
    extra = [int(o - n) for o, n in zip(out_hw, natural)]
    b.one('ConvTranspose', ins, outs[0], strides=list(f.stride), pads=_pads(f.pad),
          output_padding=extra)


@register(_conv.Pooling, 'MaxPool (Pad with zeros first when pad > 0)')
def _max_pool(b, f, ins, outs):
    x = ins[0]
    if any(f.pad):  # dezero_kr pads with zeros (DeZero's definition); MaxPool's padding is -inf
        ph, pw = f.pad
        x = b.one('Pad', [x, b.ints([0, 0, ph, pw, 0, 0, ph, pw], 'pads')], mode='constant')
    b.one('MaxPool', [x], outs[0], kernel_shape=list(f.kernel_size), strides=list(f.stride))


@register(_conv.AveragePooling, 'AveragePool (count_include_pad=1)')
def _average_pool(b, f, ins, outs):
    b.one('AveragePool', ins, outs[0], kernel_shape=list(f.kernel_size), strides=list(f.stride),
          pads=_pads(f.pad), count_include_pad=1)


# =============================================================================
# Converters: attention and embeddings
# =============================================================================
def _attention(b, q, k, v, hidden, scale, dtype, out=None):
    """softmax(q k^T * scale, -inf where hidden) v, in dezero_kr's order (``_attend``)."""
    ndim = 4
    kt = b.one('Transpose', [k], perm=list(range(ndim - 2)) + [ndim - 1, ndim - 2])
    s = b.one('Mul', [b.one('MatMul', [q, kt]), b.const(np.asarray(scale, dtype), hint='scale')])
    if hidden is not None:
        s = b.one('Where', [b.const(np.asarray(hidden, bool), hint='causal_mask'),
                            b.const(np.asarray(-np.inf, dtype), hint='minus_inf'), s])
    return b.one('MatMul', [b.one('Softmax', [s], axis=-1), v], out)


@register(_nn.MultiHeadAttention, 'Reshape, Transpose, Gather, MatMul, Mul, Where, Softmax')
def _multi_head_attention(b, f, ins, outs):
    B, T, C3 = f.inputs[0].shape
    H = f.n_head
    D = C3 // (3 * H)
    heads = b.one('Reshape', [ins[0], b.ints([0, 0, 3, H, D], 'shape')])  # 0: keep B (and T)
    heads = b.one('Transpose', [heads], perm=[2, 0, 3, 1, 4])              # (3, B, H, T, D)
    q, k, v = (b.one('Gather', [heads, b.ints(i, 'index')], axis=0) for i in (0, 1, 2))
    y = _attention(b, q, k, v, b.same_const('hidden'), f.scale, _out_dtype(f))
    y = b.one('Transpose', [y], perm=[0, 2, 1, 3])
    b.one('Reshape', [y, b.ints([0, 0, C3 // 3], 'shape')], outs[0])


@register(_nn.ScaledDotProductAttention, 'Transpose, MatMul, Mul, Where, Softmax')
def _sdpa(b, f, ins, outs):
    if f.inputs[0].ndim != 4 or f.inputs[1].ndim != 4:
        raise b.error(f'has q {f.inputs[0].shape}, k {f.inputs[1].shape}; the export takes 4-D '
                      f'(B, H, T, D)', 'reshape q, k, v to (B, H, T, D) first')
    _attention(b, ins[0], ins[1], ins[2], b.same_const('hidden'), f.scale, _out_dtype(f), outs[0])


@register(_attn.TokenPositionEmbedding, 'Gather + Slice + Add')
def _token_position(b, f, ins, outs):
    T = f.ids.shape[1]
    tok = b.one('Gather', [ins[0], b.indices(f.ids)], axis=0)
    pos = b.one('Slice', [ins[1], b.ints([0], 'starts'), b.ints([T], 'ends'), b.ints([0], 'axes')])
    b.one('Add', [tok, pos], outs[0])
