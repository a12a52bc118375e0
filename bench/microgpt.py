"""microgpt on scalars vs the same GPT on dezero_kr tensors: equal losses, time per training step.

Configuration of Karpathy's microgpt.py: vocabulary 27 ('.' and a-z), block
size 16, 16-dim embeddings, 4 heads, 1 layer, RMSNorm without gain, no biases,
ReLU MLP 4x wide, separate lm_head: 4,192 parameters.  One training step is
microgpt's: one name ``[.] + name + [.]``, the mean of ``-log p(next char)``
over its positions, backward, and microgpt's Adam (beta1 0.85, beta2 0.99,
linearly decaying learning rate 0.01).

Three implementations of exactly that step, all in float64, start from the
same weights and take the same steps in lockstep:

* ``scalar``: a scalar autodiff engine written here in the style of steps
  01-22 (a ``Variable`` box per number, ``Function`` nodes, operator
  overloading, a backward pass in reverse topological order found by an
  iterative depth-first search: no recursion);
* ``dezero_kr``: ``dezero_kr.models.GPT(27, 16, 16, 4, 1, **MICROGPT)``;
* ``numpy``: a hand-written NumPy forward and backward of the same math (the floor).

    python -m bench.microgpt [--steps 10] [--repeat 20] [--train-steps 1000]

Prints the loss of each step for the three (and their largest difference),
the largest gradient difference, the median time per step and the ratios,
the time of the graph's nodes alone (each node's ``forward`` and ``backward``
on the recorded arrays, no dispatch: ``rules_alone``), the same step in PyTorch
eager mode against the floor when ``torch`` is installed (``TorchRun``, in a
process of its own: importing torch slows every step of a process), then
trains the dezero_kr model for ``--train-steps`` microgpt steps on the training
names and reports its validation loss against the unigram baseline.
"""
import bench._timing  # noqa: F401  (one BLAS thread, before NumPy loads)

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

VOCAB, BLOCK, N_EMBD, N_HEAD, N_LAYER = 27, 16, 16, 4, 1
HEAD_DIM = N_EMBD // N_HEAD
LR, BETA1, BETA2, EPS_ADAM, INIT_STD = 0.01, 0.85, 0.99, 1e-8, 0.08
TORCH_TAG = 'BENCH_MICROGPT_TORCH '


# =============================================================================
# A scalar autodiff engine in the style of steps 01-22
# =============================================================================
class Variable:
    """A box around one Python float, with the Function that created it."""
    __slots__ = ('data', 'grad', 'creator', '__weakref__')

    def __init__(self, data):
        self.data = data
        self.grad = None
        self.creator = None

    def backward(self):
        """Reverse mode from this (scalar) output to every Variable of the graph.

        The order is a topological sort by an explicit-stack depth-first search
        (post-order: a function is listed after every function that made its
        inputs), walked backwards: each function runs once all functions that
        use its output have added their share to that output's gradient.
        """
        order, seen = [], set()
        stack = [(self.creator, False)]
        while stack:
            f, expanded = stack.pop()
            if expanded:
                order.append(f)
                continue
            if f is None or f in seen:
                continue
            seen.add(f)
            stack.append((f, True))
            for x in f.inputs:
                if x.creator is not None and x.creator not in seen:
                    stack.append((x.creator, False))
        self.grad = 1.0
        for f in reversed(order):
            gy = f.output.grad
            gxs = f.backward(gy)
            for x, gx in zip(f.inputs, gxs):
                x.grad = gx if x.grad is None else x.grad + gx

    # operators (steps 20-22); Python floats on either side become constants
    def __add__(self, other):
        return Add()(self, _as_var(other))

    __radd__ = __add__

    def __mul__(self, other):
        return Mul()(self, _as_var(other))

    __rmul__ = __mul__

    def __neg__(self):
        return Neg()(self)

    def __sub__(self, other):
        return Sub()(self, _as_var(other))

    def __rsub__(self, other):
        return Sub()(_as_var(other), self)

    def __truediv__(self, other):
        return Div()(self, _as_var(other))

    def __rtruediv__(self, other):
        return Div()(_as_var(other), self)

    def __pow__(self, c):
        return Pow(c)(self)


def _as_var(x):
    return x if isinstance(x, Variable) else Variable(float(x))


class Function:
    """One scalar operation: ``forward`` on floats, ``backward(gy)`` -> one float per input."""
    __slots__ = ('inputs', 'output')
    created = 0  # functions made so far (to count the graph's nodes)

    def __call__(self, *inputs):
        y = Variable(self.forward(*[x.data for x in inputs]))
        y.creator = self
        self.inputs = inputs
        self.output = y
        Function.created += 1
        return y


