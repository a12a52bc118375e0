"""transformer: attention against a NumPy reference, gradients of every layer, the causal
mask, the GPT model (errors, parameter count, dtype, sampling, training, checkpoints), the
microgpt equivalence and the examples/gpt/train.py script."""
import importlib.util
import io
import json
import math
import os
import pathlib
import re
import signal
import subprocess
import sys
from contextlib import redirect_stdout
from unittest import mock

import numpy as np
import pytest

import dezero_kr
import dezero_kr.layers as L
from dezero_kr import Config, Variable
from dezero_kr.models import GPT
from dezero_kr.optimizers import Adam
from dezero_kr.transformer import (MICROGPT, MLP, CausalSelfAttention, PlainNorm, TransformerBlock,
                                   make_norm)
from _checks import check_backward, numeric_grad
from _subproc import python_env

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _load_train():
    spec = importlib.util.spec_from_file_location('gpt_train', ROOT / 'examples' / 'gpt' / 'train.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


train_script = _load_train()


def _tiny(**kw):
    np.random.seed(0)
    cfg = dict(vocab_size=7, block_size=5, n_embd=4, n_head=2, n_layer=2, dtype=np.float64, init_std=0.5)
    cfg.update(kw)
    return GPT(cfg.pop('vocab_size'), cfg.pop('block_size'), cfg.pop('n_embd'), cfg.pop('n_head'),
               cfg.pop('n_layer'), **cfg)


def _randomize(layer, rng, scale=0.5):
    """Random values in every parameter (so biases and gains are not 0 and 1)."""
    for p in layer.params():
        p.data = rng.normal(0, scale, p.data.shape)
    return layer


# =============================================================================
# Attention against a NumPy reference
# =============================================================================
def _attention_reference(x, W_attn, b_attn, W_proj, b_proj, n_head):
    """Per batch, per head, per query position: loops over plain NumPy."""
    B, T, C = x.shape
    D = C // n_head
    out = np.zeros_like(x)
    for b in range(B):
        qkv = x[b] @ W_attn + b_attn
        q, k, v = qkv[:, :C], qkv[:, C:2 * C], qkv[:, 2 * C:]
        heads = np.zeros((T, C))
        for h in range(n_head):
            cols = slice(h * D, (h + 1) * D)
            for t in range(T):
                s = np.array([q[t, cols] @ k[u, cols] / math.sqrt(D) for u in range(t + 1)])
                w = np.exp(s - s.max())
                w /= w.sum()
                heads[t, cols] = sum(w[u] * v[u, cols] for u in range(t + 1))
        out[b] = heads @ W_proj + b_proj
    return out


def test_attention_forward_matches_numpy_reference():
    rng = np.random.default_rng(0)
    attn = _randomize(CausalSelfAttention(6, 3, dtype=np.float64), rng)
    x = rng.normal(size=(2, 5, 6))
    y = attn(x)
    ref = _attention_reference(x, attn.c_attn.W.data, attn.c_attn.b.data, attn.c_proj.W.data,
                               attn.c_proj.b.data, 3)
    assert y.shape == (2, 5, 6)
    np.testing.assert_allclose(y.data, ref, rtol=1e-12, atol=1e-12)


def test_attention_single_position_is_the_value_projection():
    # T = 1: softmax over one key is 1, so the output is proj(v).
    rng = np.random.default_rng(1)
    attn = _randomize(CausalSelfAttention(4, 2, bias=False, dtype=np.float64), rng)
    x = rng.normal(size=(3, 1, 4))
    v = x[:, 0] @ attn.c_attn.W.data[:, 8:]
    np.testing.assert_allclose(attn(x).data[:, 0], v @ attn.c_proj.W.data, rtol=1e-12)


# =============================================================================
# Gradients against central differences (float64)
# =============================================================================
def _check_param_grads(layer, forward, rtol=1e-5, atol=1e-8, seed=0):
    """Backprop of sum(forward() * w) against central differences for every parameter of ``layer``."""
    y = forward()
    w = np.random.default_rng(seed).uniform(0.5, 1.5, y.shape)
    layer.cleargrads()
    (y * w).sum().backward()
    params = list(layer.params())
    arrays = [p.data for p in params]  # perturbed in place by numeric_grad

    def g(*_):
        return float((forward().data * w).sum())

    for i, p in enumerate(params):
        assert p.grad is not None, f'parameter {i} got no gradient'
        np.testing.assert_allclose(p.grad.data, numeric_grad(g, arrays, i), rtol=rtol, atol=atol,
                                   err_msg=f'gradient of parameter {i} {p.data.shape}')


@pytest.mark.parametrize('kind', ['rms', 'layer'])
def test_plain_norm_gradient(kind):
    x = np.random.default_rng(2).normal(size=(2, 3, 5))
    check_backward(lambda v: PlainNorm(kind)(v), x)


@pytest.mark.parametrize('kind', ['rms', 'layer'])
def test_plain_norm_values_and_no_parameters(kind):
    x = np.random.default_rng(3).normal(size=(4, 6))
    y = PlainNorm(kind)(x).data
    if kind == 'rms':
        ref = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-5)
    else:
        xc = x - x.mean(axis=-1, keepdims=True)
        ref = xc / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-12)
    assert list(PlainNorm(kind).params()) == []
    assert isinstance(make_norm(kind, 6), (L.RMSNorm, L.LayerNorm))
    assert isinstance(make_norm(kind, 6, affine=False), PlainNorm)


