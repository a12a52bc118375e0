"""The training step of ``examples/gpt/train.py`` (default configuration) against a NumPy floor.

Configuration: vocabulary 27, block 16, n_embd 64, 4 heads, 2 layers, GELU,
LayerNorm with gain and bias, biases everywhere but lm_head, final norm,
dropout 0.1, float32, batch 32 (104,576 parameters).  One training step is
train.py's: ``model.loss(x, y)``, ``cleargrads``, ``backward``, then AdamW
(beta2 0.95, weight decay 0.1 on matrices only) after the warm-up/cosine
learning-rate hook and global gradient-norm clipping at 1.0.

The floor is the same step written out in NumPy by hand (forward, backward,
clipping, AdamW), drawing its dropout masks from NumPy's global RNG in the same
order, so with the RNG state reset before each step both see the same masks
and must compute the same loss.

    python -m bench gpt [--steps 10] [--repeat 10] [--batch-size 32]
    python -m bench gpt --heap   # the same floor and eager steps under four malloc heap states

Prints the loss of each lockstep step for both (and the largest difference),
then the median time per step of each, measured alternately, and the ratio.
"""
import bench._timing  # noqa: F401  (one BLAS thread, before NumPy loads)

import argparse  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

GELU_C, GELU_A = math.sqrt(2.0 / math.pi), 0.044715


