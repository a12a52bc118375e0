"""A decoder-only transformer (GPT): causal self-attention, blocks and the model.

The chain of operations, for ids ``idx`` of shape ``(B, T)``::

    wte[idx] + wpe[:T]                      token + position embedding   (B, T, C)
    [norm]                                  optional (microgpt normalises here)
    n_layer x Block:
        x = x + proj(attention(norm1(x)))   causal multi-head attention
        x = x + fc2(act(fc1(norm2(x))))     MLP, 4C wide, ReLU or GELU
    [final norm]                            GPT-2's ln_f (microgpt has none)
    lm_head                                 logits                        (B, T, V)

``GPT(..., **MICROGPT)`` is the 4,192-parameter model of Karpathy's
microgpt.py (RMSNorm without gain, no biases, ReLU, separate lm_head, a norm
after the embeddings and none before lm_head); the defaults are GPT-2's
choices (LayerNorm, GELU, biases, final norm).

This module builds on ``layers`` only (``models`` imports it: no cycle).
"""
import math

import numpy as np

from dezero_kr import cuda
from dezero_kr.core import Variable, no_grad, test_mode
from dezero_kr.functions_attention import TokenPositionEmbedding
from dezero_kr.functions_math import linear
from dezero_kr.functions_loss import labels_in_range
from dezero_kr.functions_nn import (dropout, gelu, layer_norm, multi_head_attention, relu, rms_norm,
                                    softmax_cross_entropy)
from dezero_kr.graph import plot_dot_graph
from dezero_kr.layers import Embedding, Layer, LayerNorm, Linear, RMSNorm
from dezero_kr.operators_shape import reshape, transpose

__all__ = ['CausalSelfAttention', 'MLP', 'TransformerBlock', 'GPT', 'MICROGPT', 'make_norm']

# microgpt.py's architecture choices (pass with the sizes: GPT(27, 16, 16, 4, 1, **MICROGPT)).
MICROGPT = dict(mlp='relu', norm='rms', norm_affine=False, bias=False, tie_weights=False,
                embed_norm=True, final_norm=False)

_NORMS = {'rms': RMSNorm, 'layer': LayerNorm}
_ACTIVATIONS = {'relu': relu, 'gelu': gelu}


# =============================================================================
# Normalisation without parameters
# =============================================================================
class PlainNorm(Layer):
    """RMSNorm or LayerNorm with gain 1 and no bias, nothing to learn (microgpt's ``rmsnorm``).

    ``'rms'``: y = x / sqrt(mean(x^2, -1) + eps);  ``'layer'``: y = (x - mean) / sqrt(var + eps).
    Another ``kind`` raises ``ValueError``.
    """

    def __init__(self, kind='rms', eps=1e-5):
        super().__init__()
        _check_choice('PlainNorm', 'kind', kind, _NORMS)
        self.kind = kind
        self.eps = eps

    def forward(self, x):
        """Normalise x (..., C) over its last axis; same shape and dtype."""
        if self.kind == 'rms':
            return rms_norm(x, eps=self.eps)
        return layer_norm(x, eps=self.eps)


def make_norm(kind, size, affine=True, eps=1e-5, dtype=np.float32):
    """``RMSNorm``/``LayerNorm`` of width ``size`` (learnable gain, and bias for ``'layer'``),
    or a ``PlainNorm`` without parameters when ``affine=False``."""
    _check_choice('make_norm', 'kind', kind, _NORMS)
    if not affine:
        return PlainNorm(kind, eps)
    return _NORMS[kind](size, eps=eps, dtype=dtype)


def _check_choice(what, name, value, choices):
    if value not in choices:
        raise ValueError(f'{what}: {name} must be one of {sorted(choices)}, got {value!r}')


def _linear_layer(in_size, out_size, bias, dtype):
    return Linear(out_size, nobias=not bias, dtype=dtype, in_size=in_size)