def test_bad_norm_and_activation_names_are_clear_errors():
    with pytest.raises(ValueError, match=r"make_norm: kind must be one of \['layer', 'rms'\], got 'batch'"):
        make_norm('batch', 4)
    with pytest.raises(ValueError, match=r"MLP: activation must be one of \['gelu', 'relu'\], got 'tanh'"):
        MLP(4, 'tanh')
    with pytest.raises(ValueError, match=r"GPT: norm must be one of"):
        GPT(5, 4, 4, 2, 1, norm='batch')


def test_attention_gradients_input_and_parameters():
    rng = np.random.default_rng(4)
    attn = _randomize(CausalSelfAttention(4, 2, dtype=np.float64), rng)
    x = rng.normal(size=(2, 4, 4))
    check_backward(lambda v: attn(v), x)
    _check_param_grads(attn, lambda: attn(x))


def test_attention_gradient_respects_the_mask():
    # Outputs at positions < t do not depend on inputs at >= t: their gradient there is exactly 0.
    rng = np.random.default_rng(5)
    attn = _randomize(CausalSelfAttention(4, 2, dtype=np.float64), rng)
    x = Variable(rng.normal(size=(2, 5, 4)))
    for t in range(1, 5):
        x.cleargrad()
        attn(x)[:, :t].sum().backward()
        assert np.all(x.grad.data[:, t:] == 0)
        assert np.all(np.abs(x.grad.data[:, :t]).sum(axis=-1) > 0)


@pytest.mark.parametrize('activation', ['relu', 'gelu'])
def test_mlp_gradients(activation):
    rng = np.random.default_rng(6)
    mlp = _randomize(MLP(3, activation, dtype=np.float64), rng)
    x = rng.normal(size=(2, 3, 3))
    check_backward(lambda v: mlp(v), x)
    _check_param_grads(mlp, lambda: mlp(x))
    h = x @ mlp.c_fc.W.data + mlp.c_fc.b.data
    if activation == 'relu':
        h = np.maximum(h, 0)
    else:
        h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
    np.testing.assert_allclose(mlp(x).data, h @ mlp.c_proj.W.data + mlp.c_proj.b.data, rtol=1e-12)


@pytest.mark.parametrize('norm,affine', [('layer', True), ('rms', True), ('rms', False)])
def test_block_gradients_and_residual_form(norm, affine):
    rng = np.random.default_rng(7)
    block = _randomize(TransformerBlock(4, 2, 'gelu', norm, affine, dtype=np.float64), rng)
    x = rng.normal(size=(2, 3, 4))
    check_backward(lambda v: block(v), x)
    _check_param_grads(block, lambda: block(x))
    h = x + block.attn(block.ln_1(x)).data
    np.testing.assert_allclose(block(x).data, h + block.mlp(block.ln_2(h)).data, rtol=1e-12)


@pytest.mark.parametrize('options', [
    {},                                  # GPT-2: LayerNorm, GELU, biases, ln_f
    dict(MICROGPT),                      # microgpt: RMSNorm without gain, ReLU, no biases, embed norm
    dict(tie_weights=True, norm='rms'),  # lm_head = wte^T
])
def test_gpt_parameter_gradients(options):
    model = _tiny(**options)
    rng = np.random.default_rng(8)
    for p in model.params():  # gains and biases away from 1 and 0
        if p.data.ndim == 1:
            p.data = p.data + rng.normal(0, 0.3, p.data.shape)
    idx = rng.integers(0, 7, size=(2, 4))
    _check_param_grads(model, lambda: model(idx), rtol=1e-5, atol=1e-8)