class Add(Function):
    __slots__ = ()

    def forward(self, a, b):
        return a + b

    def backward(self, gy):
        return gy, gy


class Mul(Function):
    __slots__ = ()

    def forward(self, a, b):
        return a * b

    def backward(self, gy):
        a, b = self.inputs
        return gy * b.data, gy * a.data


class Neg(Function):
    __slots__ = ()

    def forward(self, a):
        return -a

    def backward(self, gy):
        return (-gy,)


class Sub(Function):
    __slots__ = ()

    def forward(self, a, b):
        return a - b

    def backward(self, gy):
        return gy, -gy


class Div(Function):
    __slots__ = ()

    def forward(self, a, b):
        return a / b

    def backward(self, gy):
        a, b = self.inputs
        return gy / b.data, -gy * a.data / (b.data * b.data)


class Pow(Function):
    __slots__ = ('c',)

    def __init__(self, c):
        self.c = c

    def forward(self, a):
        return a ** self.c

    def backward(self, gy):
        a = self.inputs[0].data
        return (gy * self.c * a ** (self.c - 1),)


class Exp(Function):
    __slots__ = ()

    def forward(self, a):
        return math.exp(a)

    def backward(self, gy):
        return (gy * self.output.data,)


class Log(Function):
    __slots__ = ()

    def forward(self, a):
        return math.log(a)

    def backward(self, gy):
        return (gy / self.inputs[0].data,)


class ReLU(Function):
    __slots__ = ()

    def forward(self, a):
        return a if a > 0 else 0.0

    def backward(self, gy):
        return (gy if self.inputs[0].data > 0 else 0.0,)


def vsum(xs):
    """x0 + x1 + ... as a chain of Add nodes."""
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


# =============================================================================
# microgpt's forward pass on scalars
# =============================================================================
def s_linear(x, W):
    """y_j = sum_i W[j][i] x_i; W is a list of rows (out, in)."""
    return [vsum([w * xi for w, xi in zip(row, x)]) for row in W]


def s_rmsnorm(x):
    ms = vsum([xi * xi for xi in x]) / len(x)
    scale = (ms + 1e-5) ** -0.5
    return [xi * scale for xi in x]


def s_softmax(z):
    m = max(v.data for v in z)  # a constant shift: the result does not depend on it
    e = [Exp()(v - m) for v in z]
    total = vsum(e)
    return [v / total for v in e]


def s_position(W, token, pos, keys, values):
    """Logits (list of V Variables) at position ``pos``; appends this position's k, v."""
    x = [t + p for t, p in zip(W['wte'][token], W['wpe'][pos])]
    x = s_rmsnorm(x)
    residual = x
    h = s_rmsnorm(x)
    q = s_linear(h, W['wq'])
    keys.append(s_linear(h, W['wk']))
    values.append(s_linear(h, W['wv']))
    heads = []
    for hd in range(N_HEAD):
        sl = slice(hd * HEAD_DIM, (hd + 1) * HEAD_DIM)
        qh = q[sl]
        scores = [vsum([a * b for a, b in zip(qh, k[sl])]) / math.sqrt(HEAD_DIM) for k in keys]
        w = s_softmax(scores)
        heads.extend(vsum([w[t] * values[t][sl][j] for t in range(len(keys))]) for j in range(HEAD_DIM))
    x = [a + b for a, b in zip(s_linear(heads, W['wo']), residual)]
    residual = x
    h = [ReLU()(v) for v in s_linear(s_rmsnorm(x), W['fc1'])]
    x = [a + b for a, b in zip(s_linear(h, W['fc2']), residual)]
    return s_linear(x, W['lm_head'])


def s_loss(W, tokens):
    """Mean over positions of -log softmax(logits)[next token] for one name (microgpt's loss)."""
    n = min(BLOCK, len(tokens) - 1)
    keys, values, losses = [], [], []
    for pos in range(n):
        probs = s_softmax(s_position(W, tokens[pos], pos, keys, values))
        losses.append(-Log()(probs[tokens[pos + 1]]))
    return vsum(losses) * (1.0 / n)


# =============================================================================
# Weights: one set in microgpt's layout (out, in), copied into each engine
# =============================================================================
# name -> (microgpt's shape, dezero_kr path, transpose into dezero_kr's (in, out) layout?)
LAYOUT = {
    'wte': ((VOCAB, N_EMBD), 'wte/W', False),
    'wpe': ((BLOCK, N_EMBD), 'wpe/W', False),
    'wq': ((N_EMBD, N_EMBD), None, True),
    'wk': ((N_EMBD, N_EMBD), None, True),
    'wv': ((N_EMBD, N_EMBD), None, True),
    'wo': ((N_EMBD, N_EMBD), 'h0/attn/c_proj/W', True),
    'fc1': ((4 * N_EMBD, N_EMBD), 'h0/mlp/c_fc/W', True),
    'fc2': ((N_EMBD, 4 * N_EMBD), 'h0/mlp/c_proj/W', True),
    'lm_head': ((VOCAB, N_EMBD), 'lm_head/W', True),
}


