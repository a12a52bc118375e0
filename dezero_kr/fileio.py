"""Writing and reading files: all or nothing.

One home for the file handling the rest of the package shares:

* ``atomic_write(path)``: write to a temporary file in the same folder, then
  ``os.replace`` it over ``path``.  A crash (even SIGKILL) leaves ``path``
  as it was.
* Stale temporary files: a temporary file is named
  ``.<name>.<pid>.<8 hex>.part`` after the process writing it.  A process
  killed while writing cannot remove its own file, so every ``atomic_write``
  into a folder first removes the ``.part`` files of that folder whose
  process no longer exists on this machine.  Files of live processes (another
  save in progress) are never touched, nor any file not named that way.
* ``save_npz`` / ``existing_npz_path``: ``np.savez`` written atomically, and
  the name NumPy gives it (``.npz`` appended).
* ``read_npz(path)`` (never unpickles) and ``check_array_for(value, dtype,
  shape, ...)``: the loaders read the whole file and check every key, shape
  and dtype conversion against the arrays it will replace *before* anything
  is changed.

Used by layers (``save_weights``/``load_weights``), optimizers, datasets,
downloads, the graph renderer and the plots.
"""
import contextlib
import os
import re
import uuid

import numpy as np

__all__ = ['atomic_write', 'save_npz', 'existing_npz_path', 'read_npz', 'check_array_for',
           'remove_stale_temp_files', 'temp_name']

_TEMP_RE = re.compile(r'^\..+\.(\d+)\.[0-9a-f]{8}\.part$')


def temp_name(path):
    """A new temporary file name next to ``path``: ``.<name>.<pid>.<8 hex>.part``.

    Same folder as the target, so ``os.replace`` is a rename, never a copy;
    the pid tells a later save whether the writer is still alive, and the
    random suffix lets one process (or two) write the same target at once.
    """
    folder, name = os.path.split(path)
    return os.path.join(folder, f'.{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.part')


def remove_quietly(path):
    """``os.remove(path)``, doing nothing when the file is already gone (other errors raise)."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _pid_alive(pid):
    if pid == os.getpid() or os.name == 'nt':
        # Windows: os.kill(pid, 0) would send CTRL_C_EVENT, so no file counts as stale there.
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        # PermissionError: the pid exists (another user's process): keep its file.
        return True
    return True


def remove_stale_temp_files(folder):
    """Remove ``.<name>.<pid>.<hex>.part`` files in ``folder`` whose process ``pid`` is dead.

    Returns the removed paths.  A pid that is alive (even if reused by an
    unrelated process) keeps its file: removing another writer's file would
    break its save, a leftover file only costs space until the next save.
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _TEMP_RE.match(entry.name)
        if m is None or _pid_alive(int(m.group(1))):
            continue
        with contextlib.suppress(OSError):  # a directory, or removed by another process meanwhile
            if entry.is_file(follow_symlinks=False):
                os.remove(entry.path)
                removed.append(entry.path)
    return removed


