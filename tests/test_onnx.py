"""dezero_kr.onnx.export, checked by ONNX Runtime: one test per Function of the mapping and per model.

Every exported file passes ``onnx.checker.check_model(full_check=True)``, and ONNX Runtime's
outputs equal dezero_kr's (float32: rtol 1e-5, atol 1e-6; float64 rtol 1e-12) on fresh random
inputs of the example's batch size and of another one (``dynamic_batch=True``).  The absolute
tolerance is taken relative to the largest output magnitude (``atol * max(1, max|y|)``): ONNX
Runtime sums in another order, so an output that is a near-cancelling sum of terms of size 5
differs by a few float32 ulps of 5, not of itself.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import dezero_kr.functions as F
import dezero_kr.layers as L
import dezero_kr.onnx as dx
import dezero_kr
from dezero_kr import Parameter, Variable, models, no_grad
from dezero_kr.transformer import CausalSelfAttention, GPT, MICROGPT

from _subproc import ROOT, python_env

TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


EXERCISED = set()  # the Function classes the tests of this file exported (checked at the end)


def reference(model, inputs):
    """dezero_kr's outputs (a list of arrays) under test_mode."""
    with dezero_kr.test_mode(), no_grad():
        out = model(*[Variable(a) for a in inputs])
    return [y.data for y in (out if isinstance(out, (tuple, list)) else [out])]


def run_ort(path, inputs):
    session = ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    return session.run(None, {i.name: a for i, a in zip(session.get_inputs(), inputs)})