def test_gpt_loss_is_cross_entropy_of_the_logits_and_its_gradient():
    model = _tiny()
    rng = np.random.default_rng(9)
    idx, tgt = rng.integers(0, 7, size=(3, 5)), rng.integers(0, 7, size=(3, 5))
    z = model(idx).data
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    ref = -np.take_along_axis(logp, tgt[..., None], axis=-1).mean()
    np.testing.assert_allclose(float(model.loss(idx, tgt).data), ref, rtol=1e-12)
    _check_param_grads(model, lambda: model.loss(idx, tgt))


# =============================================================================
# GPT: causality, errors, sizes, dtypes
# =============================================================================
@pytest.mark.parametrize('options', [{}, dict(MICROGPT)])
def test_future_tokens_never_change_earlier_logits(options):
    model = _tiny(**options, dtype=np.float32, init_std=0.3)
    rng = np.random.default_rng(10)
    idx = rng.integers(0, 7, size=(2, 5))
    base = model(idx).data
    for t in range(5):
        changed = idx.copy()
        changed[:, t] = (changed[:, t] + 1 + rng.integers(0, 6, size=2)) % 7
        y = model(changed).data
        assert np.array_equal(y[:, :t], base[:, :t]), f'a change at position {t} leaked backwards'
        assert not np.allclose(y[:, t], base[:, t])  # the position itself does change


def test_input_errors_name_the_shapes():
    model = _tiny()
    with pytest.raises(ValueError, match=r'GPT: idx has shape \(2, 6\) \(B, T\) but T = 6 is longer than '
                                         r'block_size = 5'):
        model(np.zeros((2, 6), dtype=int))
    with pytest.raises(ValueError, match=r'GPT: idx must be a 2-D int array \(B, T\), got shape \(4,\)'):
        model(np.zeros(4, dtype=int))
    with pytest.raises(TypeError, match=r'GPT: idx must hold integer token ids, got dtype float64'):
        model(np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r'GPT: token ids must be in \[0, 7\), got values from 0 to 7'):
        model(np.array([[0, 7]]))
    with pytest.raises(ValueError, match=r'GPT: token ids must be in \[0, 7\), got values from -1 to 2'):
        model(np.array([[2, -1]]))  # a negative id would silently index from the end
    with pytest.raises(ValueError, match=r'GPT.loss: targets have shape \(1, 2\) but idx has shape \(1, 3\)'):
        model.loss(np.zeros((1, 3), dtype=int), np.zeros((1, 2), dtype=int))
    with pytest.raises(ValueError, match=r'GPT: n_embd=6 is not divisible by n_head=4'):
        GPT(5, 4, 6, 4, 1)
    with pytest.raises(ValueError, match=r'CausalSelfAttention: x must have shape \(B, T, 4\), got \(2, 4\)'):
        CausalSelfAttention(4, 2)(np.zeros((2, 4), dtype=np.float32))


def test_microgpt_configuration_has_4192_parameters():
    model = GPT(27, 16, 16, 4, 1, **MICROGPT)
    # wte 27x16 + wpe 16x16 + Wq, Wk, Wv, Wo 4 x 16x16 + fc1 16x64 + fc2 64x16 + lm_head 16x27
    assert model.num_params() == 27 * 16 + 16 * 16 + 4 * 16 * 16 + 2 * 16 * 64 + 16 * 27 == 4192
    assert sorted(k for k, _ in model.named_params()) == sorted(
        ['wte/W', 'wpe/W', 'h0/attn/c_attn/W', 'h0/attn/c_proj/W', 'h0/mlp/c_fc/W', 'h0/mlp/c_proj/W',
         'lm_head/W'])
    rebuilt = GPT(**model.config)  # the config dict rebuilds the same architecture
    assert [(k, p.shape, p.dtype) for k, p in rebuilt.named_params()] == \
        [(k, p.shape, p.dtype) for k, p in model.named_params()]
    tied = GPT(27, 16, 16, 4, 1, **dict(MICROGPT, tie_weights=True))
    assert tied.num_params() == 4192 - 16 * 27
    assert tied.lm_head is None


def test_float32_end_to_end():
    np.random.seed(0)
    model = GPT(11, 8, 8, 2, 2, dropout=0.1)
    idx = np.random.randint(0, 11, size=(3, 8))
    logits = model(idx)
    loss = model.loss(idx, idx)
    model.cleargrads()
    loss.backward()
    assert logits.dtype == loss.dtype == np.float32
    for path, p in model.named_params():
        assert p.dtype == p.grad.dtype == np.float32, path
    opt = train_script.DecayMatricesAdamW(alpha=1e-3).setup(model)
    opt.update()
    assert all(p.dtype == np.float32 for p in model.params())
    assert all(a.dtype == np.float32 for s in opt._state.values() for a in s.values())