def init_weights(seed=0):
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, INIT_STD, shape) for name, (shape, _, _) in LAYOUT.items()}


def scalar_params(weights):
    return {name: [[Variable(float(v)) for v in row] for row in w] for name, w in weights.items()}


def build_gpt(weights):
    """``GPT(27, 16, 16, 4, 1, **MICROGPT)`` in float64 holding ``weights``."""
    from dezero_kr.models import GPT
    from dezero_kr.transformer import MICROGPT
    model = GPT(VOCAB, BLOCK, N_EMBD, N_HEAD, N_LAYER, dtype=np.float64, **MICROGPT)
    params = dict(model.named_params())
    for name, (_, path, transposed) in LAYOUT.items():
        if path is not None:
            params[path].data = (weights[name].T if transposed else weights[name]).copy()
    # c_attn/W (C, 3C) holds W_q, W_k, W_v side by side
    params['h0/attn/c_attn/W'].data = np.concatenate([weights['wq'].T, weights['wk'].T, weights['wv'].T],
                                                     axis=1).copy()
    return model


def gpt_grads_as_microgpt(model):
    """The GPT's gradients in microgpt's layout: {name: (out, in) array}."""
    g = {path: p.grad.data for path, p in model.named_params()}
    out = {}
    for name, (_, path, transposed) in LAYOUT.items():
        if path is not None:
            out[name] = g[path].T if transposed else g[path]
    ga = g['h0/attn/c_attn/W']
    for i, name in enumerate(('wq', 'wk', 'wv')):
        out[name] = ga[:, i * N_EMBD:(i + 1) * N_EMBD].T
    return out


# =============================================================================
# The NumPy floor: the same forward and backward written out by hand
# =============================================================================
def _rms_fwd(x):
    r = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-5)
    return x * r, r


def _rms_bwd(g, xhat, r):
    return r * (g - xhat * (g * xhat).mean(axis=-1, keepdims=True))


def numpy_loss_and_grads(W, tokens):
    """Loss and gradients (microgpt layout) of one name, by hand-written forward and backward."""
    n = min(BLOCK, len(tokens) - 1)
    idx, tgt = np.asarray(tokens[:n]), np.asarray(tokens[1:n + 1])
    C, H, D = N_EMBD, N_HEAD, HEAD_DIM
    # forward
    e = W['wte'][idx] + W['wpe'][:n]
    x0, r0 = _rms_fwd(e)
    h1, r1 = _rms_fwd(x0)
    q, k, v = (h1 @ W[m].T for m in ('wq', 'wk', 'wv'))
    qh, kh, vh = (a.reshape(n, H, D).transpose(1, 0, 2) for a in (q, k, v))
    s = qh @ kh.transpose(0, 2, 1) / math.sqrt(D)
    s = np.where(np.triu(np.ones((n, n), dtype=bool), 1), -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    att = (p @ vh).transpose(1, 0, 2).reshape(n, C)
    x1 = att @ W['wo'].T + x0
    h2, r2 = _rms_fwd(x1)
    a = h2 @ W['fc1'].T
    m = np.maximum(a, 0)
    x2 = m @ W['fc2'].T + x1
    z = x2 @ W['lm_head'].T
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    loss = -logp[np.arange(n), tgt].mean()
    # backward
    G = {}
    dz = np.exp(logp)
    dz[np.arange(n), tgt] -= 1
    dz /= n
    G['lm_head'] = dz.T @ x2
    dx2 = dz @ W['lm_head']
    G['fc2'] = dx2.T @ m
    da = (dx2 @ W['fc2']) * (a > 0)
    G['fc1'] = da.T @ h2
    dx1 = dx2 + _rms_bwd(da @ W['fc1'], h2, r2)
    G['wo'] = dx1.T @ att
    datt = (dx1 @ W['wo']).reshape(n, H, D).transpose(1, 0, 2)
    dp = datt @ vh.transpose(0, 2, 1)
    dvh = p.transpose(0, 2, 1) @ datt
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) / math.sqrt(D)
    dqh = ds @ kh
    dkh = ds.transpose(0, 2, 1) @ qh
    dh1 = 0
    for name, dh in (('wq', dqh), ('wk', dkh), ('wv', dvh)):
        dflat = dh.transpose(1, 0, 2).reshape(n, C)
        G[name] = dflat.T @ h1
        dh1 = dh1 + dflat @ W[name]
    dx0 = dx1 + _rms_bwd(dh1, h1, r1)
    de = _rms_bwd(dx0, x0, r0)
    G['wte'] = np.zeros_like(W['wte'])
    np.add.at(G['wte'], idx, de)
    G['wpe'] = np.zeros_like(W['wpe'])
    G['wpe'][:n] = de
    return loss, G