def load_train_script():
    """``examples/gpt/train.py`` as a module (it is a script, not part of the package)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'examples', 'gpt',
                        'train.py')
    spec = importlib.util.spec_from_file_location('gpt_train_script', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# =============================================================================
# The NumPy floor: forward and backward of the GPT written out by hand
# =============================================================================
def _dropout(x, p):
    keep = np.random.rand(*x.shape) > p  # the same draws as dezero_kr's Dropout
    scale = x.dtype.type(1.0 / (1.0 - p))
    return x * keep * scale, keep, scale


def _ln_fwd(x, g, b, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    r = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps)
    xhat = xc * r
    return xhat * g + b, (xhat, r, g)


def _ln_bwd(dy, cache, grads, name):
    xhat, r, g = cache
    grads[name + '/gamma'] = (dy * xhat).reshape(-1, xhat.shape[-1]).sum(axis=0)
    grads[name + '/beta'] = dy.reshape(-1, dy.shape[-1]).sum(axis=0)
    d = dy * g
    return r * (d - d.mean(axis=-1, keepdims=True) - xhat * (d * xhat).mean(axis=-1, keepdims=True))


def _lin_fwd(x, P, name):
    y = x.reshape(-1, x.shape[-1]) @ P[name + '/W']
    b = P.get(name + '/b')
    if b is not None:
        y += b
    return y.reshape(x.shape[:-1] + (y.shape[-1],))


def _lin_bwd(dy, x, P, grads, name):
    d2, x2 = dy.reshape(-1, dy.shape[-1]), x.reshape(-1, x.shape[-1])
    grads[name + '/W'] = x2.T @ d2
    if name + '/b' in P:
        grads[name + '/b'] = d2.sum(axis=0)
    return (d2 @ P[name + '/W'].T).reshape(x.shape)


def numpy_loss_and_grads(P, idx, tgt, cfg):
    """Loss and {path: gradient} for ids ``idx`` and targets ``tgt`` (B, T); P: {path: array}."""
    B, T = idx.shape
    C, H, p = cfg['n_embd'], cfg['n_head'], cfg['dropout']
    D = C // H
    scale = 1.0 / math.sqrt(D)
    hidden = np.triu(np.ones((T, T), dtype=bool), 1)
    G, caches = {}, []
    x, keep_e, s_e = _dropout(P['wte/W'][idx] + P['wpe/W'][:T], p)
    for i in range(cfg['n_layer']):
        h = f'h{i}/'
        c = {'x0': x}
        a, c['ln1'] = _ln_fwd(x, P[h + 'ln_1/gamma'], P[h + 'ln_1/beta'])
        c['a'] = a
        qkv = _lin_fwd(a, P, h + 'attn/c_attn').reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = q @ k.transpose(0, 1, 3, 2) * scale
        s = np.where(hidden, -np.inf, s)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        att = e / e.sum(axis=-1, keepdims=True)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        c.update(q=q, k=k, v=v, att=att, y=y)
        o, c['keep1'], _ = _dropout(_lin_fwd(y, P, h + 'attn/c_proj'), p)
        x = x + o
        c['x1'] = x
        m, c['ln2'] = _ln_fwd(x, P[h + 'ln_2/gamma'], P[h + 'ln_2/beta'])
        c['m'] = m
        u = _lin_fwd(m, P, h + 'mlp/c_fc')
        t = np.tanh(GELU_C * (u + GELU_A * u * u * u))
        gu = 0.5 * u * (1 + t)
        c.update(u=u, t=t, gu=gu)
        o, c['keep2'], _ = _dropout(_lin_fwd(gu, P, h + 'mlp/c_proj'), p)
        x = x + o
        caches.append(c)
    xf, cf = _ln_fwd(x, P['ln_f/gamma'], P['ln_f/beta'])
    z = _lin_fwd(xf, P, 'lm_head').reshape(B * T, -1)
    z = z - z.max(axis=-1, keepdims=True)
    ez = np.exp(z)
    sez = ez.sum(axis=-1, keepdims=True)
    rows, cols = np.arange(B * T), tgt.reshape(-1)
    loss = (np.log(sez).sum() - z[rows, cols].sum()) / (B * T)
    # backward
    dz = ez / sez
    dz[rows, cols] -= 1
    dz /= B * T
    dx = _ln_bwd(_lin_bwd(dz.reshape(B, T, -1), xf, P, G, 'lm_head'), cf, G, 'ln_f')
    for i in reversed(range(cfg['n_layer'])):
        h, c = f'h{i}/', caches[i]
        do = dx * c['keep2'] * s_e
        dgu = _lin_bwd(do, c['gu'], P, G, h + 'mlp/c_proj')
        u, t = c['u'], c['t']
        du = dgu * (0.5 * (1 + t) + 0.5 * u * (1 - t * t) * GELU_C * (1 + 3 * GELU_A * u * u))
        dx = dx + _ln_bwd(_lin_bwd(du, c['m'], P, G, h + 'mlp/c_fc'), c['ln2'], G, h + 'ln_2')
        do = dx * c['keep1'] * s_e
        dy = _lin_bwd(do, c['y'], P, G, h + 'attn/c_proj').reshape(B, T, H, D).transpose(0, 2, 1, 3)
        att, q, k, v = c['att'], c['q'], c['k'], c['v']
        dv = att.transpose(0, 1, 3, 2) @ dy
        datt = dy @ v.transpose(0, 1, 3, 2)
        ds = att * (datt - (datt * att).sum(axis=-1, keepdims=True)) * scale
        dqkv = np.stack([ds @ k, ds.transpose(0, 1, 3, 2) @ q, dv]).transpose(1, 3, 0, 2, 4).reshape(B, T, 3 * C)
        dx = dx + _ln_bwd(_lin_bwd(dqkv, c['a'], P, G, h + 'attn/c_attn'), c['ln1'], G, h + 'ln_1')
    de = dx * keep_e * s_e
    G['wte/W'] = np.zeros_like(P['wte/W'])
    np.add.at(G['wte/W'], idx, de)
    G['wpe/W'] = np.zeros_like(P['wpe/W'])
    G['wpe/W'][:T] = de.sum(axis=0)
    return loss, G


class NumpyRun:
    """The floor's parameters, AdamW state and training step."""

    def __init__(self, model, settings):
        self.P = {path: p.data.copy() for path, p in model.named_params()}
        self.m = {k: np.zeros_like(a) for k, a in self.P.items()}
        self.v = {k: np.zeros_like(a) for k, a in self.P.items()}
        self.cfg, self.s, self.t = model.config, settings, 0

    def lr(self):
        s, t = self.s, self.t
        warmup, total, base, low = min(s['warmup'], s['steps']), s['steps'], s['lr'], s['lr'] / 10
        if warmup and t <= warmup:
            return base * t / warmup
        if t >= total:
            return low
        return low + 0.5 * (base - low) * (1 + math.cos(math.pi * (t - warmup) / (total - warmup)))

    def step(self, x, y):
        loss, G = numpy_loss_and_grads(self.P, x, y, self.cfg)
        self.t += 1
        alpha = self.lr()
        norm = math.sqrt(sum(float(np.dot(a, a)) for a in (g.ravel().astype(np.float64) for g in G.values())))
        clip = self.s['clip'] / (norm + 1e-6)
        b1, b2 = 0.9, 0.95
        lr = alpha * math.sqrt(1 - b2 ** self.t) / (1 - b1 ** self.t)
        for k, p in self.P.items():
            g = G[k] * clip if clip < 1 else G[k]
            m, v = self.m[k], self.v[k]
            m += (1 - b1) * (g - m)
            v += (1 - b2) * (g * g - v)
            if p.ndim >= 2:
                p *= 1 - alpha * self.s['weight_decay']
            p -= lr * (m / (np.sqrt(v) + 1e-8))
        return float(loss)


