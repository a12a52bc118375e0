"""Why export: dezero_kr's forward pass against ONNX Runtime running the exported file.

Two models, each at batch 1 and batch 64, float32, one thread on both sides
(one BLAS thread for NumPy, ``intra_op_num_threads=1`` for ONNX Runtime):

* the Digits CNN of ``examples/digits_cnn.py`` on (B, 1, 8, 8) images;
* the GPT of ``examples/gpt/train.py`` (vocabulary 27, block 16, n_embd 64,
  4 heads, 2 layers, GELU, LayerNorm: 104,576 parameters) on (B, 16) ids.

dezero_kr runs ``model(x)`` under ``no_grad()`` and ``test_mode()`` (no graph
is recorded); ONNX Runtime runs ``session.run`` on the file
``dezero_kr.onnx.export`` wrote (exported once at batch 1: the same file serves
batch 64).  Both compute the same numbers (the largest difference is printed).
Each timing is ``--iters`` calls; the two sides alternate ``--repeat`` times.
Reported: the best (minimum) time per call of each side and their ratio
(dezero_kr / ONNX Runtime), the estimate least moved by other processes on a
busy machine, and the median of the paired ratios next to it.

    python -m bench onnx [--iters 20] [--repeat 9]

Needs ``onnx`` and ``onnxruntime`` (``pip install -e ".[test]"``).
"""
import bench._timing as timing  # noqa: I001  (first: one BLAS thread before NumPy loads)

import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def digits_cnn():
    """The Digits CNN (random weights, seed 0) and ``make(batch)`` for its input."""
    sys.path.insert(0, os.path.join(ROOT, 'examples'))
    from digits_cnn import DigitsCNN
    from dezero_kr import Variable
    np.random.seed(0)
    model = DigitsCNN(0.3)
    model(Variable(np.zeros((1, 1, 8, 8), np.float32)))  # creates the lazy weights
    rng = np.random.default_rng(0)
    return model, lambda n: rng.standard_normal((n, 1, 8, 8)).astype(np.float32)


def gpt():
    """train.py's default GPT (random weights, seed 0) and ``make(batch)`` for (B, 16) ids."""
    from dezero_kr.transformer import GPT
    np.random.seed(0)
    model = GPT(27, 16, 64, 4, 2, dropout=0.1)
    rng = np.random.default_rng(0)
    return model, lambda n: rng.integers(0, 27, size=(n, 16))


def onnx_session(model, x, folder):
    """Export ``model`` on ``x`` into ``folder`` and open it in ONNX Runtime on one thread."""
    import onnxruntime
    import dezero_kr.onnx
    path = os.path.join(folder, 'model.onnx')
    dezero_kr.onnx.export(model, x, path)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(path, options, providers=['CPUExecutionProvider'])


def compare(name, model, make, batches, args, folder):
    """Time both sides on each batch size; print a table row per batch; return the ratios."""
    from dezero_kr import no_grad, test_mode
    session = onnx_session(model, make(1), folder)
    input_name = session.get_inputs()[0].name
    ratios = {}
    for n in batches:
        x = make(n)

        def ours():
            with no_grad(), test_mode():
                for _ in range(args.iters):
                    model(x)

        def theirs():
            for _ in range(args.iters):
                session.run(None, {input_name: x})

        with no_grad(), test_mode():
            diff = float(np.abs(model(x).data - session.run(None, {input_name: x})[0]).max())
        samples = timing.interleave({'dezero_kr': ours, 'ort': theirs}, repeat=args.repeat)
        ours_t = min(samples['dezero_kr']) / args.iters
        ort_t = min(samples['ort']) / args.iters
        paired = statistics.median(a / b for a, b in zip(samples['dezero_kr'], samples['ort']))
        ratios[(name, n)] = ours_t / ort_t
        print(f'| {name} | {n} | {ours_t * 1e3:.3f} ms | {ort_t * 1e3:.3f} ms | '
              f'{ours_t / ort_t:.1f}x | {paired:.1f}x | {diff:.1e} |')
    return ratios


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--iters', type=int, default=20, help='forward calls per timing (default 20)')
    p.add_argument('--repeat', type=int, default=9, help='alternating timings per side (default 9)')
    p.add_argument('--batches', type=int, nargs='+', default=[1, 64], help='batch sizes (default 1 64)')
    args = p.parse_args(argv)
    print('| model | batch | dezero_kr forward (best) | ONNX Runtime (best) | dezero_kr / ORT | '
          'median of paired ratios | max abs difference |')
    print('|---|---|---|---|---|---|---|')
    with tempfile.TemporaryDirectory() as folder:
        for name, build in (('Digits CNN', digits_cnn), ('GPT (train.py)', gpt)):
            model, make = build()
            compare(name, model, make, args.batches, args, folder)
    return 0


if __name__ == '__main__':
    sys.exit(main())