# =============================================================================
# microgpt's Adam, the same formula for all three
# =============================================================================
def adam_arrays(params, grads, m, v, step, num_steps):
    """In place on float64 arrays: microgpt's Adam with a linearly decaying learning rate."""
    lr_t = LR * (1 - step / num_steps)
    for name in params:
        g = grads[name]
        m[name] = BETA1 * m[name] + (1 - BETA1) * g
        v[name] = BETA2 * v[name] + (1 - BETA2) * g * g
        m_hat = m[name] / (1 - BETA1 ** (step + 1))
        v_hat = v[name] / (1 - BETA2 ** (step + 1))
        params[name] -= lr_t * m_hat / (np.sqrt(v_hat) + EPS_ADAM)


def adam_scalars(P, m, v, step, num_steps):
    """The same update on the scalar engine's Variables (a Python loop, as microgpt)."""
    lr_t = LR * (1 - step / num_steps)
    c1, c2 = 1 - BETA1 ** (step + 1), 1 - BETA2 ** (step + 1)
    for name, rows in P.items():
        mm, vv = m[name], v[name]
        for i, row in enumerate(rows):
            for j, p in enumerate(row):
                g = p.grad or 0.0
                mm[i][j] = BETA1 * mm[i][j] + (1 - BETA1) * g
                vv[i][j] = BETA2 * vv[i][j] + (1 - BETA2) * g * g
                p.data -= lr_t * (mm[i][j] / c1) / (math.sqrt(vv[i][j] / c2) + EPS_ADAM)
                p.grad = None


# =============================================================================
# The three training steps
# =============================================================================
class ScalarRun:
    def __init__(self, weights, num_steps):
        self.P = scalar_params(weights)
        self.m = {k: np.zeros(w.shape).tolist() for k, w in weights.items()}
        self.v = {k: np.zeros(w.shape).tolist() for k, w in weights.items()}
        self.num_steps = num_steps
        self.nodes = 0

    def step(self, step, tokens):
        """One training step; returns (loss, seconds forward, backward, update)."""
        t0 = time.perf_counter()
        before = Function.created
        loss = s_loss(self.P, tokens)
        t1 = time.perf_counter()
        self.nodes = Function.created - before
        loss.backward()
        t2 = time.perf_counter()
        self.grads = {k: np.array([[p.grad or 0.0 for p in row] for row in rows]) for k, rows in self.P.items()}
        t3 = time.perf_counter()
        adam_scalars(self.P, self.m, self.v, step, self.num_steps)
        t4 = time.perf_counter()
        return loss.data, (t1 - t0, t2 - t1, t4 - t3)


class TensorRun:
    def __init__(self, weights, num_steps):
        self.model = build_gpt(weights)
        self.params = [p for p in self.model.params()]
        self.m = [np.zeros_like(p.data) for p in self.params]
        self.v = [np.zeros_like(p.data) for p in self.params]
        self.num_steps = num_steps

    def forward_backward(self, tokens):
        n = min(BLOCK, len(tokens) - 1)
        x = np.array([tokens[:n]])
        y = np.array([tokens[1:n + 1]])
        loss = self.model.loss(x, y)
        self.model.cleargrads()
        loss.backward()
        return float(loss.data)

    def update(self, step):
        lr_t = LR * (1 - step / self.num_steps)
        c1, c2 = 1 - BETA1 ** (step + 1), 1 - BETA2 ** (step + 1)
        for p, m, v in zip(self.params, self.m, self.v):
            g = p.grad.data
            m *= BETA1
            m += (1 - BETA1) * g
            v *= BETA2
            v += (1 - BETA2) * g * g
            p.data -= lr_t * (m / c1) / (np.sqrt(v / c2) + EPS_ADAM)


class StaticRun(TensorRun):
    """``TensorRun``'s forward and backward as one ``dezero_kr.static_graph`` step: traced on the
    first name of each length, replayed as generated straight-line code after that."""

    def __init__(self, weights, num_steps):
        import dezero_kr
        super().__init__(weights, num_steps)

        def forward_backward(x, y):
            loss = self.model.loss(x, y)
            self.model.cleargrads()
            loss.backward()
            return loss
        self.step = dezero_kr.static_graph(forward_backward, max_cache=BLOCK + 1)

    def forward_backward(self, tokens):
        n = min(BLOCK, len(tokens) - 1)
        return float(self.step(np.array([tokens[:n]]), np.array([tokens[1:n + 1]])).data)