# =============================================================================
# Attention, MLP, block
# =============================================================================
class CausalSelfAttention(Layer):
    """Multi-head self-attention in which position t sees positions 0..t only.

    x (B, T, C) -> qkv = x @ W_attn (+ b): q, k, v each (B, H, T, D) with D = C / H;
    per head softmax(q k^T / sqrt(D) with -inf above the diagonal) v -> (B, T, C) -> c_proj.
    ``c_attn/W`` (C, 3C) holds W_q, W_k, W_v side by side (columns 0:C, C:2C, 2C:3C).
    ``n_embd`` not divisible by ``n_head`` raises ``ValueError``.
    """

    def __init__(self, n_embd, n_head, bias=True, dropout=0.0, dtype=np.float32):
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f'CausalSelfAttention: n_embd={n_embd} is not divisible by n_head={n_head}')
        self.n_embd = n_embd
        self.n_head = n_head
        self.dropout = dropout
        self.c_attn = _linear_layer(n_embd, 3 * n_embd, bias, dtype)
        self.c_proj = _linear_layer(n_embd, n_embd, bias, dtype)

    def forward(self, x):
        """(B, T, C) -> (B, T, C); dropout (training only) on the projected output.

        Raises ``ValueError`` when x is not 3-D with C = ``n_embd``.
        """
        if x.ndim != 3 or x.shape[-1] != self.n_embd:
            raise ValueError(f'CausalSelfAttention: x must have shape (B, T, {self.n_embd}), '
                             f'got {x.shape}')
        # = per head (B, H, T, D) scaled_dot_product_attention(q, k, v, causal=True), heads side by side
        y = multi_head_attention(self.c_attn(x), self.n_head, causal=True)  # (B, T, C)
        return dropout(self.c_proj(y), self.dropout)


class MLP(Layer):
    """Position-wise feed-forward: x (..., C) -> fc2(act(fc1(x))) with a hidden width of 4C.

    ``c_fc`` (C -> 4C) and ``c_proj`` (4C -> C) are Linear layers; ``activation``
    is 'gelu' or 'relu' (another raises ``ValueError``).
    """

    def __init__(self, n_embd, activation='gelu', bias=True, dropout=0.0, dtype=np.float32):
        super().__init__()
        _check_choice('MLP', 'activation', activation, _ACTIVATIONS)
        self.activation = activation
        self.dropout = dropout
        self.c_fc = _linear_layer(n_embd, 4 * n_embd, bias, dtype)
        self.c_proj = _linear_layer(4 * n_embd, n_embd, bias, dtype)

    def forward(self, x):
        """c_proj(act(c_fc(x))), then dropout (training only): (..., C) -> (..., C)."""
        h = _ACTIVATIONS[self.activation](self.c_fc(x))
        return dropout(self.c_proj(h), self.dropout)