def test_weight_tying_shares_the_embedding():
    model = _tiny(tie_weights=True)
    idx = np.array([[1, 2, 3]])
    x = model.wte.W.data[idx] + model.wpe.W.data[:3]
    for block in model.blocks:
        x = block(x).data
    x = model.ln_f(x).data
    np.testing.assert_allclose(model(idx).data, x @ model.wte.W.data.T, rtol=1e-12)


def test_dropout_only_in_training():
    np.random.seed(1)
    model = GPT(7, 5, 8, 2, 1, dropout=0.5, dtype=np.float64)
    idx = np.array([[1, 2, 3, 4]])
    with dezero_kr.test_mode():
        a, b = model(idx).data, model(idx).data
    assert np.array_equal(a, b)
    assert not np.allclose(model(idx).data, a)


# =============================================================================
# Sampling
# =============================================================================
def test_generate_is_reproducible_with_a_seed_and_runs_without_graph():
    model = _tiny(dropout=0.2)
    seen = []
    forward = model.forward

    def spy(idx):
        seen.append((Config.enable_backprop, Config.train))
        return forward(idx)

    model.forward = spy
    start = np.zeros((4, 1), dtype=int)
    a = model.generate(start, 9, rng=123)
    b = model.generate(start, 9, rng=123)
    c = model.generate(start, 9, rng=124)
    assert a.shape == (4, 10) and np.array_equal(a[:, :1], start)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert set(seen) == {(False, False)}  # no_grad and test_mode on every call
    assert Config.enable_backprop and Config.train  # restored
    # A generator or the global RNG work as well
    assert np.array_equal(model.generate(start, 9, rng=np.random.default_rng(123)), a)
    np.random.seed(5)
    g1 = model.generate(start, 3)
    np.random.seed(5)
    assert np.array_equal(model.generate(start, 3), g1)


def test_generate_greedy_top_k_and_context_crop():
    model = _tiny()
    start = np.array([[1, 2]])
    greedy = model.generate(start, 8, temperature=0)  # longer than block_size: the context is cropped
    assert np.array_equal(model.generate(start, 8, top_k=1, rng=0), greedy)
    ctx = greedy[:, -5:]
    assert model(ctx).data[0, -1].argmax() == model.generate(ctx, 1, temperature=0)[0, -1]
    # top_k = 2 only ever picks one of the two most likely ids
    z = model(start).data[0, -1]
    picks = {int(model.generate(start, 1, top_k=2, rng=s)[0, -1]) for s in range(40)}
    assert picks <= set(np.argsort(z)[-2:].tolist()) and len(picks) == 2
    with pytest.raises(ValueError, match='temperature must be >= 0'):
        model.generate(start, 1, temperature=-1)
    with pytest.raises(ValueError, match=r'top_k must be in \[1, 7\]'):
        model.generate(start, 1, top_k=0)


def test_sampling_follows_the_softmax():
    model = _tiny()
    start = np.zeros((4000, 1), dtype=int)
    ids = model.generate(start, 1, temperature=2.0, rng=0)[:, 1]
    z = model(np.zeros((1, 1), dtype=int)).data[0, -1] / 2.0
    p = np.exp(z - z.max())
    p /= p.sum()
    freq = np.bincount(ids, minlength=7) / len(ids)
    np.testing.assert_allclose(freq, p, atol=0.03)


# =============================================================================
# Training, checkpoints, the script
# =============================================================================
def test_loss_decreases_over_50_steps():
    args, s = train_script.parse_args(['--fast', '--steps', '50'])
    model, opt, clip = train_script.build(s, 27)
    data = train_script.NameData(True, s['block_size'])
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(50):
        x, y = data.batch(rng, 16)
        loss = model.loss(x, y)
        model.cleargrads()
        loss.backward()
        opt.update()
        losses.append(float(loss.data))
        assert clip.last_norm > 0
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.4
    assert losses[0] == pytest.approx(math.log(27), abs=0.05)  # small init: uniform predictions


def _short_run_losses(config, steps=6):
    """Losses of ``steps`` training steps: 'default' (train.py's config: float32, GELU, LayerNorm,
    dropout 0.1; batch 8) or 'microgpt' (float64, ReLU, RMSNorm without gain; Adam; batch 4)."""
    args, s = train_script.parse_args(['--steps', str(steps), '--batch-size', '8', '--warmup', '2'])
    if config == 'default':
        model, opt, _ = train_script.build(s, 27)
        batch = 8
    else:
        np.random.seed(0)
        model = GPT(27, 16, 16, 4, 1, dtype=np.float64, init_std=0.08, **MICROGPT)
        opt = Adam(alpha=0.01, beta1=0.85, beta2=0.99).setup(model)
        batch = 4
    data = train_script.NameData(True, s['block_size'])
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        x, y = data.batch(rng, batch)
        loss = model.loss(x, y)
        model.cleargrads()
        loss.backward()
        opt.update()
        losses.append(float(loss.data))
    return losses