class NumpyRun:
    def __init__(self, weights, num_steps):
        self.W = {k: w.copy() for k, w in weights.items()}
        self.m = {k: np.zeros_like(w) for k, w in weights.items()}
        self.v = {k: np.zeros_like(w) for k, w in weights.items()}
        self.num_steps = num_steps

    def forward_backward(self, tokens):
        loss, self.grads = numpy_loss_and_grads(self.W, tokens)
        return float(loss)

    def update(self, step):
        adam_arrays(self.W, self.grads, self.m, self.v, step, self.num_steps)


class TorchRun:
    """The same step in PyTorch's eager mode (CPU, one thread, float64), if ``torch`` is
    installed: what a mature define-by-run framework costs on this model.  Idiomatic
    PyTorch: ``F.rms_norm``, ``F.scaled_dot_product_attention(is_causal=True)``,
    ``F.cross_entropy``, and microgpt's Adam as the loop of ``TensorRun.update``."""

    def __init__(self, weights, num_steps):
        import torch
        torch.set_num_threads(1)
        self.torch = torch
        self.W = {k: torch.tensor(w, requires_grad=True) for k, w in weights.items()}
        self.m = {k: torch.zeros_like(w) for k, w in self.W.items()}
        self.v = {k: torch.zeros_like(w) for k, w in self.W.items()}
        self.num_steps = num_steps

    def forward_backward(self, tokens):
        torch, W, C = self.torch, self.W, N_EMBD
        F = torch.nn.functional
        n = min(BLOCK, len(tokens) - 1)
        idx, tgt = torch.tensor(tokens[:n]), torch.tensor(tokens[1:n + 1])
        x0 = F.rms_norm(W['wte'][idx] + W['wpe'][:n], (C,), eps=1e-5)
        h1 = F.rms_norm(x0, (C,), eps=1e-5)
        q, k, v = (F.linear(h1, W[m]).view(n, N_HEAD, HEAD_DIM).transpose(0, 1) for m in ('wq', 'wk', 'wv'))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(0, 1).reshape(n, C)
        x1 = F.linear(att, W['wo']) + x0
        x2 = F.linear(F.relu(F.linear(F.rms_norm(x1, (C,), eps=1e-5), W['fc1'])), W['fc2']) + x1
        loss = F.cross_entropy(F.linear(x2, W['lm_head']), tgt)
        for p in W.values():
            p.grad = None
        loss.backward()
        return float(loss)

    def update(self, step):
        lr_t = LR * (1 - step / self.num_steps)
        c1, c2 = 1 - BETA1 ** (step + 1), 1 - BETA2 ** (step + 1)
        with self.torch.no_grad():
            for name, p in self.W.items():
                g, m, v = p.grad, self.m[name], self.v[name]
                m *= BETA1
                m += (1 - BETA1) * g
                v *= BETA2
                v += (1 - BETA2) * g * g
                p -= lr_t * (m / c1) / ((v / c2).sqrt() + EPS_ADAM)


def replay_calls(nodes):
    """``[(forward, input arrays, backward entry, its argument)]`` for ``recorded_nodes``: the
    entry a ``static_graph`` replay calls, ``backward_arrays`` on the array where the node's
    class has it (``has_array_rule``), else ``backward`` on the Variable (chosen here, once)."""
    from dezero_kr.define_and_run.plan import has_array_rule
    return [(f.forward, arrays, *((f.backward_arrays, gy.data) if has_array_rule(type(f))
                                  else (f.backward, gy)))
            for f, arrays, gy in nodes]


def recorded_nodes(loss):
    """Every Function of ``loss``'s graph once, as ``(f, its input arrays, a gradient of ones
    for its output)``: what ``rules_alone`` calls."""
    from dezero_kr.core import Variable as TensorVariable
    nodes, seen, stack = [], set(), [loss.creator]
    while stack:
        f = stack.pop()
        if f is not None and f not in seen:
            seen.add(f)
            nodes.append((f, [x.data for x in f.inputs], TensorVariable(np.ones_like(f.outputs().data))))
            stack.extend(x.creator for x in f.inputs)
    return nodes


