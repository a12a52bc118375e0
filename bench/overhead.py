"""What hooks, anomaly detection and forward mode cost per op, on and off.

Workload (as ``bench.core_ops``): 10,000 mixed add/mul/sin ops on shape-(2, 2)
float64 arrays (``h = h + w``, ``h = h * w``, ``h = sin(h)`` in turn), then
backward.  Every configuration runs the same workload, interleaved with a
hand-written NumPy floor of the same math (``bench.core_ops.numpy_floor``):

=========================  ====================================================
off, after use             after a hook was registered and removed, and a
                           ``detect_anomaly`` and a ``jvp`` block have exited
no-op hook on x            ``x.register_hook(lambda g: None)`` on the input
detect_anomaly             inside ``detect_anomaly()`` (check_nan=True)
detect_anomaly(no check)   inside ``detect_anomaly(check_nan=False)``: records
                           ``created_at`` only
jvp, unrelated tangent     forward and backward inside a ``jvp`` whose tangent
                           is on another Variable: the observers' look-ups only
jvp, forward mode          ``jvp(workload, (x, w), (tx, tw))``: tangents pushed
                           through all 10,000 ops (forward only, no backward)
=========================  ====================================================

Then the claim that "off" is free: alternating pairs of child processes, one
fresh (nothing ever used) and one after use, each timing the plain workload
against the floor; the best ratios of the two must agree within noise.  As the
timing is at the mercy of the machine's load, each child also counts the Python
calls the workload makes (cProfile): equal counts mean the same code path.

    python -m bench overhead [--ops 10000] [--repeat 7] [--rounds 6]
"""
import bench._timing as timing  # noqa: I001  (first: one BLAS thread)

import argparse
import json
import subprocess
import sys
import time

import numpy as np

from bench.core_ops import numpy_floor, workload


def inputs():
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 2)), rng.uniform(0.5, 1.0, (2, 2))


def plain(n_ops, context=None, hook=False):
    """Forward + backward of the workload, optionally inside ``context()`` / with a hook on x."""
    import contextlib

    from dezero_kr import Variable
    from dezero_kr.functions_math import sin
    x0, w0 = inputs()

    def run():
        x, w = Variable(x0.copy()), Variable(w0.copy())
        if hook:
            x.register_hook(lambda g: None)
        with context() if context else contextlib.nullcontext():
            t0 = time.perf_counter()
            h = workload(x, w, sin, n_ops)
            t1 = time.perf_counter()
            h.backward()
            t2 = time.perf_counter()
        return t1 - t0, t2 - t1, x.grad.data, w.grad.data
    return run


def forward_in_jvp(n_ops, unrelated):
    """The workload inside ``jvp``: tangents on (x, w) (forward only), or only on a dummy
    Variable (forward and backward, each op paying the observers' look-ups)."""
    from dezero_kr import Variable
    from dezero_kr.autograd import jvp
    from dezero_kr.functions_math import sin
    x0, w0 = inputs()

    def run():
        x, w = Variable(x0.copy()), Variable(w0.copy())
        if not unrelated:
            t0 = time.perf_counter()
            _, t = jvp(lambda x, w: workload(x, w, sin, n_ops), (x, w),
                       (np.ones_like(x0), np.zeros_like(w0)))
            return time.perf_counter() - t0, 0.0, t.data, None
        times = []

        def f(dummy):
            t0 = time.perf_counter()
            h = workload(x, w, sin, n_ops)
            t1 = time.perf_counter()
            h.backward()
            times.extend([t1 - t0, time.perf_counter() - t1])
            return dummy
        jvp(f, (np.zeros(1),), (np.ones(1),))
        return times[0], times[1], x.grad.data, w.grad.data
    return run


def report(title, samples, n_ops):
    print(title)
    print(f'{"":26s} {"forward us/op":>16s} {"backward us/op":>16s} {"fwd vs floor":>13s} '
          f'{"bwd vs floor":>13s}')
    floor_f = min(s[0] for s in samples['numpy floor']) / n_ops * 1e6
    floor_b = min(s[1] for s in samples['numpy floor']) / n_ops * 1e6
    for name, ss in samples.items():
        f_best, f_med = timing.summary([s[0] / n_ops * 1e6 for s in ss])
        b_best, b_med = timing.summary([s[1] / n_ops * 1e6 for s in ss])
        bwd, bwd_ratio = f'{"-":>16s}', f'{"-":>13s}'
        if b_best > 0:
            bwd, bwd_ratio = f'{b_best:7.2f} ({b_med:6.2f})', f'{b_best / floor_b:12.1f}x'
        print(f'{name:26s} {f_best:7.2f} ({f_med:6.2f}) {bwd} {f_best / floor_f:12.1f}x {bwd_ratio}')