# The same runs before the fused attention / in-place GELU / bool-mask dropout / gain-less norm
# rewrite (commit 85fff73).  Same dropout masks, same math: only float rounding may differ.
LOSSES_BEFORE_FUSION = {
    'default': [3.317476749420166, 3.165058135986328, 3.0716195106506348, 2.99604868888855,
                2.950521945953369, 2.9578335285186768],
    'microgpt': [3.372936761865942, 3.2537829232289104, 3.28415129888903, 3.1975622181676533,
                 3.0097930537295805, 3.0498511752969244],
}


@pytest.mark.parametrize('config,rtol', [('default', 1e-5), ('microgpt', 1e-12)])
def test_training_losses_unchanged_by_the_fast_paths(config, rtol):
    np.testing.assert_allclose(_short_run_losses(config), LOSSES_BEFORE_FUSION[config], rtol=rtol)


def test_batches_are_packed_names_starting_at_a_name():
    data = train_script.NameData(True, 16)
    x, y = data.batch(np.random.default_rng(0), 64)
    assert x.shape == y.shape == (64, 16)
    assert np.all(x[:, 0] == 0) and np.array_equal(x[:, 1:], y[:, :-1])
    known = set(data.names)
    for row in np.concatenate([x, y[:, -1:]], axis=1):
        pieces = data.decode(row).split('.')[1:-1]  # complete names between two end marks
        assert pieces and all(p in known for p in pieces)


def test_unigram_baseline_and_evaluation_targets():
    train, val = train_script.NameData(True, 16), train_script.NameData(False, 16)
    counts = {}
    for name in train.names:
        for ch in name + '.':
            counts[ch] = counts.get(ch, 0) + 1
    total = sum(counts.values())
    targets = ''.join(name + '.' for name in val.names)
    ref = -sum(math.log(counts[ch] / total) for ch in targets) / len(targets)
    assert train_script.unigram_baseline(train, val, 27) == pytest.approx(ref, rel=1e-12)
    assert int(val.eval_mask.sum()) == len(targets)
    assert val.decode(val.eval_y[0][val.eval_mask[0]]) == val.names[0] + '.'


def test_checkpoint_round_trip_and_exact_resume(tmp_path):
    quiet = io.StringIO()
    with redirect_stdout(quiet):
        full = train_script.main(['--fast', '--steps', '12', '--samples', '3'])
        a = str(tmp_path / 'a')
        train_script.main(['--fast', '--steps', '12', '--ckpt', a, '--stop-after', '5', '--samples', '1'])
        assert sorted(n.split('.')[0] for n in os.listdir(tmp_path / 'a')) == ['checkpoint', 'model', 'optimizer']
        resumed = train_script.main(['--fast', '--ckpt', a, '--resume', '--samples', '3'])
    assert resumed['optimizer'].t == full['optimizer'].t == 12
    for (k1, p1), (k2, p2) in zip(full['model'].named_params(), resumed['model'].named_params()):
        assert k1 == k2 and np.array_equal(p1.data, p2.data), k1
    for p1, p2 in zip(full['model'].params(), resumed['model'].params()):
        for slot in ('m', 'v'):
            assert np.array_equal(full['optimizer']._state[p1][slot], resumed['optimizer']._state[p2][slot])
    assert resumed['val_loss'] == full['val_loss'] and resumed['samples'] == full['samples']
    # The saved weights load into a freshly built model and give the same logits.
    model, *_ = train_script.load_checkpoint(a, 27)
    idx = np.array([[0, 1, 2, 3]])
    with dezero_kr.test_mode():  # the default config has dropout
        np.testing.assert_array_equal(model(idx).data, resumed['model'](idx).data)


def test_resume_without_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match='--resume needs --ckpt'):
        train_script.main(['--fast', '--resume', '--ckpt', str(tmp_path / 'none')])


def test_train_script_fast_prints_losses_and_samples():
    out = io.StringIO()
    with redirect_stdout(out):
        result = train_script.main(['--fast', '--samples', '4', '--sample-seed', '3'])
    text = out.getvalue()
    assert 'validation loss' in text and 'unigram baseline' in text and 'grad norm' in text
    assert len(result['samples']) == 4 and all(set(n) <= set('abcdefghijklmnopqrstuvwxyz')
                                                for n in result['samples'])
    with redirect_stdout(io.StringIO()):
        again = train_script.main(['--fast', '--samples', '4', '--sample-seed', '3'])
        other = train_script.main(['--fast', '--samples', '4', '--sample-seed', '4'])
    assert again['samples'] == result['samples'] != other['samples']