@contextlib.contextmanager
def atomic_write(path, mode='wb'):
    """Open a temporary file next to ``path``; on success rename it to ``path``.

    ``with atomic_write('out.png') as f: f.write(...)``.  If the block raises
    (or the process dies) ``path`` is untouched: it keeps its old content or
    stays absent.  Missing parent folders are created, and the temporary
    files that killed processes left in that folder are removed first
    (``remove_stale_temp_files``).
    """
    if mode not in ('w', 'wb'):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    remove_stale_temp_files(folder)
    tmp = temp_name(path)
    try:
        # 'x' creates the file with the normal umask permissions (mkstemp
        # would make it 0600, which would then stick to the final file).
        with open(tmp, mode.replace('w', 'x'), **({} if 'b' in mode else {'encoding': 'utf-8'})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise


def npz_path(path):
    """``path`` with ``.npz`` appended when missing (the name ``np.savez`` writes)."""
    path = os.fspath(path)
    return path if path.endswith('.npz') else path + '.npz'


def save_npz(path, arrays, what='save_npz'):
    """``np.savez(path, **arrays)`` written atomically (``.npz`` appended if missing, as NumPy does).

    Unlike ``atomic_write`` the folder must exist: a missing folder usually
    means a typo, so ``FileNotFoundError`` names it (``what`` names the caller).
    """
    path = npz_path(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f'{what}: folder {folder!r} does not exist (create it first) '
                                f'to write {os.path.basename(path)!r}')
    with atomic_write(path) as f:
        np.savez(f, **arrays)
    return path


def existing_npz_path(path):
    """``path``, or ``path + '.npz'`` when only that exists (the name ``save_npz`` wrote)."""
    path = os.fspath(path)
    if not os.path.exists(path) and os.path.exists(path + '.npz'):
        return path + '.npz'
    return path


def read_npz(path):
    """``{key: ndarray}`` of an ``.npz`` file, read completely (``allow_pickle=False``).

    An object array inside the file raises ``ValueError`` naming the key
    (NumPy's own message does not).
    """
    path = existing_npz_path(path)
    with np.load(path, allow_pickle=False) as npz:
        arrays = {}
        for key in npz.files:
            try:
                arrays[key] = npz[key]
            except ValueError as e:
                raise ValueError(f'{path}: array {key!r} holds Python objects (pickled data), which '
                                 f'are never loaded: {e}') from None
    return arrays


def check_array_for(value, dtype, shape, what, key, source='the file'):
    """``value`` converted to ``dtype``; raise ``ValueError`` if that would change or lose it.

    Checked: ``shape`` (unless None), and the conversion itself: strings,
    bytes, objects and other non-numbers are refused, complex into real is
    refused (it would drop the imaginary part), finite values that overflow
    ``dtype`` are refused (1e300 into float32 becomes inf), and floats into
    an integer dtype are refused unless every value is a whole number in
    range.  Float precision loss (float64 -> float32 rounding) is accepted:
    that is what a float32 parameter holds.  The message names ``what`` (the
    caller), ``key``, ``source`` (the file), the stored dtype and ``dtype``.
    """
    dtype = np.dtype(dtype)
    value = np.asarray(value)
    why = _shape_or_kind_problem(value, dtype, shape)
    if why is None:
        if value.dtype == dtype:
            return value.copy()
        with np.errstate(over='ignore', invalid='ignore'):
            out = value.astype(dtype)
            why = _overflow(value, out, dtype) if dtype.kind in 'fc' else _not_integral(value, dtype)
    if why is not None:
        target = f'{dtype}' if shape is None else f'shape {tuple(shape)} and dtype {dtype}'
        raise ValueError(f'{what}: {key!r} has shape {value.shape} and dtype {value.dtype} in {source} '
                         f'but the parameter has {target}: {why}')
    return out


def _shape_or_kind_problem(value, dtype, shape):
    """Why ``value`` cannot go into ``shape``/``dtype`` whatever its values, or None."""
    src = value.dtype
    if shape is not None and value.shape != tuple(shape):
        return 'the shapes differ'
    if src.kind not in 'biufc':
        return f'dtype kind {src.kind!r} ({src}) is not a number'
    if dtype.kind not in 'biufc':
        return f'cannot load into a non-numeric dtype {dtype}'
    if src.kind == 'c' and dtype.kind != 'c':
        return 'complex values into a real dtype would drop the imaginary part'
    return None


def _overflow(value, out, dtype):
    """Why the float/complex ``out`` lost ``value``: inf where the stored value was finite, or None."""
    finite_in = np.isfinite(value)
    if np.any(finite_in & ~np.isfinite(out)):
        return f'some values overflow {dtype} (largest magnitude {np.max(np.abs(value[finite_in]))!r})'
    return None


def _not_integral(value, dtype):
    """Why ``value`` does not fit the integer or bool ``dtype`` exactly, or None."""
    src = value.dtype
    if src.kind in 'fc' and (not np.all(np.isfinite(value)) or np.any(value != np.round(value))):
        return 'values that are not whole numbers'
    if not value.size:
        return None
    if dtype.kind == 'b':
        if np.any((value != 0) & (value != 1)):
            return 'values other than 0 and 1 into bool'
        return None
    info = np.iinfo(dtype)
    lo, hi = value.min(), value.max()
    # Compare as Python numbers: no wrap-around in a narrow dtype.
    as_number = int if src.kind in 'biu' else float
    if as_number(lo) < info.min or as_number(hi) > info.max:
        return f'values from {lo} to {hi} are out of the range of {dtype} [{info.min}, {info.max}]'
    return None