def rules_alone(model, docs, repeat):
    """Per name, the seconds of the graph's nodes' own ``forward`` and first-order backward
    (``replay_calls``: the entry a replay calls) directly on the arrays one step recorded (no ``Function.__call__``, no layers, no
    backprop loop), timed as the steps are (``gc.collect()`` before each): what no dispatch
    could go below.  Returns ``(node count, [seconds per name])``."""
    import dezero_kr
    seconds, count = [], 0
    for tokens in docs:
        n = min(BLOCK, len(tokens) - 1)
        calls = replay_calls(recorded_nodes(
            model.loss(np.array([tokens[:n]]), np.array([tokens[1:n + 1]]))))
        count = len(calls)

        def run():
            with dezero_kr.no_grad():
                for forward, arrays, backward, gy in calls:
                    forward(*arrays)
                    backward(gy)
        seconds.append(_median_time(run, repeat)[1])
    return count, seconds


def _names(steps, seed):
    from dezero_kr.datasets import Names
    ds = Names(train=True)
    order = np.random.default_rng(seed).permutation(len(ds.names))
    return ds, [[0] + list(ds.encode(ds.names[i])) for i in order[:steps]]


def _timed_step(run, step, tokens, repeat):
    """``(loss, seconds forward + backward (median), seconds of the update)`` of one lockstep step."""
    loss, fb = _median_time(lambda: run.forward_backward(tokens), repeat)
    t0 = time.perf_counter()
    run.update(step)
    return loss, fb, time.perf_counter() - t0


def torch_worker(steps, repeat, seed):
    """PyTorch eager and the NumPy floor in lockstep, in a process of their own (importing
    torch makes every step of the process slower: its objects lengthen each gc.collect()
    and the collections inside the step); prints one tagged JSON line."""
    weights = init_weights(seed)
    torch_run, floor = TorchRun(weights, steps), NumpyRun(weights, steps)
    rows = []
    for step, tokens in enumerate(_names(steps, seed)[1]):
        lp, tp, up = _timed_step(torch_run, step, tokens, repeat)
        ln, tn, un = _timed_step(floor, step, tokens, repeat)
        rows.append(dict(torch=lp, numpy=ln, t_torch=tp + up, t_torch_fb=tp, t_numpy=tn + un, t_numpy_fb=tn))
    print(TORCH_TAG + json.dumps(rows), flush=True)


def torch_compare(steps, repeat, seed):
    """``torch_worker``'s rows, or None when torch is not installed."""
    if importlib.util.find_spec('torch') is None:
        return None
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, '-m', 'bench.microgpt', '--torch-worker', '--steps', str(steps),
                          '--repeat', str(repeat), '--seed', str(seed)],
                         capture_output=True, text=True, cwd=root, timeout=600)
    for line in out.stdout.splitlines():
        if line.startswith(TORCH_TAG):
            return json.loads(line[len(TORCH_TAG):])
    raise RuntimeError(f'bench microgpt: the PyTorch run failed (status {out.returncode}):\n{out.stderr}')


def _trace_ratios(rows):
    """The trace cost of the steps whose first call traced (a new length): the first of the
    run (which compiles the generated source) and the median of the later ones (whose source,
    the same for every length, is compiled already)."""
    traced = [r for r in rows if r['t_trace'] is not None]
    ratios = [r['t_trace'] / r['t_tensor_fb'] for r in traced]
    whole = [r['t_trace'] / r['t_tensor'] for r in traced[1:]]  # a whole eager step, with its update
    later = (f'{statistics.median(ratios[1:]):.1f}x later (= {statistics.median(whole):.1f}x a whole '
             f'eager step)' if whole else 'none later')
    return f'{ratios[0]:.1f}x first, {later}; {len(ratios)} traces'


def _median_time(fn, repeat):
    out, times = None, []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def compare(steps=10, repeat=20, seed=0, log=print):
    """Lockstep training steps of the three; returns a dict of losses, differences and times."""
    ds, docs = _names(steps, seed)
    weights = init_weights(seed)
    scalar, tensor, floor = ScalarRun(weights, steps), TensorRun(weights, steps), NumpyRun(weights, steps)
    static = StaticRun(weights, steps)
    rows, grad_diff = [], None
    for step, tokens in enumerate(docs):
        ls, (sf, sb, su) = scalar.step(step, tokens)
        lt, tt, tu = _timed_step(tensor, step, tokens, repeat)
        ln, tn, nu = _timed_step(floor, step, tokens, repeat)
        traces, t0 = static.step.stats['traces'], time.perf_counter()
        static.forward_backward(tokens)  # the first call of a length traces: timed on its own
        trace = time.perf_counter() - t0
        trace = trace if static.step.stats['traces'] > traces else None  # a length seen before: a replay
        lg, tg, gu = _timed_step(static, step, tokens, repeat)
        if lg != lt:
            raise AssertionError(f'bench microgpt: static_graph loss {lg!r} != eager {lt!r} at step {step}')
        if step == 0:  # gradients of the first step, all parameters (an update leaves them as they are)
            gt = gpt_grads_as_microgpt(tensor.model)
            grad_diff = max(max(float(np.abs(gt[k] - scalar.grads[k]).max()),
                                float(np.abs(floor.grads[k] - scalar.grads[k]).max())) for k in gt)
        n = min(BLOCK, len(tokens) - 1)
        rows.append(dict(name=ds.decode(tokens[1:-1]), positions=n, nodes=scalar.nodes, scalar=ls, tensor=lt,
                         numpy=ln, t_scalar=sf + sb + su, t_scalar_fb=sf + sb, t_tensor=tt + tu,
                         t_tensor_fb=tt, t_numpy=tn + nu, t_numpy_fb=tn, t_static=tg + gu, t_static_fb=tg,
                         t_trace=trace))
        log(f'step {step + 1:3d} {rows[-1]["name"]:>12s} ({n:2d} positions, {scalar.nodes:6d} scalar nodes): '
            f'loss scalar {ls:.15f}  dezero_kr {lt:.15f}  numpy {ln:.15f}')
    code = static.step.code  # the last plan's generated source: compiling it alone, timed
    t0 = time.perf_counter()
    compile(code, '<static_graph source, compiled again>', 'exec')
    rows[0]['t_compile'] = (time.perf_counter() - t0, len(code.splitlines()))
    return rows, grad_diff, tensor.model