@pytest.mark.slow
@pytest.mark.blas_numbers  # README and docs/gpt.md quote its float32 loss and samples
def test_default_config_beats_the_unigram_baseline():  # the real command; ~1.5 min on 2 busy cores
    # A fresh process: the script sets one BLAS thread before NumPy loads (in this process
    # NumPy is loaded already, and many BLAS threads on small matrices are several times slower).
    out = subprocess.run([sys.executable, str(ROOT / 'examples' / 'gpt' / 'train.py')], capture_output=True,
                         text=True, timeout=600, cwd=ROOT, env=python_env())
    assert out.returncode == 0, out.stderr[-2000:]
    m = re.search(r'validation loss ([\d.]+) nats/char  \|  unigram baseline ([\d.]+)  \|  bigram ([\d.]+)',
                  out.stdout)
    val_loss, unigram, bigram = (float(g) for g in m.groups())
    assert val_loss < unigram - 0.7 and val_loss < bigram - 0.3
    samples = out.stdout.split('samples (')[1].splitlines()[1:11]
    assert len(samples) == 10 and all(s.startswith('  ') for s in samples)
    total = float(re.search(r'total time ([\d.]+)s', out.stdout).group(1))
    assert total < 300
    # the numbers README (both languages) and docs/gpt.md quote from this run
    readme = (ROOT / 'README.md').read_text(encoding='utf-8')
    assert re.findall(r'검증 손실 (\S+) nats/글자\(유니그램 기준선 (\S+)\)', readme) == \
        re.findall(r'validation loss of (\S+) nats/char \(unigram baseline (\S+)\)', readme) == \
        [(f'{val_loss:.3f}', f'{unigram:.3f}')]
    page = (ROOT / 'docs' / 'gpt.md').read_text(encoding='utf-8')
    assert m.group(0) in page and '\n'.join(samples) in page
    assert f'**검증 손실 {val_loss:.3f} nats/글자**' in page and f'**{unigram:.3f}**보다' in page
    assert f'보다 {unigram - val_loss:.2f} 낮고' in page and f'{bigram:.3f}보다도 {bigram - val_loss:.2f} 낮습니다' in page


# =============================================================================
# microgpt: the scalar engine of bench/microgpt.py computes the same loss and gradients
# =============================================================================
def _bench_microgpt():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    with mock.patch.dict(os.environ):  # bench._timing sets BLAS thread variables: keep ours
        from bench import microgpt
    return microgpt


def test_scalar_microgpt_matches_gpt_loss_and_gradients():
    mg = _bench_microgpt()
    weights = mg.init_weights(3)
    tokens = [0, 1, 12, 25, 0]  # '.amy.'
    P = mg.scalar_params(weights)
    loss_s = mg.s_loss(P, tokens)
    loss_s.backward()
    model = mg.build_gpt(weights)
    loss_t = model.loss(np.array([tokens[:-1]]), np.array([tokens[1:]]))
    loss_t.backward()
    assert abs(loss_s.data - float(loss_t.data)) < 1e-12
    gt = mg.gpt_grads_as_microgpt(model)
    for name, rows in P.items():
        gs = np.array([[p.grad or 0.0 for p in row] for row in rows])
        np.testing.assert_allclose(gt[name], gs, rtol=1e-9, atol=1e-13, err_msg=name)
    loss_n, gn = mg.numpy_loss_and_grads(weights, tokens)
    assert abs(loss_n - loss_s.data) < 1e-12
    for name in gn:
        np.testing.assert_allclose(gn[name], gt[name], rtol=1e-9, atol=1e-13, err_msg=name)


def test_scalar_engine_backward_is_iterative_and_accumulates():
    mg = _bench_microgpt()
    a, b = mg.Variable(2.0), mg.Variable(3.0)
    d = a * b + a  # the seed document's example: dd/da = b + 1 = 4, dd/db = a = 2
    d.backward()
    assert (a.grad, b.grad) == (4.0, 2.0)
    x = mg.Variable(0.5)
    y = x
    for _ in range(5000):  # deeper than Python's recursion limit
        y = y * 1.0 + 0.0
    y.backward()
    assert x.grad == 1.0


# =============================================================================
# examples/gpt/train.py checkpoints: one atomic unit; --resume exact or refused
# =============================================================================
TRAIN = str(ROOT / 'examples' / 'gpt' / 'train.py')
KILL_RUN = ['--fast', '--steps', '60', '--save-every', '1', '--samples', '1', '--log-every', '1000']


