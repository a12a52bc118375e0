"""Small helpers shared by the example scripts (not an example itself).

Every example is run as a script (``python examples/spiral_mlp.py``), so this
folder is first on ``sys.path`` and ``import _util`` finds this file.

* ``parser(description, epochs)``: argparse with ``--epochs``, ``--seed``,
  ``--plot DIR`` and ``--no-progress``, the options every example shares.
* ``epoch_bar(args, loader, epoch)``: a ``dezero_kr.progress`` bar over one
  epoch's batches (on standard error, erased when the epoch ends so the log
  lines on standard output stay clean), unless ``--no-progress``.
* ``save_plot(args, draw, name, ...)``: with ``--plot DIR``, draw a picture
  with a ``dezero_kr.plot`` function into ``DIR/name``; without matplotlib say
  how to get it and go on (an example never fails for a missing picture).
* ``report(name, value, start)``: the final metric line, ``결과 (result): name =
  value``, which the tests read, and the time line.

Importing this file applies the small-model BLAS policy (one BLAS thread, see
``dezero_kr.blas``; ``DEZERO_KR_BLAS_THREADS=0`` keeps BLAS's default), so every
example that trains gets it without a line of its own.  Saved files are
printed with ``dezero_kr.paths.display_path``, as in the tutorial steps.
"""
import argparse
import os
import sys
import time

from dezero_kr.blas import small_model_policy
from dezero_kr.paths import display_path
from dezero_kr.progress import progress

RESULT_PREFIX = '결과 (result):'

# Small matrices run faster on one BLAS thread (measured in docs/examples.md).
small_model_policy()


def use_utf8_safe_output():
    """Never crash on a console that cannot print Korean (replace what it cannot encode)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, 'reconfigure', None)
        if reconfigure is not None:
            reconfigure(errors='replace')


def parser(description, epochs, seed=0):
    use_utf8_safe_output()
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--epochs', type=int, default=epochs,
                   help=f'passes over the training data (default {epochs})')
    p.add_argument('--seed', type=int, default=seed, help=f'random seed (default {seed})')
    p.add_argument('--plot', metavar='DIR', default=None,
                   help='save pictures into DIR (needs matplotlib: pip install matplotlib)')
    p.add_argument('--no-progress', action='store_true', help='draw no progress bars')
    return p


def epoch_bar(args, loader, epoch):
    return progress(loader, desc=f'epoch {epoch}/{args.epochs}', leave=False,
                    disable=args.no_progress)


def save_plot(args, draw, name, *draw_args, **draw_kwargs):
    """``draw(*draw_args, to_file=DIR/name, **draw_kwargs)`` when ``--plot DIR`` was given."""
    if args.plot is None:
        return None
    os.makedirs(args.plot, exist_ok=True)
    try:
        path = draw(*draw_args, to_file=os.path.join(args.plot, name), **draw_kwargs)
    except ImportError as e:  # matplotlib is an optional extra
        print(f'[그림 생략 / plot skipped] {e}', file=sys.stderr)
        return None
    print(f'[그림 저장 / plot saved] {display_path(path)}')
    return path


def report(name, value, start, digits=4):
    """The last two lines: the final metric and the seconds since ``start`` (``time.perf_counter()``)."""
    print(f'{RESULT_PREFIX} {name} = {value:.{digits}f}')
    print(f'시간 (time): {time.perf_counter() - start:.1f} s')