class TensorRun:
    """dezero_kr: train.py's model, optimizer and step."""

    def __init__(self, script, settings):
        self.model, self.opt, self.clip = script.build(settings, 27)

    def step(self, x, y):
        loss = self.model.loss(x, y)
        self.model.cleargrads()
        loss.backward()
        self.opt.update()
        return float(loss.data)


class StaticRun(TensorRun):
    """The same step as one ``dezero_kr.static_graph``: traced on the first call, then replayed."""

    def __init__(self, script, settings):
        import dezero_kr
        super().__init__(script, settings)

        def train_step(x, y):
            loss = self.model.loss(x, y)
            self.model.cleargrads()
            loss.backward()
            self.opt.update()
            return loss
        self.static = dezero_kr.static_graph(train_step)

    def step(self, x, y):
        return float(self.static(x, y).data)


class AloneRun(TensorRun):
    """The step's NumPy work and nothing else: each node of one recorded step calls its own
    ``forward`` and backward (``replay_calls``: the entry a replay calls) on that step's
    arrays (no ``Function.__call__``, no layers, no backprop loop), then the optimizer
    updates.  What a replay of the same NumPy calls could not go below (``x``, ``y`` are
    ignored: the recorded arrays are used)."""

    def __init__(self, script, settings, x, y):
        from bench.microgpt import recorded_nodes, replay_calls
        super().__init__(script, settings)
        loss = self.model.loss(x, y)
        self.model.cleargrads()
        loss.backward()
        self.calls = replay_calls(recorded_nodes(loss))

    def step(self, x, y):
        import dezero_kr
        with dezero_kr.no_grad():
            for forward, arrays, backward, gy in self.calls:
                forward(*arrays)
                backward(gy)
        self.opt.update()