def _train_process(folder, resume):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, TRAIN, *KILL_RUN, '--ckpt', str(folder)]
                            + (['--resume'] if resume else []),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)


def _checkpoint_arrays(folder):
    manifest = train_script.read_manifest(str(folder))
    out = {'step': manifest['step'], 'rng': manifest['rng'], 'np_random': manifest['np_random']}
    for kind, part in manifest['parts'].items():
        with np.load(folder / part['file'], allow_pickle=False) as f:
            out.update({f'{kind}:{k}': f[k] for k in f.files})
    return out


def test_sigkill_at_random_points_then_resume_continues_exactly(tmp_path):
    ref = _train_process(tmp_path / 'ref', resume=False)
    assert ref.wait(timeout=120) == 0, ref.stderr.read().decode()[-2000:]
    expected = _checkpoint_arrays(tmp_path / 'ref')
    assert expected['step'] == 60

    folder = tmp_path / 'killed'
    chooser = np.random.default_rng(11)
    steps_seen = []
    for _ in range(6):  # bounded: ~1 s each
        has_ckpt = (folder / 'checkpoint.json').exists()
        proc = _train_process(folder, resume=has_ckpt)
        try:
            proc.wait(timeout=float(chooser.uniform(0.5, 1.3)))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        else:
            assert proc.returncode == 0, proc.stderr.read().decode()[-2000:]
        proc.stderr.close()
        if (folder / 'checkpoint.json').exists():
            steps_seen.append(train_script.read_manifest(str(folder))['step'])  # always consistent
    final = _train_process(folder, resume=(folder / 'checkpoint.json').exists())
    assert final.wait(timeout=120) == 0, final.stderr.read().decode()[-2000:]
    final.stderr.close()
    got = _checkpoint_arrays(folder)
    assert got.keys() == expected.keys()
    for key in expected:
        assert np.array_equal(got[key], expected[key]) if isinstance(got[key], np.ndarray) \
            else got[key] == expected[key], key
    # Only the last checkpoint is left: old parts and dead processes' temp files are gone.
    assert sorted(n.split('.')[0] for n in os.listdir(folder)) == ['checkpoint', 'model', 'optimizer']
    assert steps_seen == sorted(steps_seen)


def _saved_run(folder, stop_after):
    with redirect_stdout(io.StringIO()):
        train_script.main(['--fast', '--steps', '12', '--ckpt', str(folder), '--stop-after', str(stop_after),
                           '--samples', '1'])
    return json.loads((folder / 'checkpoint.json').read_text())


def _resume(folder):
    with redirect_stdout(io.StringIO()):
        return train_script.main(['--fast', '--ckpt', str(folder), '--resume', '--samples', '1'])


def test_resume_refuses_a_changed_or_missing_part(tmp_path):
    manifest = _saved_run(tmp_path, 4)
    model_part = tmp_path / manifest['parts']['model']['file']
    good = model_part.read_bytes()
    model_part.write_bytes(good[:-10] + bytes(10))
    with pytest.raises(train_script.CheckpointError, match=r'the model part model\.4\.\w+\.npz does not match '
                                                            r'its SHA-256'):
        _resume(tmp_path)
    model_part.unlink()
    with pytest.raises(train_script.CheckpointError, match=r'the model part model\.4\.\w+\.npz of step 4 is missing'):
        _resume(tmp_path)
    model_part.write_bytes(good)
    assert _resume(tmp_path)['optimizer'].t == 12


def test_resume_refuses_parts_of_two_different_steps(tmp_path):
    # Hand-made mix (the old train.py could leave one): optimizer of step 6, manifest of step 4.
    later = _saved_run(tmp_path / 'b', 6)
    manifest = _saved_run(tmp_path / 'a', 4)
    opt_part = later['parts']['optimizer']['file']
    (tmp_path / 'a' / opt_part).write_bytes((tmp_path / 'b' / opt_part).read_bytes())
    manifest['parts']['optimizer'] = later['parts']['optimizer']
    (tmp_path / 'a' / 'checkpoint.json').write_text(json.dumps(manifest))
    with pytest.raises(train_script.CheckpointError, match='the optimizer part is at step 6 but checkpoint.json '
                                                           'says step 4'):
        _resume(tmp_path / 'a')