def train_microgpt(model, steps, seed=0, log=print):
    """Train the microgpt-config GPT (float64) with microgpt's recipe on the training names; evaluate."""
    from dezero_kr.datasets import Names
    ds = Names(train=True)
    order = np.random.default_rng(seed + 1).permutation(len(ds.names))
    run = TensorRun.__new__(TensorRun)
    run.model, run.params, run.num_steps = model, list(model.params()), steps
    run.m = [np.zeros_like(p.data) for p in run.params]
    run.v = [np.zeros_like(p.data) for p in run.params]
    t0 = time.perf_counter()
    for step in range(steps):
        run.forward_backward([0] + list(ds.encode(ds.names[order[step % len(order)]])))
        run.update(step)
    seconds = time.perf_counter() - t0
    val_loss, baseline = _val_loss(model)
    return seconds, val_loss, baseline


def _val_loss(model):
    """Mean -log p over every validation name's characters and end mark, and the unigram baseline."""
    import dezero_kr
    from dezero_kr.datasets import Names
    train_ds, val_ds = Names(train=True), Names(train=False)
    counts = np.zeros(VOCAB)
    for name in train_ds.names:
        np.add.at(counts, train_ds.encode(name), 1)
    logp_uni = np.log(counts / counts.sum())
    total = base = 0.0
    count = 0
    with dezero_kr.no_grad(), dezero_kr.test_mode():
        for name in val_ds.names:
            tokens = [0] + list(val_ds.encode(name))
            n = min(BLOCK, len(tokens) - 1)
            z = model(np.array([tokens[:n]])).data[0]
            z = z - z.max(axis=-1, keepdims=True)
            logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
            tgt = tokens[1:n + 1]
            total -= logp[np.arange(n), tgt].sum()
            base -= logp_uni[tgt].sum()
            count += n
    return total / count, base / count