def peak_bytes(fn):
    """Peak bytes in use (``tracemalloc``) during the second of two calls of ``fn``, counting
    what the first left alive (a static step keeps its arrays as buffers between calls)."""
    import tracemalloc
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        gc.collect()
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def compare(steps=10, repeat=10, batch_size=32, log=print):
    """Lockstep steps (same masks), then alternating timed steps; returns losses and times."""
    script = load_train_script()
    _, settings = script.parse_args(['--batch-size', str(batch_size)])
    tensor = TensorRun(script, settings)
    floor = NumpyRun(tensor.model, settings)
    static = StaticRun(script, settings)
    data = script.NameData(True, settings['block_size'])
    rng = np.random.default_rng(0)
    batches = [data.batch(rng, batch_size) for _ in range(steps)]
    rows = []
    extra = {}
    for i, (x, y) in enumerate(batches):
        state = np.random.get_state()
        t0 = time.perf_counter()
        lt = tensor.step(x, y)
        t1 = time.perf_counter()
        np.random.set_state(state)
        ln = floor.step(x, y)
        np.random.set_state(state)
        t2 = time.perf_counter()
        ls = static.step(x, y)
        if i == 0:
            extra['trace'] = (time.perf_counter() - t2) / (t1 - t0)
        if ls != lt:
            raise AssertionError(f'bench gpt: static_graph loss {ls!r} != eager {lt!r} at step {i + 1}')
        rows.append((lt, ln))
        log(f'step {i + 1:3d}: loss dezero_kr {lt:.7f}  numpy {ln:.7f}  static_graph {ls:.7f}')
    x, y = batches[0]
    extra['peak_eager'] = peak_bytes(lambda: tensor.step(x, y))
    extra['peak_static'] = peak_bytes(lambda: static.step(x, y))
    runs = {'dezero_kr': tensor, 'numpy': floor, 'static': static,
            'alone': AloneRun(script, settings, *batches[0])}
    times = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            gc.collect()
            t0 = time.perf_counter()
            for x, y in batches:
                run.step(x, y)
            times[name].append((time.perf_counter() - t0) / len(batches))
    return rows, times, tensor.model, extra


HEAP_STATES = {
    'default': "glibc's default malloc, nothing else alive",
    'default+plan': "glibc's default malloc, one replayed static_graph plan alive",
    'steady': 'steady_heap() (what `python -m bench` sets), nothing else alive',
    'env': 'the same thresholds from the environment (MALLOC_*_THRESHOLD_)',
}
# glibc reads these at start-up (mallopt(3)): what a user can export to get steady_heap()
HEAP_ENV = {'MALLOC_TRIM_THRESHOLD_': str(1 << 30), 'MALLOC_MMAP_THRESHOLD_': str(32 << 20)}


def heap_worker(state, repeat=8, batch_size=32):
    """In this (fresh) process: set up heap ``state``, then time the floor and eager steps
    alternately; prints one line ``HEAP <state> <floor ms> <eager ms>`` (medians)."""
    from bench import _timing
    if state == 'steady':
        _timing.steady_heap()
    script = load_train_script()
    _, settings = script.parse_args(['--batch-size', str(batch_size)])
    tensor = TensorRun(script, settings)
    floor = NumpyRun(tensor.model, settings)
    data = script.NameData(True, settings['block_size'])
    rng = np.random.default_rng(0)
    batches = [data.batch(rng, batch_size) for _ in range(10)]
    if state == 'default+plan':
        plan = StaticRun(script, settings)
        plan.step(*batches[0])
        plan.step(*batches[0])  # traced, then replayed once; kept alive below
    import resource
    times = {'numpy': [], 'dezero_kr': []}
    faults = {'numpy': 0, 'dezero_kr': 0}  # minor page faults (first touches of new pages)
    for _ in range(repeat):
        for name, run in (('numpy', floor), ('dezero_kr', tensor)):
            gc.collect()
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            for x, y in batches:
                run.step(x, y)
            times[name].append((time.perf_counter() - t0) / len(batches))
            faults[name] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    steps = repeat * len(batches)
    print(f'HEAP {state} {statistics.median(times["numpy"]) * 1e3:.2f} '
          f'{statistics.median(times["dezero_kr"]) * 1e3:.2f} {faults["numpy"] / steps:.0f} '
          f'{faults["dezero_kr"] / steps:.0f}')