def test_resume_refuses_the_old_three_file_layout_and_broken_manifests(tmp_path):
    (tmp_path / 'state.json').write_text('{"step": 3}')
    with pytest.raises(train_script.CheckpointError, match='no checkpoint.json, only the state.json of an older'):
        _resume(tmp_path)
    (tmp_path / 'checkpoint.json').write_text('{"step": 3')
    with pytest.raises(train_script.CheckpointError, match='checkpoint.json cannot be read'):
        _resume(tmp_path)
    (tmp_path / 'checkpoint.json').write_text('{"format": 2, "step": 3}')
    with pytest.raises(train_script.CheckpointError, match='not a format-2 manifest'):
        _resume(tmp_path)


def test_bench_gpt_floor_matches_the_model_loss_and_gradients():
    # bench/gpt.py's hand-written NumPy step (train.py's default config) and dezero_kr's GPT see the
    # same dropout masks and must agree; float64 here, so the agreement is to rounding.
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    with mock.patch.dict(os.environ):
        from bench import gpt as bench_gpt
    np.random.seed(0)
    model = GPT(27, 6, 8, 2, 2, dropout=0.3, dtype=np.float64, init_std=0.3)
    for path, p in model.named_params():  # biases and gains away from 0 and 1
        if p.data.ndim == 1:
            p.data = np.random.default_rng(len(path)).normal(0.5, 0.3, p.data.shape)
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 27, (3, 6)), rng.integers(0, 27, (3, 6))
    np.random.seed(7)
    loss = model.loss(x, y)
    loss.backward()
    np.random.seed(7)
    P = {path: p.data for path, p in model.named_params()}
    loss_n, grads = bench_gpt.numpy_loss_and_grads(P, x, y, model.config)
    assert abs(float(loss.data) - loss_n) < 1e-12
    assert set(grads) == set(P)
    for path, p in model.named_params():
        np.testing.assert_allclose(grads[path], p.grad.data, rtol=1e-9, atol=1e-12, err_msg=path)


def test_token_position_embedding_is_embed_id_plus_positions_in_values_and_gradients():
    from dezero_kr.autograd import gradcheck
    from dezero_kr.functions_nn import embed_id
    from dezero_kr.transformer import TokenPositionEmbedding
    rng = np.random.default_rng(0)
    ids = np.array([[3, 0, 3, 1], [2, 3, 3, 0]])  # repeated ids: their gradients add up
    wte, wpe = rng.normal(size=(5, 6)), rng.normal(size=(7, 6))
    a_wte, a_wpe = Variable(wte), Variable(wpe)
    y = TokenPositionEmbedding(ids)(a_wte, a_wpe)
    b_wte, b_wpe = Variable(wte), Variable(wpe)
    z = embed_id(ids, b_wte) + b_wpe[0:4]
    np.testing.assert_array_equal(y.data, z.data)
    gy = rng.normal(size=y.shape)
    (y * gy).sum().backward()
    (z * gy).sum().backward()
    np.testing.assert_allclose(a_wte.grad.data, b_wte.grad.data, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(a_wpe.grad.data, b_wpe.grad.data, rtol=1e-14, atol=1e-14)
    # by hand: row 3 of wte gets gy at the three places id 3 stands; wpe rows 4.. get nothing
    np.testing.assert_allclose(a_wte.grad.data[3], gy[0, 0] + gy[0, 2] + gy[1, 1] + gy[1, 2])
    assert not a_wpe.grad.data[4:].any()
    assert gradcheck(lambda e, p: TokenPositionEmbedding(ids)(e, p), [wte, wpe])


def test_bench_rules_alone_replays_the_recorded_step():
    """``bench microgpt``'s "nodes alone" line times the same computation as the step: its
    node list is the whole graph, and each node's forward on the recorded arrays gives the
    recorded output bit for bit."""
    mg = _bench_microgpt()
    model = mg.build_gpt(mg.init_weights(0))
    tokens = [0, 1, 12, 25, 0]
    loss = model.loss(np.array([tokens[:-1]]), np.array([tokens[1:]]))
    nodes = mg.recorded_nodes(loss)
    names = sorted(type(f).__name__ for f, _, _ in nodes)
    assert names == sorted(['TokenPositionEmbedding', 'RMSNorm', 'RMSNorm', 'RMSNorm', 'Linear', 'Linear',
                            'Linear', 'Linear', 'Linear', 'MultiHeadAttention', 'Add', 'Add', 'ReLU',
                            'Reshape', 'SoftmaxCrossEntropy'])
    for f, arrays, gy in nodes:
        np.testing.assert_array_equal(f.forward(*arrays), f.outputs().data, err_msg=type(f).__name__)
        assert gy.data.shape == f.outputs().data.shape
    count, seconds = mg.rules_alone(model, [tokens], repeat=1)
    assert count == 15 and seconds[0] > 0