def _print_torch(torch_rows, rows):
    diff = max(abs(r['scalar'] - p['torch']) for r, p in zip(rows, torch_rows))
    med = {k: statistics.median(p[k] for p in torch_rows) for k in ('t_torch', 't_torch_fb', 't_numpy')}
    ratio = statistics.median(p['t_torch'] / p['t_numpy'] for p in torch_rows)
    ratio_fb = statistics.median(p['t_torch_fb'] / p['t_numpy_fb'] for p in torch_rows)
    print(f'PyTorch eager (its own process: CPU, 1 thread; the floor timed again beside it; largest loss '
          f'difference to the scalar engine {diff:.2e}):')
    print(f'  PyTorch        {med["t_torch"] * 1e3:9.2f} ms  (forward + backward {med["t_torch_fb"] * 1e3:.2f} ms)')
    print(f'  NumPy floor    {med["t_numpy"] * 1e3:9.2f} ms')
    print(f'  PyTorch / NumPy floor = {ratio:.1f}x per step ({ratio_fb:.1f}x forward + backward)')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=10, help='lockstep training steps of the three')
    parser.add_argument('--repeat', type=int, default=20, help='timed repeats of each tensor step')
    parser.add_argument('--train-steps', type=int, default=1000, help='then train dezero_kr alone (0: skip)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--torch-worker', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.torch_worker:
        torch_worker(args.steps, args.repeat, args.seed)
        return 0
    from dezero_kr.models import GPT
    from dezero_kr.transformer import MICROGPT
    count = GPT(VOCAB, BLOCK, N_EMBD, N_HEAD, N_LAYER, **MICROGPT).num_params()
    print(f'microgpt config: vocab {VOCAB}, block {BLOCK}, n_embd {N_EMBD}, {N_HEAD} heads, {N_LAYER} layer; '
          f'parameters: microgpt {sum(int(np.prod(s)) for s, _, _ in LAYOUT.values())}, '
          f'dezero_kr GPT {count}; float64, OPENBLAS threads = {os.environ["OPENBLAS_NUM_THREADS"]}')
    rows, grad_diff, model = compare(args.steps, args.repeat, args.seed)
    loss_diff = max(max(abs(r['scalar'] - r['tensor']), abs(r['scalar'] - r['numpy'])) for r in rows)
    print(f'largest loss difference over {len(rows)} lockstep steps: {loss_diff:.2e}; '
          f'largest gradient difference (step 1, all 4,192): {grad_diff:.2e}')
    nodes = sum(r['nodes'] for r in rows) / sum(r['positions'] for r in rows)
    med = {k: statistics.median(r[k] for r in rows)
           for k in ('t_scalar', 't_scalar_fb', 't_tensor', 't_tensor_fb', 't_numpy')}
    ratio = statistics.median(r['t_scalar'] / r['t_tensor'] for r in rows)
    ratio_fb = statistics.median(r['t_scalar_fb'] / r['t_tensor_fb'] for r in rows)
    floor = statistics.median(r['t_tensor'] / r['t_numpy'] for r in rows)
    floor_fb = statistics.median(r['t_tensor_fb'] / r['t_numpy_fb'] for r in rows)
    print(f'scalar graph: {nodes:,.0f} Function nodes (each with its output Variable) per position')
    print(f'time per training step (median over the {len(rows)} names):')
    print(f'  scalar engine  {med["t_scalar"] * 1e3:9.2f} ms  (forward + backward {med["t_scalar_fb"] * 1e3:.2f} ms)')
    print(f'  dezero_kr      {med["t_tensor"] * 1e3:9.2f} ms  (forward + backward {med["t_tensor_fb"] * 1e3:.2f} ms)')
    print(f'  NumPy floor    {med["t_numpy"] * 1e3:9.2f} ms')
    print(f'  scalar / dezero_kr = {ratio:.0f}x per step ({ratio_fb:.0f}x forward + backward); '
          f'dezero_kr / NumPy floor = {floor:.1f}x per step ({floor_fb:.1f}x forward + backward; medians of '
          f'the per-step ratios)')
    static = statistics.median(r['t_static'] / r['t_numpy'] for r in rows)
    static_fb = statistics.median(r['t_static_fb'] / r['t_numpy_fb'] for r in rows)
    print(f'  static_graph   {statistics.median(r["t_static"] for r in rows) * 1e3:9.2f} ms  '
          f'(forward + backward {statistics.median(r["t_static_fb"] for r in rows) * 1e3:.2f} ms; '
          f'losses equal to dezero_kr\'s bit for bit)')
    print(f'  static / NumPy floor = {static:.2f}x per step ({static_fb:.2f}x forward + backward); '
          f'static / dezero_kr = {statistics.median(r["t_static"] / r["t_tensor"] for r in rows):.2f}x; '
          f'first call (trace) / dezero_kr forward + backward = {_trace_ratios(rows)}')
    seconds, lines = rows[0]['t_compile']
    print(f'  compiling the generated source ({lines} lines) alone: {seconds * 1e3:.2f} ms = '
          f'{seconds / statistics.median(r["t_tensor_fb"] for r in rows):.1f}x an eager forward + backward '
          f'(the first trace of a run pays it; later lengths share the source)')
    count, alone = rules_alone(model, _names(args.steps, args.seed)[1], args.repeat)
    print(f'  the {count} nodes\' own forward + backward alone (no dispatch): '
          f'{statistics.median(alone) * 1e3:.2f} ms = '
          f'{statistics.median(a / r["t_numpy_fb"] for a, r in zip(alone, rows)):.1f}x the floor\'s forward + '
          f'backward')
    torch_rows = torch_compare(args.steps, args.repeat, args.seed)
    if torch_rows is not None:
        _print_torch(torch_rows, rows)
    if args.train_steps:
        seconds, val_loss, baseline = train_microgpt(model, args.train_steps, args.seed)
        print(f'dezero_kr trains the microgpt config for {args.train_steps} microgpt steps (one name each) '
              f'in {seconds:.1f}s ({seconds / args.train_steps * 1e3:.2f} ms/step; the scalar engine would take '
              f'~{med["t_scalar"] * args.train_steps:.0f}s): validation loss {val_loss:.4f}, '
              f'unigram baseline {baseline:.4f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