def check(tmp_path, model, make, batch=2, other=5, dtype=np.float32, ops=None, opset=None, tol=None,
          **kw):
    """Export ``model`` on ``make(batch)``; compare ORT with dezero_kr on fresh ``make(batch)``
    and ``make(other)``; return the ModelProto.  ``ops``: ONNX op types the file must hold."""
    path = tmp_path / 'model.onnx'
    proto = dx.export(model, make(batch), path, opset=opset, **kw)
    EXERCISED.update(type(f) for f in dx.tracing.trace_model(model, make(batch)).funcs)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    tol = tol or TOL[dtype]
    sizes = (batch, other) if kw.get('dynamic_batch', True) else (batch,)
    for n in sizes:
        inputs = make(n)
        want = reference(model, inputs)
        got = run_ort(path, inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            scale = max(1.0, float(np.abs(w).max())) if w.size else 1.0
            np.testing.assert_allclose(g, w, rtol=tol['rtol'], atol=tol['atol'] * scale)
    if ops is not None:
        used = {n.op_type for n in proto.graph.node}
        assert set(ops) <= used, (ops, used)
    return proto


def randn(*shape, dtype=np.float32, seed=None):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(dtype)


def maker(*shapes, dtype=np.float32, positive=False):
    """``make(n)``: fresh random arrays of ``shapes`` with the batch ``n`` as axis 0."""
    def make(n):
        arrays = [randn(n, *s, dtype=dtype) for s in shapes]
        return [np.abs(a) + 0.5 for a in arrays] if positive else arrays
    return make


# =============================================================================
# Arithmetic and @
# =============================================================================
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_arithmetic_with_broadcasting(tmp_path, dtype):
    w = Variable(randn(3, dtype=dtype, seed=1))

    def f(x, y):
        return (x + y) * w - y / (x * x + 1) + (-x) ** 2 - (x * y) ** y

    check(tmp_path, f, maker((3,), (3,), dtype=dtype, positive=True), dtype=dtype,
          ops={'Add', 'Sub', 'Mul', 'Div', 'Neg', 'Pow'})


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_arithmetic_with_constants(tmp_path, dtype):
    c = randn(1, 4, dtype=dtype, seed=2)

    def f(x):
        return (2.5 - x) * c + x / 3 + 3 / x + x ** 3 + 2 ** x - 1.5 + np.float64(2) * x

    check(tmp_path, f, maker((4,), dtype=dtype, positive=True), dtype=dtype)


def test_mixed_dtypes_are_cast_as_numpy_promotes(tmp_path):
    c = randn(4, dtype=np.float64, seed=3)  # float32 x * float64 array -> float64, as NumPy

    def f(x):
        return x * c

    proto = check(tmp_path, f, maker((4,)), dtype=np.float64, tol=TOL[np.float32], ops={'Cast'})
    assert proto.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE


def test_layers_on_inputs_of_another_dtype_compute_as_numpy_promotes(tmp_path):
    np.random.seed(13)
    lin = L.Linear(4, in_size=3)               # float32 weights
    ln = L.LayerNorm(4, dtype=np.float64)      # float64 gain and bias
    ln.beta.data[...] = randn(4, dtype=np.float64, seed=1)

    def f(x32, x64):
        return lin(x64) + ln(lin(x32)), F.concat([x32, x64], axis=1)

    def make(n):
        return [randn(n, 3), randn(n, 3, dtype=np.float64)]

    # ln normalises float32 h in float32, then multiplies by float64 gamma; the file does it all
    # in float64 after a Cast: equal to float32 precision
    proto = check(tmp_path, f, make, dtype=np.float64, tol=TOL[np.float32], ops={'Cast', 'Gemm'})
    assert [o.type.tensor_type.elem_type for o in proto.graph.output] == [onnx.TensorProto.DOUBLE] * 2


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_matmul_batched_and_2d(tmp_path, dtype):
    W = Variable(randn(4, 6, dtype=dtype, seed=4))

    def f(x, y):
        return (x @ W) @ F.transpose(y, (0, 2, 1))

    check(tmp_path, f, maker((3, 4), (5, 6), dtype=dtype), dtype=dtype, ops={'MatMul'})


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_linear_layer_2d_and_3d(tmp_path, dtype):
    np.random.seed(0)
    l2 = L.Linear(6, in_size=4, dtype=dtype)
    l2.b.data[...] = randn(6, dtype=dtype, seed=5)
    l3 = L.Linear(3, in_size=6, dtype=dtype, nobias=True)
    proto = check(tmp_path, lambda x: l2(x), maker((4,), dtype=dtype), dtype=dtype, ops={'Gemm'})
    assert [i.name for i in proto.graph.initializer] == ['W', 'b']
    check(tmp_path, lambda x: l3(l2(x)), maker((7, 4), dtype=dtype), dtype=dtype, ops={'Gemm', 'Reshape'})


# =============================================================================
# Shapes, indexing, reductions
# =============================================================================
def test_reshape_that_hard_codes_the_batch_is_written_batch_agnostic(tmp_path):
    def f(x):
        B = x.shape[0]
        h = F.reshape(x, (B, 2, 6))
        h = F.reshape(h, (B * 2, 6))   # the batch inside a product
        return F.reshape(h, (B, -1))

    proto = check(tmp_path, f, maker((3, 4)), ops={'Reshape'})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == 'batch'


# Python arithmetic on the batch size: export runs batches N, N + 1 and 2N + 2, and every dimension
# and index must be the same k * batch + c at all three, else the file would hold one run's number
# (issue 34: for batch 8 ONNX Runtime returned 2 rows where the model returned 4).
BATCH_ARITHMETIC = {
    'slice to half the batch': lambda x: x[:x.shape[0] // 2] * 2,
    'slice to half the batch, rounded up': lambda x: x[:(x.shape[0] + 1) // 2] * 2,
    'reshape to half the batch': lambda x: F.reshape(x, (x.shape[0] // 2, -1)),
    'reshape to a third of the batch': lambda x: F.reshape(x, (x.shape[0] // 3, -1)),
    'a sum over half the batch': lambda x: F.sum(x[:x.shape[0] // 2], axis=0),
}


@pytest.mark.parametrize('name', sorted(BATCH_ARITHMETIC))
@pytest.mark.parametrize('batch', range(1, 9))
def test_batch_arithmetic_gives_a_correct_file_or_an_error_never_a_wrong_one(tmp_path, name, batch):
    forward = BATCH_ARITHMETIC[name]
    path = tmp_path / 'm.onnx'
    try:
        reference(forward, [randn(batch, 6)])
    except ValueError:  # the forward itself fails on this batch (a reshape to 0 rows)
        return
    try:
        dx.export(forward, randn(batch, 6, seed=batch), path)
    except dx.ExportError as e:
        assert 'batch' in str(e)
        assert_no_file(tmp_path)
        return
    for n in (12, 24, 36):  # batch sizes export never ran: multiples of 2 and 3
        x = randn(n, 6, seed=n)
        np.testing.assert_array_equal(run_ort(path, [x])[0], reference(forward, [x])[0])


def test_a_slice_computed_from_the_batch_is_refused_naming_the_index(tmp_path):
    with pytest.raises(dx.ExportError) as e:
        dx.export(BATCH_ARITHMETIC['slice to half the batch'], randn(4, 6), tmp_path / 'm.onnx')
    assert str(e.value) == (
        'export: GetItem (dezero_kr.operators_shape) has the index [slice(None, 2, None)] for batch 4 but '
        '[slice(None, 5, None)] for batch 10: the forward computed it from the input.\n'
        '  where: GetItem((4, 6) float32) -> (2, 6) float32 -> MulConstant -> (2, 6) float32 = '
        'model output #0\n'
        '  what to do: index with numbers that do not depend on the batch, or export with '
        'dynamic_batch=False')
    assert_no_file(tmp_path)


def test_a_reshape_to_a_dimension_computed_from_the_batch_is_refused_naming_the_values(tmp_path):
    with pytest.raises(dx.ExportError) as e:
        dx.export(BATCH_ARITHMETIC['reshape to half the batch'], randn(4, 6), tmp_path / 'm.onnx')
    assert str(e.value) == (
        'export: Reshape (dezero_kr.operators_shape) has an output of shape (2, 12) for batch 4, '
        '(2, 15) for batch 5 and (5, 12) for batch 10: axis 0 (2, 2, 5) is not k * batch + c, so '
        'the forward computed it from the batch size by Python arithmetic (x.shape[0] // 2) that '
        'the file cannot repeat for another batch.\n'
        '  where: Reshape((4, 6) float32) -> (2, 12) float32 = model output #0\n'
        '  what to do: keep the batch on an axis of its own (x.shape[0] or -1 in a reshape), or '
        'export with dynamic_batch=False to fix the batch')
    assert_no_file(tmp_path)


def test_transpose(tmp_path):
    check(tmp_path, lambda x: F.transpose(x, (0, 2, 1)) + x.T.T.transpose(0, 2, 1),
          maker((3, 4)), ops={'Transpose'})


@pytest.mark.parametrize('index', [
    (slice(None), 1), (Ellipsis, slice(1, None, 2)), (slice(None), None, slice(None, -1)),
    (slice(None), slice(None, None, -1), 2), -1, (slice(1, None),), (0, Ellipsis, None),
    slice(None, 2), slice(-2, None)])  # fixed rows of the batch: the same for any batch >= 2
def test_get_item_basic_slicing(tmp_path, index):
    check(tmp_path, lambda x: x[index] * 2, maker((3, 4)), ops={'Slice'})


def test_get_item_int_array_on_one_axis_is_gather(tmp_path):
    idx = np.array([2, 0, 2])
    check(tmp_path, lambda x: F.get_item(x, (slice(None), idx)) + 1, maker((3, 4)), ops={'Gather'})


def test_concat_sum_mean_max_min(tmp_path):
    def f(x, y):
        c = F.concat([x, y, x], axis=1)
        return (F.sum(c, axis=1, keepdims=True) + F.mean(c, axis=(1, 2), keepdims=True)
                + F.max(c, axis=2, keepdims=True) - F.min(c, axis=1, keepdims=True)
                + F.sum(c) + F.max(c))

    check(tmp_path, f, maker((3, 4), (2, 4)),
          ops={'Concat', 'ReduceSum', 'ReduceMax', 'ReduceMin'})


@pytest.mark.parametrize('opset', [dx.MIN_OPSET, dx.MAX_OPSET])
def test_reductions_in_each_opset(tmp_path, opset):
    check(tmp_path, lambda x: F.max(x, axis=1) + F.sum(x, axis=1) + F.min(x, axis=1),
          maker((3,)), opset=opset, ops={'ReduceMax', 'ReduceSum', 'ReduceMin'})


def test_broadcast_to_and_sum_to(tmp_path):
    def f(x):
        B = x.shape[0]
        y = F.broadcast_to(F.reshape(x, (B, 1, 4)), (B, 3, 4))
        return F.sum_to(y, (B, 1, 4)) + F.sum_to(y, (3, 4))

    check(tmp_path, f, maker((4,)), ops={'Expand', 'ReduceSum'})


# =============================================================================
# Elementwise functions and activations
# =============================================================================
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('name, op', [
    ('exp', 'Exp'), ('log', 'Log'), ('sqrt', 'Sqrt'), ('tanh', 'Tanh'), ('sigmoid', 'Sigmoid'),
    ('relu', 'Relu'), ('leaky_relu', 'LeakyRelu'), ('gelu', 'Tanh'), ('softmax', 'Softmax'),
    ('log_softmax', 'LogSoftmax'), ('sin', 'Sin'), ('cos', 'Cos'), ('abs', 'Abs')])
def test_elementwise_and_activations(tmp_path, name, op, dtype):
    fn = getattr(F, name)
    positive = name in ('log', 'sqrt')

    def f(x):
        return fn(x if positive else x * 3)

    if name == 'leaky_relu' and dtype == np.float64:
        op = 'Where'  # LeakyRelu's alpha is a float32 attribute
    check(tmp_path, f, maker((5,), dtype=dtype, positive=positive), dtype=dtype, ops={op})


def test_softmax_on_another_axis_and_clip_maximum_where_masked_fill(tmp_path):
    cond = randn(3, 4, seed=6) > 0

    def f(x):
        h = F.softmax(x, axis=-1) + F.log_softmax(x, axis=1)
        h = F.clip(h, -0.5, 0.7) + F.maximum(x, 0.2) - F.minimum(x, h)
        return F.where(cond, h, x) + F.masked_fill(x, cond, -2.0)

    check(tmp_path, f, maker((3, 4)), ops={'Clip', 'Max', 'Min', 'Where', 'Softmax'})


def test_tan(tmp_path):
    check(tmp_path, lambda x: F.tan(x * 0.5), maker((4,)), ops={'Tan'})


# =============================================================================
# Convolution, pooling, normalisation, dropout
# =============================================================================
@pytest.mark.parametrize('stride, pad', [(1, 0), (2, 1), ((1, 2), (2, 0))])
def test_conv2d(tmp_path, stride, pad):
    np.random.seed(1)
    conv = L.Conv2d(4, kernel_size=3, stride=stride, pad=pad, in_channels=2)
    conv.b.data[...] = randn(4, seed=7)
    proto = check(tmp_path, conv, maker((2, 7, 6)), ops={'Conv'})
    assert [i.name for i in proto.graph.initializer] == ['W', 'b']


@pytest.mark.parametrize('stride, pad, outsize', [(1, 0, None), (2, 1, None), (2, 1, (8, 8))])
def test_deconv2d(tmp_path, stride, pad, outsize):
    W = Variable(randn(2, 3, 3, 3, seed=8))
    bias = Variable(randn(3, seed=9))

    def f(x):
        return F.deconv2d(x, W, bias, stride=stride, pad=pad, outsize=outsize)

    check(tmp_path, f, maker((2, 4, 4)), ops={'ConvTranspose'})


@pytest.mark.parametrize('kernel, stride, pad', [(2, 2, 0), (3, 2, 1), (3, 1, 1)])
def test_max_and_average_pooling(tmp_path, kernel, stride, pad):
    def f(x):
        # x - 2: mostly negative, so a max over zero padding differs from one over -inf padding
        return F.pooling(x - 2, kernel, stride, pad) + F.average_pooling(x, kernel, stride, pad)

    check(tmp_path, f, maker((3, 6, 6)), ops={'MaxPool', 'AveragePool'})


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
@pytest.mark.parametrize('shape', [(3,), (3, 4, 4)])
def test_batch_norm_in_test_mode(tmp_path, shape, dtype):
    bn = L.BatchNorm()
    with dezero_kr.test_mode():
        bn(Variable(randn(2, *shape, dtype=dtype)))  # sizes the parameters
    for p, seed in ((bn.gamma, 1), (bn.beta, 2), (bn.avg_mean, 3)):
        p.data[...] = randn(shape[0], seed=seed, dtype=dtype)
    bn.avg_var.data[...] = np.abs(randn(shape[0], seed=4, dtype=dtype)) + 0.1
    ops = {'BatchNormalization'} if dtype == np.float32 else {'Sqrt', 'Reciprocal'}
    proto = check(tmp_path, bn, maker(shape, dtype=dtype), dtype=dtype, ops=ops)
    assert {'gamma', 'beta', 'avg_mean', 'avg_var'} <= {i.name for i in proto.graph.initializer}


def test_max_pooling_in_float64(tmp_path):
    # ONNX Runtime's CPU has double MaxPool (not Conv, ConvTranspose, AveragePool: docs/onnx.md)
    check(tmp_path, lambda x: F.pooling(x - 2, 3, 2, 1), maker((2, 6, 6), dtype=np.float64),
          dtype=np.float64, ops={'MaxPool', 'Pad'})


def test_dropout_in_test_mode_is_the_identity(tmp_path):
    np.random.seed(2)
    model = models.MLP((6, 3))

    def f(x):
        return model(F.dropout(x, 0.5))

    proto = check(tmp_path, f, maker((4,)))
    assert 'Dropout' not in {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_layer_norm_and_rms_norm(tmp_path, dtype):
    ln = L.LayerNorm(5, dtype=dtype)
    rms = L.RMSNorm(5, dtype=dtype)
    ln.gamma.data[...] = randn(5, dtype=dtype, seed=1)
    ln.beta.data[...] = randn(5, dtype=dtype, seed=2)
    rms.gamma.data[...] = randn(5, dtype=dtype, seed=3)

    def f(x):
        return ln(x) + rms(x) * 2 + F.layer_norm(x) - F.rms_norm(x * 3)

    ops = {'LayerNormalization', 'Sqrt'} if dtype == np.float32 else {'Sqrt', 'Reciprocal'}
    check(tmp_path, f, maker((4, 5), dtype=dtype), dtype=dtype, ops=ops)


# =============================================================================
# Embeddings, attention, recurrent cells
# =============================================================================
def ids_maker(vocab, T, seed=None):
    def make(n):
        return [np.random.default_rng(seed).integers(0, vocab, size=(n, T))]
    return make


def test_embed_id_takes_the_ids_as_an_input(tmp_path):
    np.random.seed(3)
    emb = L.EmbedID(11, 4)
    proto = check(tmp_path, emb, ids_maker(11, 6), ops={'Gather'})
    assert proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert [i.name for i in proto.graph.initializer] == ['W']


def test_causal_self_attention(tmp_path):
    np.random.seed(4)
    attn = CausalSelfAttention(8, 2)
    for p in attn.params():
        p.data[...] = randn(*p.shape, seed=p.size) * 0.5
    check(tmp_path, attn, maker((5, 8)), ops={'Softmax', 'Where', 'MatMul'})


def test_scaled_dot_product_attention_with_mask(tmp_path):
    mask = randn(4, 4, seed=10) > 0.5
    np.fill_diagonal(mask, False)

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, mask=mask) + \
            F.scaled_dot_product_attention(q, k, v, causal=True)

    check(tmp_path, f, maker((2, 4, 3), (2, 4, 3), (2, 4, 3)), ops={'Softmax'})


def test_rnn_unrolled_over_the_example_sequence(tmp_path):
    np.random.seed(5)
    rnn = L.RNN(6, in_size=3)
    rnn.x2h.b.data[...] = randn(6, seed=1)

    def f(xs):
        rnn.reset_state()
        return F.concat([rnn(xs[:, t]) for t in range(xs.shape[1])], axis=1)

    check(tmp_path, f, maker((4, 3)), ops={'Tanh', 'Gemm'})


def test_lstm_unrolled_over_the_example_sequence(tmp_path):
    np.random.seed(6)
    lstm = L.LSTM(5, in_size=3)
    head = L.Linear(2, in_size=5)

    def f(xs):
        lstm.reset_state()
        for t in range(xs.shape[1]):
            h = lstm(xs[:, t])
        return head(h)

    proto = check(tmp_path, f, maker((4, 3)), ops={'Sigmoid', 'Tanh'})
    assert 'x2f/W' not in {i.name for i in proto.graph.initializer}  # a function: no paths


# =============================================================================
# Whole models
# =============================================================================
sys.path.insert(0, str(ROOT / 'examples'))
from digits_cnn import DigitsCNN  # noqa: E402
from digits_mlp import DigitsMLP  # noqa: E402


def test_digits_mlp(tmp_path):
    np.random.seed(7)
    model = DigitsMLP(32, 0.3)
    model(Variable(randn(1, 64)))  # creates the lazy weights
    proto = check(tmp_path, model, maker((64,)), ops={'Gemm', 'Relu'})
    assert [i.name for i in proto.graph.initializer] == ['l1/W', 'l1/b', 'l2/W', 'l2/b', 'l3/W', 'l3/b']


def test_digits_cnn(tmp_path):
    np.random.seed(8)
    model = DigitsCNN(0.3)
    model(Variable(randn(1, 1, 8, 8)))
    for p in model.params():
        p.data[...] = randn(*p.shape, seed=p.size) * 0.3
    proto = check(tmp_path, model, maker((1, 8, 8)), ops={'Conv', 'MaxPool', 'Reshape', 'Gemm'})
    names = [i.name for i in proto.graph.initializer]
    assert names[:4] == ['conv1/W', 'conv1/b', 'conv2/W', 'conv2/b']


@pytest.mark.slow
def test_vgg16_at_32x32(tmp_path):
    np.random.seed(9)
    model = models.VGG16()
    check(tmp_path, model, maker((3, 32, 32)), batch=1, other=2, ops={'Conv', 'MaxPool', 'Gemm'})


@pytest.mark.slow
def test_resnet50_at_32x32(tmp_path):
    np.random.seed(10)
    model = models.ResNet(50)
    with dezero_kr.test_mode():
        model(Variable(randn(1, 3, 32, 32)))  # sizes the batch norms
    for path, p in model.named_params():
        if path.endswith('avg_var'):
            p.data[...] = np.abs(randn(*p.shape, seed=p.size)) + 0.5
        elif path.endswith(('avg_mean', 'beta')):
            p.data[...] = randn(*p.shape, seed=p.size) * 0.1
    proto = check(tmp_path, model, maker((3, 32, 32)), batch=1, other=2,
                  ops={'Conv', 'BatchNormalization', 'MaxPool', 'ReduceSum'})
    assert 'res2/a/bn1/avg_mean' in {i.name for i in proto.graph.initializer}


@pytest.mark.parametrize('options, opset', [({}, dx.DEFAULT_OPSET), ({}, dx.MAX_OPSET),
                                            (dict(MICROGPT, tie_weights=True), dx.DEFAULT_OPSET)])
def test_gpt(tmp_path, options, opset):
    np.random.seed(11)
    model = GPT(13, 8, 16, 2, 2, **options)
    for path, p in model.named_params():
        if p.ndim == 1:
            p.data[...] = randn(*p.shape, seed=p.size) * 0.1 + (1 if path.endswith('gamma') else 0)
        else:
            p.data *= 20  # GPT-2's std 0.02 gives near-constant logits: make them differ
    proto = check(tmp_path, model, ids_maker(13, 6), ops={'Gather', 'Softmax', 'MatMul'}, opset=opset)
    names = {i.name for i in proto.graph.initializer}
    assert {'wte/W', 'wpe/W', 'h0/attn/c_attn/W', 'h1/mlp/c_proj/W'} <= names


# =============================================================================
# Options
# =============================================================================
def test_an_output_name_is_never_taken_by_a_weight(tmp_path):
    np.random.seed(12)
    model = models.MLP((4, 3))
    proto = check(tmp_path, model, maker((5,)), output_names=['l0/W'])
    assert [o.name for o in proto.graph.output] == ['l0/W']
    assert 'l0/W_1' in {i.name for i in proto.graph.initializer}


def test_names_and_several_inputs_and_outputs(tmp_path):
    def f(x, y):
        return F.tanh(x) + y, x * 2, x

    proto = check(tmp_path, f, maker((3,), (3,)), input_names=['a', 'b'],
                  output_names=['sum', 'twice', 'same'])
    assert [i.name for i in proto.graph.input] == ['a', 'b']
    assert [o.name for o in proto.graph.output] == ['sum', 'twice', 'same']


class _Scaled(L.Layer):
    """A parameter named ``batch_size``, where the file also needs the run's batch size."""

    def __init__(self):
        super().__init__()
        self.batch_size = Parameter(randn(4, seed=14))

    def forward(self, x):
        return F.broadcast_to(F.reshape(x, (x.shape[0], 1, 4)), (x.shape[0], 3, 4)) * self.batch_size


def _spread(x):
    return F.broadcast_to(F.reshape(x, (x.shape[0], 1, 4)), (x.shape[0], 3, 4))


@pytest.mark.parametrize('model, kw', [
    (_Scaled(), {}), (_spread, dict(input_names=['batch_size'])),
    (_spread, dict(output_names=['batch_size'])),
    (_spread, dict(input_names=['batch_size_1'], output_names=['batch_size']))])
def test_a_name_batch_size_is_kept_and_the_file_loads(tmp_path, model, kw):
    proto = check(tmp_path, model, maker((4,)), ops={'Shape', 'Expand'}, **kw)  # ORT loads it
    names = [v.name for v in proto.graph.input] + [v.name for v in proto.graph.output]
    assert names == kw.get('input_names', ['input0']) + kw.get('output_names', ['output0'])
    if isinstance(model, _Scaled):  # the parameter keeps its path; the helper value moves aside
        assert [i.name for i in proto.graph.initializer if i.dims == [4]] == ['batch_size']
    shape_outputs = [n.output[0] for n in proto.graph.node if n.op_type == 'Shape']
    assert len(shape_outputs) == 1 and shape_outputs[0] not in names + ['batch_size']


@pytest.mark.parametrize('kw, name', [
    (dict(input_names=['x'], output_names=['x']), 'x'),
    (dict(input_names=['output0']), 'output0'),
    (dict(output_names=['input0']), 'input0')])
def test_an_output_named_like_an_input_is_refused(tmp_path, kw, name):
    with pytest.raises(ValueError) as e:
        dx.export(lambda x: x * 2, randn(2, 3), tmp_path / 'm.onnx', **kw)
    assert str(e.value) == (
        f"export: {name!r} is the name of an input and of an output; an ONNX file gives every value "
        f"one name: pass input_names= and output_names= that share none")
    assert_no_file(tmp_path)


def test_a_lone_surrogate_in_an_input_name_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError) as e:
        dx.export(lambda x: x * 2, randn(2, 3), tmp_path / 'm.onnx', input_names=['x\udc80'])
    assert str(e.value) == (
        "export: input_names[0] 'x\\udc80' cannot be written: ONNX stores names as UTF-8, and "
        "this one holds a lone surrogate (U+DC80, as bytes decoded with errors='surrogateescape' "
        "give); use a name of real characters")
    assert_no_file(tmp_path)


def test_a_lone_surrogate_in_a_layer_name_is_refused_naming_the_parameter(tmp_path):
    class Odd(L.Layer):
        def __init__(self):
            super().__init__()
            setattr(self, 'l\udc80', L.Linear(2, in_size=3))  # a name from os.listdir, say

        def forward(self, x):
            return getattr(self, 'l\udc80')(x)

    with pytest.raises(dx.ExportError) as e:
        dx.export(Odd(), randn(2, 3), tmp_path / 'm.onnx')
    assert str(e.value) == (
        "export: the parameter path 'l\\udc80/W' cannot be written: ONNX stores names as UTF-8, "
        "and this one holds a lone surrogate (U+DC80, as bytes decoded with "
        "errors='surrogateescape' give); rename the layer attribute")
    assert_no_file(tmp_path)


def test_fixed_batch(tmp_path):
    proto = check(tmp_path, lambda x: F.reshape(x, (2, -1)) * 2, maker((3, 4)), dynamic_batch=False)
    assert [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == [2, 3, 4]


def test_export_returns_the_model_it_writes(tmp_path):
    path = tmp_path / 'm.onnx'
    proto = dx.export(lambda x: x * 2, randn(2, 3), path)
    assert onnx.load(str(path)) == proto
    assert proto.opset_import[0].version == dx.DEFAULT_OPSET


# =============================================================================
# Bad input
# =============================================================================
def assert_no_file(folder):
    assert os.listdir(folder) == []


def test_an_op_without_mapping_names_the_function_where_it_sits_and_what_to_do(tmp_path):
    t = np.array([1, 0])

    def f(x):
        return F.softmax_cross_entropy(F.tanh(x), t)

    with pytest.raises(dx.ExportError) as e:
        dx.export(f, randn(2, 3), tmp_path / 'm.onnx', dynamic_batch=False)
    msg = str(e.value)
    assert 'SoftmaxCrossEntropy' in msg and 'no ONNX mapping' in msg
    assert '(2, 3) float32' in msg and 'model output #0' in msg
    assert 'what to do' in msg and 'register' in msg
    assert_no_file(tmp_path)


def test_a_failed_export_leaves_an_old_file_untouched(tmp_path):
    path = tmp_path / 'm.onnx'
    path.write_bytes(b'old')
    with pytest.raises(dx.ExportError):
        dx.export(lambda x: F.softmax_cross_entropy(x, np.array([0, 1])), randn(2, 3), path,
                  dynamic_batch=False)
    assert path.read_bytes() == b'old'
    assert os.listdir(tmp_path) == ['m.onnx']


def test_an_output_computed_outside_the_graph_is_refused(tmp_path):
    def f(x):
        return F.exp(Variable(x.data * 2))  # .data: the graph never sees x

    with pytest.raises(dx.ExportError, match="output 'output0' does not depend on any input"):
        dx.export(f, randn(2, 3), tmp_path / 'm.onnx', dynamic_batch=False)
    assert_no_file(tmp_path)


def test_an_input_read_outside_the_graph_is_refused(tmp_path):
    def f(x, y):
        return x * float(y.data.sum())

    with pytest.raises(dx.ExportError, match="input 'input1' is not used"):
        dx.export(f, [randn(2, 3), randn(2, 3)], tmp_path / 'm.onnx', dynamic_batch=False)


@pytest.mark.parametrize('forward', [
    lambda x: x * float(x.shape[0]),                      # the batch size as a Python number
    lambda x: x + Variable(np.ones_like(x.data)),         # a constant shaped like the input
    lambda x: x - float(x.data.mean()),                   # a value read from the data
    lambda x: x[:x.shape[0] // 2 + 1],                    # an index computed from the batch
    lambda x: F.concat([x[i] for i in range(len(x))], 0), # a Python loop over the rows
])
def test_a_forward_that_depends_on_values_the_export_cannot_see_is_refused(tmp_path, forward):
    with pytest.raises(dx.ExportError, match='batch'):
        dx.export(forward, randn(3, 4), tmp_path / 'm.onnx')
    assert_no_file(tmp_path)


def _lstm_without_reset():
    np.random.seed(15)
    lstm = L.LSTM(3, in_size=2)

    def f(xs):  # no lstm.reset_state(): the second run starts from the first run's state
        for t in range(xs.shape[1]):
            h = lstm(xs[:, t])
        return h
    return f


def test_a_model_that_fails_on_the_other_batch_size_is_explained(tmp_path):
    with pytest.raises(dx.ExportError) as e:
        dx.export(_lstm_without_reset(), randn(2, 4, 2), tmp_path / 'm.onnx')
    assert str(e.value) == (
        'export: the model ran on the example batch of 2 but raised ValueError on batch 3, one of '
        'the runs with other batch sizes (3, 6) that find which axes are the batch '
        '(dynamic_batch=True): Add.forward failed for input shapes [(3, 3), (2, 3)]: operands could '
        'not be broadcast together with shapes (3,3) (2,3) \n'
        '  what to do: a layer that keeps a state between calls (L.RNN, L.LSTM) must start the '
        'forward with reset_state(); a forward that runs on one batch size only can be exported '
        'with dynamic_batch=False')
    assert isinstance(e.value.__cause__, ValueError)
    assert_no_file(tmp_path)


def test_a_stateful_layer_without_reset_on_a_batch_of_one_is_refused_naming_reset_state(tmp_path):
    # batch 1: the old (1, 3) state broadcasts against the new rows, so nothing fails; the graph of
    # the second run holds the first run's too, and the comparison of the two refuses it
    with pytest.raises(dx.ExportError, match='changes with the batch size') as e:
        dx.export(_lstm_without_reset(), randn(1, 4, 2), tmp_path / 'm.onnx')
    assert 'the state a layer kept from the run before: call reset_state()' in str(e.value)
    assert_no_file(tmp_path)


def test_advanced_indexing_is_refused_clearly(tmp_path):
    mask = np.array([True, False, True])
    with pytest.raises(dx.ExportError, match='(?s)advanced indexing.*Gather'):
        dx.export(lambda x: x[:, mask] * 1, randn(2, 3), tmp_path / 'm.onnx')


@pytest.mark.parametrize('opset', [12, 16, dx.MAX_OPSET + 1, '17', True])
def test_an_unsupported_opset_is_refused_with_the_range(tmp_path, opset):
    with pytest.raises(ValueError, match=f'opsets {dx.MIN_OPSET} to {dx.MAX_OPSET}'):
        dx.export(lambda x: x * 2, randn(2, 3), tmp_path / 'm.onnx', opset=opset)
    assert_no_file(tmp_path)


def test_bad_names_and_inputs(tmp_path):
    with pytest.raises(ValueError, match='input_names'):
        dx.export(lambda x: x * 2, randn(2, 3), tmp_path / 'm.onnx', input_names=['a', 'b'])
    with pytest.raises(ValueError, match='output_names'):
        dx.export(lambda x: (x * 2, x * 3), randn(2, 3), tmp_path / 'm.onnx', output_names=['a', 'a'])
    with pytest.raises(TypeError, match='example input #0'):
        dx.export(lambda x: x * 2, [[1.0, 2.0]], tmp_path / 'm.onnx')
    with pytest.raises(ValueError, match='dynamic_batch=False'):
        dx.export(lambda x, y: x * y, [randn(2, 3), randn(3, 3)], tmp_path / 'm.onnx')
    assert_no_file(tmp_path)


# =============================================================================
# The optional dependency
# =============================================================================
def run_python(code):
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=python_env(), cwd=str(ROOT), timeout=120)


def test_import_dezero_kr_imports_no_onnx():
    proc = run_python('import sys, dezero_kr, dezero_kr.onnx\n'
                      'print(sorted(m for m in sys.modules if m.split(".")[0] in ("onnx", "onnxruntime")))')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == '[]'


def test_without_onnx_export_names_the_extra():
    proc = run_python('import sys; sys.modules["onnx"] = None\n'
                      'import numpy as np, dezero_kr\n'
                      'try:\n'
                      '    dezero_kr.onnx.export(lambda x: x * 2, np.ones((2, 3)), "never.onnx")\n'
                      'except ImportError as e:\n'
                      '    print(e)\n')
    assert proc.returncode == 0, proc.stderr
    assert 'pip install "dezero_kr[onnx]"' in proc.stdout
    assert not (ROOT / 'never.onnx').exists()


# =============================================================================
# The docs
# =============================================================================
def test_the_docs_mapping_table_is_the_registry():
    text = (ROOT / 'docs' / 'onnx.md').read_text(encoding='utf-8')
    start = text.index('<!-- mapping-table: dezero_kr.onnx.mapping_table() -->\n')
    body = text[text.index('\n', start) + 1:text.index('<!-- end mapping-table -->')]
    assert body == dx.mapping_table()


def test_the_committed_graph_picture_is_current():
    proc = subprocess.run([sys.executable, str(ROOT / 'docs' / 'make_onnx_graph.py'), '--check'],
                          capture_output=True, text=True, env=python_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zz_every_mapped_function_was_exported_and_run_by_a_test_above():
    """Runs last (file order): each Function class of the mapping went through ``check``."""
    missing = sorted(c.__name__ for c in dx.registry.CONVERTERS if c not in EXERCISED)
    assert EXERCISED, 'run the whole of tests/test_onnx.py: this test reads what the others exported'
    assert missing == []


def test_bench_onnx_runs():
    """``python -m bench onnx`` with tiny settings: a row per model, the same numbers both sides."""
    proc = subprocess.run([sys.executable, '-m', 'bench', 'onnx', '--iters', '1', '--repeat', '1',
                           '--batches', '3'], capture_output=True, text=True,
                          env={**python_env(), 'BENCH_MALLOC': 'default'},
                          cwd=str(ROOT), timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split('|') for line in proc.stdout.splitlines() if line.endswith('|')]
    rows = [r for r in rows if r[5].strip().endswith('x') and r[5].strip()[:-1].replace('.', '').isdigit()]
    assert [r[1].strip() for r in rows] == ['Digits CNN', 'GPT (train.py)']
    assert all(float(r[7]) < 1e-5 for r in rows)
