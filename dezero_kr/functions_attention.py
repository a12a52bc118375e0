"""Attention and embedding: causal_mask, scaled_dot_product_attention, multi_head_attention,
embed_id, TokenPositionEmbedding (a GPT's two embeddings as one node).  The packed
multi-head backward is a measured in-place fast path."""
import math
import numbers

import numpy as np

from dezero_kr import cuda
from dezero_kr.array_utils import rounded_to, widen
from dezero_kr.core import Function, Variable, as_variable
from dezero_kr.operators import add_tangents, array_grad, as_grad, cached_or_rebuilt, operands
from dezero_kr.operators_shape import get_item, matmul, scatter_grad, swap_last
from dezero_kr.functions_math import stack
from dezero_kr.functions_activation import in_float32, masked_fill, softmax, sum_exp

def causal_mask(t_q, t_k=None, xp=np):
    """Bool ``(t_q, t_k)`` mask, True above the (bottom-right aligned) diagonal: future keys.

    Query i sits at position ``t_k - t_q + i`` of the key sequence (the queries
    are its last ``t_q`` positions, as when decoding with a KV cache) and sees
    keys ``0 .. t_k - t_q + i``.  PyTorch's ``is_causal=True`` aligns top-left
    instead (query i sees keys ``0 .. i``); the two agree when ``t_q == t_k``.
    With ``t_q > t_k`` the first ``t_q - t_k`` rows hide every key (their output is 0).
    """
    t_k = t_q if t_k is None else t_k
    return xp.triu(xp.ones((t_q, t_k), dtype=bool), k=t_k - t_q + 1)


def _attend(q, k, v, hidden, scale):
    """Raw forward of attention: (P v, P) with P = softmax(q k^T * scale, -inf where hidden).

    The scores are masked, shifted, exponentiated and normalised in place.
    """
    xp = cuda.get_array_module(q)
    s = q @ swap_last(k)
    s *= scale
    if hidden is not None:
        xp.copyto(s, -xp.inf, where=hidden)
    m = s.max(axis=-1, keepdims=True)
    m[~xp.isfinite(m)] = 0  # an all-hidden row: exp(-inf - 0) = 0, not nan
    s -= m
    xp.exp(s, out=s)
    s /= sum_exp(s, -1)
    return s @ v, s


def _attention_probs(q, k, hidden, scale):
    """P as a composition of Variables (softmax of the masked, scaled scores): differentiable."""
    s = matmul(q, swap_last(k)) * scale
    if hidden is not None:
        s = masked_fill(s, hidden, -np.inf)
    return softmax(s, axis=-1)


def _through_softmax(p, g):
    """The softmax Jacobian (symmetric) applied to g: P * (g - sum(g * P, -1))."""
    return p * (g - (g * p).sum(axis=-1, keepdims=True))


def _attention_vjp(q, k, v, p, g, scale):
    """(dq, dk, dv) for y = P v: dS = scale P * (dP - sum(dP * P)), dP = g v^T;
    dq = dS k, dk = dS^T q, dv = P^T g.  Arrays, or Variables while a graph is recorded."""
    ds = _through_softmax(p, g @ swap_last(v)) * scale
    return ds @ k, swap_last(ds) @ q, swap_last(p) @ g


def _attention_jvp(q, k, v, p, dq, dk, dv, scale):
    """Tangent of y = P v: dP v + P dv, dP = softmax Jacobian (scale (dq k^T + q dk^T))."""
    t = None
    if dq is not None or dk is not None:
        ds = add_tangents(None if dq is None else dq @ swap_last(k),
                          None if dk is None else q @ swap_last(dk))
        t = _through_softmax(p, ds * scale) @ v
    if dv is not None:
        t = add_tangents(t, p @ dv)
    return t