def use_everything():
    """Use each feature once and turn it off again; check the engine is back to its fresh state."""
    from dezero_kr import Variable, core, hooks
    from dezero_kr.autograd import forward as forward_mode
    from dezero_kr.autograd import detect_anomaly, jvp
    v = Variable(np.ones(1))
    v.register_hook(lambda g: None).remove()
    with detect_anomaly():
        (v * 2).backward()
    jvp(lambda v: v * 2, (v,), (np.ones(1),))
    (Variable(np.ones(1)) * 2).backward()
    state = (hooks.observers(), hooks.observed, forward_mode._thread_levels.list, len(hooks.variable_hooks))
    assert state == ([], 0, [], 0), state


def child(mode, n, repeat):
    """One process, one state ('fresh' or 'used'): best time ratios to the interleaved floor."""
    from dezero_kr import core, hooks
    assert not hooks.variable_hooks and not hooks.observed, 'not a fresh process'
    if mode == 'used':
        use_everything()
    samples = timing.interleave({'floor': numpy_floor(n), 'run': plain(n)}, repeat=repeat)
    best = {k: [min(s[i] for s in v) for i in (0, 1)] for k, v in samples.items()}
    print(json.dumps([best['run'][i] / best['floor'][i] for i in (0, 1)] + [count_calls(300)]))


def count_calls(n_ops):
    """Python function calls made by forward + backward of the workload (load-independent)."""
    import cProfile
    import pstats
    run = plain(n_ops)
    run()
    profiler = cProfile.Profile()
    profiler.runcall(run)
    return pstats.Stats(profiler).total_calls


def off_versus_fresh(n, rounds, repeat):
    """Alternate fresh and after-use processes (load drift hits both alike); best ratio of each."""
    ratios = {'fresh': [], 'used': []}
    for _ in range(rounds):
        for mode in ratios:
            out = subprocess.run([sys.executable, '-m', 'bench', 'overhead', '--child', mode,
                                  '--ops', str(n), '--repeat', str(repeat)],
                                 capture_output=True, text=True, check=True)
            ratios[mode].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {mode: [min(r[i] for r in rs) for i in (0, 1)] + [rs[0][2]]
            for mode, rs in ratios.items()}


def main(argv=()):
    parser = argparse.ArgumentParser(prog='python -m bench overhead')
    parser.add_argument('--ops', type=int, default=10_000)
    parser.add_argument('--repeat', type=int, default=7)
    parser.add_argument('--rounds', type=int, default=6, help='fresh/after-use process pairs')
    parser.add_argument('--child', choices=['fresh', 'used'], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    n = args.ops
    if args.child:
        return child(args.child, n, args.repeat)

    from dezero_kr.autograd import detect_anomaly
    use_everything()
    floor = numpy_floor(n)
    configs = {
        'numpy floor': floor,
        'off, after use': plain(n),
        'no-op hook on x': plain(n, hook=True),
        'detect_anomaly': plain(n, detect_anomaly),
        'detect_anomaly(no check)': plain(n, lambda: detect_anomaly(check_nan=False)),
        'jvp, unrelated tangent': forward_in_jvp(n, unrelated=True),
        'jvp, forward mode': forward_in_jvp(n, unrelated=False),
    }
    # Every configuration computes the same thing (checked once, outside the timing).
    _, _, gx, gw = floor()
    for name in ('off, after use', 'no-op hook on x', 'detect_anomaly', 'jvp, unrelated tangent'):
        _, _, x_grad, w_grad = configs[name]()
        assert np.allclose(x_grad, gx) and np.allclose(w_grad, gw), name
    _, _, t, _ = configs['jvp, forward mode']()
    assert np.allclose(t, _jvp_reference(n)), 'forward mode disagrees with reverse mode'

    samples = timing.interleave(configs, repeat=args.repeat)
    report(f'{n:,} mixed add/mul/sin ops on (2, 2) float64, then backward; best of '
           f'{args.repeat} (median), configurations interleaved', samples, n)

    best = off_versus_fresh(n, args.rounds, args.repeat)
    (ff, fb, fc), (uf, ub, uc) = best['fresh'], best['used']
    print(f'\nOff costs nothing: {args.rounds} alternating pairs of processes, best ratio to the '
          f'NumPy floor\n  fresh process (never used): forward {ff:.2f}x, backward {fb:.2f}x\n'
          f'  after use, turned off:      forward {uf:.2f}x, backward {ub:.2f}x\n'
          f'  after-use / fresh:          forward {uf / ff:.3f}, backward {ub / fb:.3f}\n'
          f'Python calls for 300 ops + backward (cProfile, independent of load): fresh {fc:,}, '
          f'after use {uc:,}' + (' (identical code path)' if fc == uc else ' (DIFFERENT)'))


def _jvp_reference(n):
    """d h / d x along ones, by reverse mode: the check for the forward-mode row."""
    from dezero_kr import Variable
    from dezero_kr.autograd import grad
    from dezero_kr.functions_math import sin
    x0, w0 = inputs()
    x, w = Variable(x0.copy()), Variable(w0.copy())
    h = workload(x, w, sin, n)
    # h is elementwise in x, so J @ ones = the gradient of sum(h) with respect to x.
    return grad(h, x, grad_outputs=np.ones_like(h.data))[0].data


if __name__ == '__main__':
    main(sys.argv[1:])