class TransformerBlock(Layer):
    """Pre-norm residual block: x + attn(norm1(x)), then + mlp(norm2(x)).  (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd, n_head, mlp='gelu', norm='layer', norm_affine=True, bias=True,
                 dropout=0.0, dtype=np.float32):
        super().__init__()
        self.ln_1 = make_norm(norm, n_embd, norm_affine, dtype=dtype)
        self.attn = CausalSelfAttention(n_embd, n_head, bias, dropout, dtype)
        self.ln_2 = make_norm(norm, n_embd, norm_affine, dtype=dtype)
        self.mlp = MLP(n_embd, mlp, bias, dropout, dtype)

    def forward(self, x):
        """x + attn(ln_1(x)), then that + mlp(ln_2(that)): (B, T, C) -> (B, T, C)."""
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


# =============================================================================
# GPT
# =============================================================================
class GPT(Layer):
    """A GPT language model: ids ``(B, T)`` (T <= block_size) -> logits ``(B, T, vocab_size)``.

    Options (defaults are GPT-2's): ``mlp`` 'gelu'|'relu'; ``norm`` 'layer'|'rms';
    ``norm_affine`` (learnable gain/bias in the norms); ``bias`` (in every Linear
    but lm_head, which never has one); ``tie_weights`` (lm_head uses ``wte/W``
    transposed); ``dropout`` (after the embeddings and each residual branch,
    training only); ``embed_norm`` (normalise the embeddings, as microgpt);
    ``final_norm`` (GPT-2's ``ln_f``); ``dtype``; ``init_std``.

    Weights are drawn from NumPy's global RNG (``np.random.seed`` makes a model
    reproducible): every matrix ~ N(0, init_std^2), the projections into the
    residual stream with std ``init_std / sqrt(2 n_layer)`` (GPT-2), biases 0,
    norm gains 1.  Parameter paths: ``wte/W``, ``wpe/W``, ``h0/attn/c_attn/W``, ...,
    ``lm_head/W`` (C, V).

    ``ValueError`` for a size that is not a positive int, ``n_embd`` not
    divisible by ``n_head``, ``dropout`` outside [0, 1) or an unknown
    ``mlp``/``norm`` choice.
    """

    def __init__(self, vocab_size, block_size, n_embd, n_head, n_layer, *, mlp='gelu', norm='layer',
                 norm_affine=True, bias=True, tie_weights=False, dropout=0.0, embed_norm=False,
                 final_norm=True, dtype=np.float32, init_std=0.02):
        super().__init__()
        _check_choice('GPT', 'mlp', mlp, _ACTIVATIONS)
        _check_choice('GPT', 'norm', norm, _NORMS)
        for name, value in (('vocab_size', vocab_size), ('block_size', block_size), ('n_embd', n_embd),
                            ('n_head', n_head), ('n_layer', n_layer)):
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f'GPT: {name} must be a positive int, got {value!r}')
        if n_embd % n_head:
            raise ValueError(f'GPT: n_embd={n_embd} is not divisible by n_head={n_head}')
        if not 0 <= dropout < 1:
            raise ValueError(f'GPT: dropout must be in [0, 1), got {dropout}')
        self.config = dict(vocab_size=vocab_size, block_size=block_size, n_embd=n_embd, n_head=n_head,
                           n_layer=n_layer, mlp=mlp, norm=norm, norm_affine=norm_affine, bias=bias,
                           tie_weights=tie_weights, dropout=dropout, embed_norm=embed_norm,
                           final_norm=final_norm, dtype=np.dtype(dtype).name, init_std=init_std)
        self.vocab_size = vocab_size
        self.block_size = block_size
        self.dropout = dropout
        self.wte = Embedding(vocab_size, n_embd, dtype=dtype)
        self.wpe = Embedding(block_size, n_embd, dtype=dtype)
        self.ln_e = make_norm(norm, n_embd, norm_affine, dtype=dtype) if embed_norm else None
        self.blocks = []
        for i in range(n_layer):
            block = TransformerBlock(n_embd, n_head, mlp, norm, norm_affine, bias, dropout, dtype)
            setattr(self, f'h{i}', block)
            self.blocks.append(block)
        self.ln_f = make_norm(norm, n_embd, norm_affine, dtype=dtype) if final_norm else None
        self.lm_head = None if tie_weights else _linear_layer(n_embd, vocab_size, False, dtype)
        self._init_weights(init_std, n_layer, dtype)

    def _init_weights(self, std, n_layer, dtype):
        residual_std = std / math.sqrt(2 * n_layer)
        for path, p in self.named_params():
            if p.data.ndim == 2:
                s = residual_std if path.endswith('c_proj/W') else std
                p.data = (np.random.randn(*p.data.shape) * s).astype(dtype)

    def num_params(self):
        """The number of learnable scalars (a tied embedding counts once)."""
        return int(sum(p.data.size for p in self.params()))

    def _check_idx(self, idx):
        ids = idx.data if isinstance(idx, Variable) else idx
        ids = ids if hasattr(ids, 'dtype') else np.asarray(ids)
        if ids.ndim != 2:
            raise ValueError(f'GPT: idx must be a 2-D int array (B, T), got shape {ids.shape}')
        if ids.dtype.kind not in 'iu':
            raise TypeError(f'GPT: idx must hold integer token ids, got dtype {ids.dtype} '
                            f'(shape {ids.shape})')
        if ids.shape[1] > self.block_size:
            raise ValueError(f'GPT: idx has shape {ids.shape} (B, T) but T = {ids.shape[1]} is longer '
                             f'than block_size = {self.block_size}; crop it to idx[:, -{self.block_size}:]')
        if ids.size and not labels_in_range(ids, self.vocab_size):  # one reduction, one read
            raise ValueError(f'GPT: token ids must be in [0, {self.vocab_size}), got values from '
                             f'{ids.min()} to {ids.max()} (idx shape {ids.shape})')
        return ids

    def forward(self, idx):
        """logits (B, T, V) for ids (B, T)."""
        ids = self._check_idx(idx)
        x = TokenPositionEmbedding(ids)(self.wte.W, self.wpe.W)  # wte[ids] + wpe[:T]: (B, T, C)
        if self.ln_e is not None:
            x = self.ln_e(x)
        x = dropout(x, self.dropout)
        for block in self.blocks:
            x = block(x)
        if self.ln_f is not None:
            x = self.ln_f(x)
        if self.lm_head is not None:
            return self.lm_head(x)
        B, T, C = x.shape
        logits = linear(reshape(x, (B * T, C)), transpose(self.wte.W))
        return reshape(logits, (B, T, self.vocab_size))

    def loss(self, idx, targets):
        """Mean cross entropy of the next-token predictions: ``-mean log p(targets[b, t] | idx[b, :t+1])``.

        idx, targets: int arrays (B, T).  The same as
        ``softmax_cross_entropy(reshape(model(idx), (B * T, V)), targets.reshape(-1))``.
        """
        ids = self._check_idx(idx)
        t = targets.data if isinstance(targets, Variable) else targets
        if getattr(t, 'shape', None) != ids.shape:
            raise ValueError(f'GPT.loss: targets have shape {getattr(t, "shape", None)} but idx has '
                             f'shape {ids.shape}; they must be equal')
        logits = self(ids)
        return softmax_cross_entropy(reshape(logits, (-1, self.vocab_size)), t.reshape(-1))

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, rng=None):
        """Append ``max_new_tokens`` sampled ids to ``idx`` (B, T0); returns (B, T0 + max_new_tokens).

        Runs under ``no_grad`` and ``test_mode`` (no graph, no dropout).  Each step
        sees the last ``block_size`` ids, divides the last logits by ``temperature``
        (0 = greedy argmax), keeps the ``top_k`` largest if given, and samples from
        the softmax.  ``rng``: a ``np.random.Generator``/``RandomState``, an int seed,
        or None (NumPy's global RNG, so ``np.random.seed`` also makes it repeatable).
        """
        idx = np.array(cuda.as_numpy(idx.data if isinstance(idx, Variable) else idx))
        if idx.ndim == 1:
            idx = idx[None, :]
        self._check_idx(idx[:, -self.block_size:])
        if not temperature >= 0:
            raise ValueError(f'GPT.generate: temperature must be >= 0, got {temperature}')
        if top_k is not None and not 1 <= top_k <= self.vocab_size:
            raise ValueError(f'GPT.generate: top_k must be in [1, {self.vocab_size}], got {top_k}')
        if rng is None:
            rng = np.random
        elif isinstance(rng, (int, np.integer)):
            rng = np.random.default_rng(rng)
        xp = cuda.get_array_module(self.wte.W.data)  # the window goes where the weights are
        with no_grad(), test_mode():
            for _ in range(max_new_tokens):
                logits = cuda.as_numpy(self(xp.asarray(idx[:, -self.block_size:])).data[:, -1, :])
                idx = np.concatenate([idx, _sample(logits.astype(np.float64), temperature, top_k, rng)],
                                     axis=1)
        return idx

    def plot(self, *inputs, to_file='model.png'):
        """Draw the graph of ``self(*inputs)`` with parameter paths as labels (as ``Model.plot``)."""
        return plot_dot_graph(self(*inputs), verbose=True, to_file=to_file, param_names=self)


def _sample(logits, temperature, top_k, rng):
    """One id per row of ``logits`` (B, V) -> (B, 1), by inverse CDF with one uniform per row."""
    if temperature == 0:
        return logits.argmax(axis=1)[:, None]
    z = logits / temperature
    if top_k is not None:
        kth = np.sort(z, axis=1)[:, -top_k][:, None]
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    cdf = np.cumsum(p, axis=1)
    u = rng.random(len(z))[:, None] * cdf[:, -1:]
    choice = (cdf <= u).sum(axis=1)
    return np.minimum(choice, z.shape[1] - 1)[:, None]