class ScaledDotProductAttention(Function):
    """y = P v with P = softmax(s, axis=-1), s = q k^T * scale, s = -inf where ``hidden``.

    q ``(..., Tq, d)``, k ``(..., Tk, d)``, v ``(..., Tk, dv)``; ``hidden`` a bool
    array broadcastable to ``(..., Tq, Tk)`` or None.  With dS = P * (dP - sum(dP * P, -1)),
    dP = gy v^T:  dL/dq = scale dS k,  dL/dk = scale dS^T q,  dL/dv = P^T gy.
    One op instead of the six of the composition (matmul, transpose, scale, mask,
    softmax, matmul).  While a graph is recorded, P is rebuilt from that
    composition, so the gradient is differentiable again.
    """
    __slots__ = ('hidden', 'scale', 'p')

    def __init__(self, hidden, scale):
        self.hidden = hidden
        self.scale = scale

    def forward(self, q, k, v):
        y, self.p = _attend(widen(q), widen(k), widen(v), self.hidden, self.scale)  # float16: float32
        return rounded_to(y, np.result_type(q.dtype, k.dtype, v.dtype))

    def _operands(self):
        """(q, k, v, P): Variables and a differentiable P while recording, else arrays and the cached P."""
        q, k, v = operands(*self.inputs)
        return q, k, v, cached_or_rebuilt(self.p, lambda: _attention_probs(q, k, self.hidden, self.scale))

    def backward(self, gy):
        q, k, v, p = self._operands()
        grads = _attention_vjp(*in_float32(q, k, v, p, operands(gy)[0]), self.scale)
        return tuple(as_grad(rounded_to(g, x.dtype), x) for g, x in zip(grads, self.inputs))

    def jvp(self, dq, dk, dv):
        q, k, v, p = self._operands()
        return _attention_jvp(q, k, v, p, dq, dk, dv, self.scale)


