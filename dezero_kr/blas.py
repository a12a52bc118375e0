"""How many threads NumPy's BLAS (OpenBLAS, MKL, ...) may use, and the policy for small models.

NumPy hands every matrix product to a BLAS library, which by default starts one
thread per CPU core.  For the small matrices of the examples and tutorial steps
(a few hundred rows at most) those threads cost more than they save: each
product is split into slices too small to pay for waking the threads, and on a
machine where other programs keep the cores busy the threads spin and wait for
one another.  On the 2-core reference machine under load,
``examples/digits_mlp.py`` took 100.7 s with the default threads and 11.4 s
with one thread.

**Policy for small models**: one BLAS thread.  Every example and tutorial step
that trains calls ``small_model_policy()`` once at start-up; the environment
variable ``DEZERO_KR_BLAS_THREADS`` overrides it (a positive count, or ``0`` /
``default`` to leave BLAS as it is).  Large models (matrices of thousands of
rows) gain from more threads: call ``set_blas_threads(n)`` yourself.

The thread count is changed at run time through ``threadpoolctl`` (a dependency
of ``pip install dezero_kr``: small, pure Python, what scikit-learn uses), so it
works after NumPy has been imported, unlike ``OPENBLAS_NUM_THREADS``, which is
read only once when the BLAS library loads.  Where it is missing anyway (a
checkout used without installing), ``small_model_policy`` warns and goes on.
"""
import operator
import os
import warnings

ENV_THREADS = 'DEZERO_KR_BLAS_THREADS'
SMALL_MODEL_THREADS = 1

_THREADPOOLCTL_HINT = ('threadpoolctl is not installed, so the BLAS thread count cannot be set: '
                 'pip install threadpoolctl  (or pip install -e . from the repository root)')

__all__ = ['set_blas_threads', 'blas_threads', 'small_model_policy', 'ENV_THREADS',
           'SMALL_MODEL_THREADS']


def _threadpoolctl():
    try:
        import threadpoolctl  # a dependency, imported only when a limit is asked for
    except ImportError as e:
        raise ImportError(_THREADPOOLCTL_HINT) from e
    return threadpoolctl


def _thread_count(n, where):
    if isinstance(n, bool):
        raise TypeError(f'{where}: the thread count must be an integer, got {n!r}')
    try:
        count = operator.index(n)
    except TypeError:
        raise TypeError(f'{where}: the thread count must be an integer, '
                        f'got {type(n).__name__} {n!r}') from None
    if count < 1:
        raise ValueError(f'{where}: the thread count must be at least 1, got {count}')
    return count


def set_blas_threads(n):
    """Let NumPy's BLAS use at most ``n`` threads, now; as a context manager, only inside ``with``.

    ``set_blas_threads(1)`` keeps the limit for the rest of the process;
    ``with set_blas_threads(1): ...`` restores the previous counts on leaving the
    block (also when it raises).  Only the BLAS libraries are limited (OpenMP
    pools of other libraries are left alone).  Results do not depend on the
    thread count beyond float rounding of sums done in another order.

    Args:
        n: the thread count, an integer >= 1.

    Returns:
        the ``threadpoolctl.threadpool_limits`` object: a context manager whose
        exit (or ``restore_original_limits()``) puts back the previous counts.

    Raises:
        TypeError: ``n`` is not an integer (``True``, ``1.5``, ``'2'``).
        ValueError: ``n`` < 1.
        ImportError: threadpoolctl is not installed; the message says how to get it.
    """
    count = _thread_count(n, 'set_blas_threads')
    return _threadpoolctl().threadpool_limits(limits=count, user_api='blas')


def blas_threads():
    """The largest thread count among the loaded BLAS libraries (None when threadpoolctl finds none).

    Raises ImportError (naming ``pip install threadpoolctl``) without threadpoolctl.
    """
    counts = [info['num_threads'] for info in _threadpoolctl().threadpool_info()
              if info.get('user_api') == 'blas']
    return max(counts) if counts else None


def small_model_policy():
    """Apply the small-model policy for a script: one BLAS thread, or ``$DEZERO_KR_BLAS_THREADS``.

    ``DEZERO_KR_BLAS_THREADS`` unset: ``set_blas_threads(1)``; a positive
    integer: that many threads; ``0`` or ``default``: BLAS's own default (no
    change).  Meant for scripts (examples, tutorial steps), so a missing
    threadpoolctl is not an error: a ``RuntimeWarning`` says how to install it
    and the script goes on with BLAS's default threads.

    Returns:
        the thread count set, or None when nothing was changed.

    Raises:
        ValueError: ``DEZERO_KR_BLAS_THREADS`` is neither a non-negative integer
            nor ``default``.
    """
    raw = os.environ.get(ENV_THREADS, '').strip()
    if raw.lower() in ('0', 'default'):
        return None
    if not raw:
        count = SMALL_MODEL_THREADS
    else:
        try:
            count = int(raw)
        except ValueError:
            count = -1
        if count < 1:
            raise ValueError(f'{ENV_THREADS} must be a thread count >= 1, or 0 / "default" for '
                             f"BLAS's default; got {raw!r}")
    try:
        set_blas_threads(count)
    except ImportError as e:
        warnings.warn(f'{e}.  Training small models can be several times slower on a busy machine.',
                      RuntimeWarning, stacklevel=2)
        return None
    return count