def heap_states(rounds=2, repeat=8):
    """The floor and eager steps in fresh processes, one per heap state, ``rounds`` times in turn."""
    import subprocess
    env = dict(os.environ, BENCH_MALLOC='default')  # the worker sets its own state
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f'floor and eager step (ms, median of {repeat} x 10 steps) in a fresh process per heap state:')
    for _ in range(rounds):
        for state, what in HEAP_STATES.items():
            out = subprocess.run([sys.executable, '-m', 'bench', 'gpt', '--heap-worker', state,
                                  '--heap-repeat', str(repeat)], cwd=root,
                                 env=dict(env, **HEAP_ENV) if state == 'env' else env,
                                 capture_output=True, text=True, check=True).stdout
            _, _, fl, dz, ffl, fdz = next(line for line in out.splitlines() if line.startswith('HEAP ')).split()
            print(f'  {what:63s} floor {fl:>6s}  dezero_kr {dz:>6s}  '
                  f'dezero_kr / floor = {float(dz) / float(fl):.2f}x; page faults per step: '
                  f'floor {ffl}, dezero_kr {fdz}')


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m bench gpt', description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=10, help='lockstep steps (and steps per timed run)')
    parser.add_argument('--repeat', type=int, default=10, help='timed runs of each, alternating')
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--heap', action='store_true',
                        help='instead: the floor and eager steps in fresh processes under four heap states')
    parser.add_argument('--heap-rounds', type=int, default=2, help='with --heap: rounds of the states')
    parser.add_argument('--heap-repeat', type=int, default=8, help='with --heap: timed runs per state')
    parser.add_argument('--heap-worker', choices=sorted(HEAP_STATES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.heap_worker:
        return heap_worker(args.heap_worker, args.heap_repeat, args.batch_size)
    if args.heap:
        return heap_states(args.heap_rounds, args.heap_repeat)
    rows, times, model, extra = compare(args.steps, args.repeat, args.batch_size)
    diff = max(abs(a - b) / abs(b) for a, b in rows)
    print(f'train.py default config: {model.num_params():,} parameters, batch {args.batch_size}, float32, '
          f'OPENBLAS threads = {os.environ["OPENBLAS_NUM_THREADS"]}')
    print(f'largest relative loss difference over {len(rows)} lockstep steps: {diff:.1e}')
    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = [a / b for a, b in zip(times['dezero_kr'], times['numpy'])]
    print(f'time per training step (median of {args.repeat} alternating runs of {args.steps} steps):')
    print(f'  dezero_kr    {med["dezero_kr"] * 1e3:8.2f} ms')
    print(f'  NumPy floor  {med["numpy"] * 1e3:8.2f} ms')
    print(f'  dezero_kr / NumPy floor = {statistics.median(ratios):.2f}x (median of the paired ratios; '
          f'range {min(ratios):.2f}-{max(ratios):.2f})')
    ratios = [a / b for a, b in zip(times['static'], times['numpy'])]
    print(f'  static_graph {med["static"] * 1e3:8.2f} ms (losses equal to dezero_kr\'s bit for bit)')
    print(f'  static / NumPy floor = {statistics.median(ratios):.2f}x (range {min(ratios):.2f}-'
          f'{max(ratios):.2f}); static / dezero_kr = '
          f'{statistics.median(a / b for a, b in zip(times["static"], times["dezero_kr"])):.2f}x')
    print(f'  the NumPy work alone (each node\'s forward and backward on one step\'s arrays, then the '
          f'update: no dispatch) {med["alone"] * 1e3:.2f} ms = '
          f'{statistics.median(a / b for a, b in zip(times["alone"], times["numpy"])):.2f}x the floor')
    print(f'  first call (trace) / dezero_kr step = {extra["trace"]:.1f}x; peak memory of a step '
          f'(tracemalloc): dezero_kr {extra["peak_eager"] / 2**20:.2f} MiB, static replay '
          f'{extra["peak_static"] / 2**20:.2f} MiB')
    return 0


if __name__ == '__main__':
    sys.exit(main())