def _split_heads(qkv, n_head):
    """(B, T, 3C) packed [q | k | v] -> q, k, v of shape (B, H, T, C / H); views of an array or Variables."""
    B, T, C3 = qkv.shape
    heads = qkv.reshape((B, T, 3, n_head, C3 // (3 * n_head))).transpose((2, 0, 3, 1, 4))
    return heads[0], heads[1], heads[2]


def _heads_view(y, n_head):
    """(B, T, C) -> (B, H, T, C / H): the heads of y (a view of an array: writing a head writes y)."""
    B, T, C = y.shape
    return y.reshape((B, T, n_head, C // n_head)).transpose((0, 2, 1, 3))


def _merge_heads(y):
    """(B, H, T, D) -> (B, T, H D): the heads side by side again."""
    B, H, T, D = y.shape
    return y.transpose((0, 2, 1, 3)).reshape((B, T, H * D))


class MultiHeadAttention(Function):
    """Multi-head attention on packed projections: qkv (B, T, 3C) -> y (B, T, C).

    q, k, v = the column blocks 0:C, C:2C, 2C:3C of qkv, each split into H heads
    of width D = C / H; y = the heads of ``ScaledDotProductAttention`` side by side.
    dL/dqkv packs (dq, dk, dv) of that rule the same way.  The head split and
    merge happen on array views inside the op: one node instead of eight
    (reshape, transpose, three slices, attention, transpose, reshape); forward +
    backward on microgpt's (1, 12, 48) take 96 us instead of 190 us (measured).
    """
    __slots__ = ('n_head', 'hidden', 'scale', 'p')

    def __init__(self, n_head, hidden, scale):
        self.n_head = n_head
        self.hidden = hidden
        self.scale = scale

    def forward(self, qkv):
        q, k, v = _split_heads(widen(qkv), self.n_head)  # float16: computed in float32
        y, self.p = _attend(q, k, v, self.hidden, self.scale)
        return rounded_to(_merge_heads(y), qkv.dtype)

    def _operands(self):
        """(q, k, v, P) of the heads: as ``ScaledDotProductAttention._operands``."""
        q, k, v = _split_heads(operands(self.inputs[0])[0], self.n_head)
        return q, k, v, cached_or_rebuilt(self.p, lambda: _attention_probs(q, k, self.hidden, self.scale))

    def backward(self, gy):
        q, k, v, p = self._operands()
        g, = operands(gy)
        if not isinstance(g, Variable):
            return Variable(self._packed_grad(g, q, k, v, p))
        B, T, C = g.shape
        grads = _attention_vjp(q, k, v, p, _heads_view(g, self.n_head), self.scale)
        return as_grad(stack(grads).transpose((1, 3, 0, 2, 4)).reshape((B, T, 3 * C)), self.inputs[0])

    def backward_arrays(self, gy):
        return self._packed_grad(gy, *self._operands())

    def _packed_grad(self, g, q, k, v, p):
        """The plain path's dL/dqkv (arrays): ``_attention_vjp_packed``, in qkv's dtype."""
        gqkv = _attention_vjp_packed(*in_float32(q, k, v, p, g), self.n_head, self.scale)
        return rounded_to(gqkv, self.inputs[0].dtype)

    def jvp(self, dqkv):
        q, k, v, p = self._operands()
        dq, dk, dv = _split_heads(dqkv, self.n_head)
        return _merge_heads(_attention_jvp(q, k, v, p, dq, dk, dv, self.scale))


def _attention_vjp_packed(q, k, v, p, gy, n_head, scale):
    """``_attention_vjp`` on arrays, written into the packed (B, T, 3C) gradient of qkv.

    An in-place fast path: dS is built in the dP buffer and dq, dk, dv are
    multiplied straight into their column blocks (no stack, no packing copy);
    MultiHeadAttention's backward in bench gpt: 0.47 instead of 0.65 ms a step (measured).
    """
    g = _heads_view(gy, n_head)
    xp = cuda.get_array_module(gy)
    gqkv = xp.empty(gy.shape[:2] + (3 * gy.shape[2],), dtype=xp.result_type(gy, p))
    dq, dk, dv = _split_heads(gqkv, n_head)  # views into gqkv
    ds = g @ swap_last(v)  # dP, then dS = scale P * (dP - sum(dP * P)) in its buffer
    ds -= (ds * p).sum(axis=-1, keepdims=True)
    ds *= p
    ds *= scale
    xp.matmul(ds, k, out=dq)
    xp.matmul(swap_last(ds), q, out=dk)
    xp.matmul(swap_last(p), g, out=dv)
    return gqkv


_causal_masks = {}


def _cached_causal_mask(t_q, t_k):
    # The same few (Tq, Tk) come back every step: build each mask once (read-only, shared).
    mask = _causal_masks.get((t_q, t_k))
    if mask is None:
        mask = causal_mask(t_q, t_k)
        mask.flags.writeable = False
        _causal_masks[(t_q, t_k)] = mask
    return mask


def scaled_dot_product_attention(q, k, v, mask=None, causal=False):
    """``softmax(q k^T / sqrt(d) masked, axis=-1) v``, one ``ScaledDotProductAttention`` op.

    q ``(..., Tq, d)``, k ``(..., Tk, d)``, v ``(..., Tk, dv)`` -> ``(..., Tq, dv)``.
    ``mask``: bool array broadcastable to ``(..., Tq, Tk)``, True = not attended.
    ``causal=True`` hides future keys, aligned bottom-right when ``Tq != Tk`` (the
    queries are the last Tq positions, as with a KV cache; see ``causal_mask``;
    PyTorch's ``is_causal`` aligns top-left).  Masked scores are ``-inf``, so they get
    exactly zero weight and no gradient; a row with every key hidden gives 0.
    """
    q, k, v = as_variable(q), as_variable(k), as_variable(v)
    xp = cuda.get_array_module(q.data)
    hidden = None
    if causal:
        t_q, t_k = q.shape[-2], k.shape[-2]
        hidden = _cached_causal_mask(t_q, t_k) if xp is np else causal_mask(t_q, t_k, xp)
    if mask is not None:
        mask = xp.asarray(mask.data if isinstance(mask, Variable) else mask, dtype=bool)
        hidden = mask if hidden is None else hidden | mask
    if hidden is not None:
        try:
            scores = np.broadcast_shapes(q.shape[:-1], k.shape[:-2] + (1,)) + k.shape[-2:-1]
            ok = np.broadcast_shapes(hidden.shape, scores) == scores
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f'scaled_dot_product_attention: mask of shape {hidden.shape} does not '
                             f'broadcast to the scores of q {q.shape} and k {k.shape}')
    return ScaledDotProductAttention(hidden, 1.0 / math.sqrt(q.shape[-1]))(q, k, v)


def multi_head_attention(qkv, n_head, causal=False):
    """Attention of ``n_head`` heads on packed projections: qkv ``(B, T, 3C)`` -> ``(B, T, C)``.

    The same as splitting qkv into q, k, v (columns 0:C, C:2C, 2C:3C), each into
    heads ``(B, H, T, C / H)``, calling ``scaled_dot_product_attention(q, k, v,
    causal=causal)`` and putting the heads side by side again; one op.  ``n_head``
    not a positive int, or a width not divisible by ``3 n_head``: ValueError.
    """
    qkv = as_variable(qkv)
    if (isinstance(n_head, (bool, np.bool_)) or not isinstance(n_head, numbers.Integral)
            or n_head < 1):
        raise ValueError(f'multi_head_attention: n_head must be a positive int, got {n_head!r}')
    if qkv.ndim != 3 or qkv.shape[-1] % (3 * n_head):
        raise ValueError(f'multi_head_attention: qkv must have shape (B, T, 3C) with C divisible by '
                         f'n_head={n_head}, got {qkv.shape}')
    T = qkv.shape[1]
    xp = cuda.get_array_module(qkv.data)
    hidden = None
    if causal:
        hidden = _cached_causal_mask(T, T) if xp is np else causal_mask(T, T, xp)
    d = qkv.shape[-1] // (3 * n_head)
    return MultiHeadAttention(n_head, hidden, 1.0 / math.sqrt(d))(qkv)


# =============================================================================
# Embedding
# =============================================================================
def embed_id(x, W):
    """Rows of ``W`` (V, D) picked by the integer ids ``x`` (any shape) -> ``x.shape + (D,)`` (= ``W[x]``).

    A composition (``get_item``): the gradient scatter-adds into the used rows.
    """
    W = as_variable(W)
    ids = x.data if isinstance(x, Variable) else x
    ids = cuda.get_array_module(W.data).asarray(ids)
    if ids.dtype.kind not in 'iu':
        raise TypeError(f'embed_id: ids must be integers, got dtype {ids.dtype} (shape {ids.shape})')
    if ids.size:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= W.shape[0]:
            raise ValueError(f'embed_id: ids must be in [0, {W.shape[0]}) for W of shape {W.shape}, '
                             f'got values from {lo} to {hi} (ids shape {ids.shape})')
    return get_item(W, ids)


class TokenPositionEmbedding(Function):
    """y[b, t] = wte[ids[b, t]] + wpe[t]: ids (B, T) ints, wte (V, C), wpe (P >= T, C) -> (B, T, C).

    Linear in (wte, wpe), so the rule is the map itself and its transpose:
    dL/dwte = gy's rows scatter-added at ``ids`` (repeated ids add up),
    dL/dwpe[:T] = sum over b of gy[b] (rows T.. get 0); jvp = the same map
    applied to the tangents.  Output dtype: that of ``wte + wpe``.  The ids
    are checked by ``GPT._check_idx`` (integer, in [0, V), T <= P).
    It is ``embed_id(ids, wte) + wpe[:T]`` as one node instead of three: a
    microgpt forward + backward in a warm loop, 285 -> 252 µs (bench/README.md).
    """
    __slots__ = ('ids',)
    backward_reads_values = False

    def __init__(self, ids):
        self.ids = ids

    def forward(self, wte, wpe):
        return wte[self.ids] + wpe[:self.ids.shape[1]]

    def backward(self, gy):
        return self._vjp(as_grad, operands(gy)[0])

    def backward_arrays(self, gy):
        return self._vjp(array_grad, gy)

    def _vjp(self, to_grad, g):
        """The rule on the operand ``g`` (Variable or array); ``to_grad`` makes each result."""
        wte, wpe = self.inputs
        positions = slice(0, self.ids.shape[1])
        return (to_grad(scatter_grad(g, self.ids, wte.data.shape), wte),
                to_grad(scatter_grad(g.sum(axis=0), positions, wpe.data.shape), wpe))

    def jvp(self, dwte, dwpe):
        return add_tangents(None if dwte is None else get_item(dwte, self.ids),
                            None if dwpe is None else get_item(dwpe, slice(0, self.ids.shape[1])))
