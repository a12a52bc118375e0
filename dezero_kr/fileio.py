"""Writing and reading files: all or nothing.

One home for the file handling the rest of the package shares:

* ``atomic_write(path)``: write to a temporary file in the same folder, then
  ``os.replace`` it over ``path``.  A crash (even SIGKILL) leaves ``path``
  as it was.  The old file's mode and owner are kept, a symbolic link is
  written through, and a directory, FIFO or device at ``path`` is refused
  (the rename would delete it).
* Stale temporary files: a temporary file is named
  ``.<name>.<pid>.<8 hex>.part`` after the process writing it.  A process
  killed while writing cannot remove its own file, so every ``atomic_write``
  into a folder first removes the ``.part`` files of that folder whose
  process no longer exists on this machine.  Files of live processes (another
  save in progress) are never touched, nor any file not named that way.
* ``save_npz`` / ``existing_npz_path``: an ``.npz`` (the format of
  ``np.savez``: a zip of ``<key>.npy`` members) written atomically, every key
  a member name (never a keyword of ``np.savez``, so a key ``file`` or
  ``allow_pickle`` is saved like any other), and the name it wrote
  (``.npz`` appended when missing).
* ``open_regular(path, what)``: opens a file for reading only if it is a
  regular file, without blocking on a FIFO (loaders never hang on a pipe or
  read ``/dev/zero`` forever).
* ``NpzReader(path, what)``: reads an ``.npz`` member by member, headers
  first.  ``keys()`` comes from the zip's central directory and
  ``header(key)`` from the member's ``.npy`` header, without reading the data;
  a member whose header declares more (or fewer) bytes than the zip says it
  holds, or more than its compressed bytes can hold, is refused before any
  memory is allocated for it.  So the loaders check names, shapes and dtypes
  against the model first and read only the members they expect: a small file
  cannot make them allocate gigabytes (a "decompression bomb").  Nothing is
  ever unpickled.
* ``read_npz(path)`` (every member through ``NpzReader``) and
  ``check_array_for(value, dtype, shape, ...)``: the loaders check every key,
  shape and dtype conversion against the arrays it will replace *before*
  anything is changed.

Used by layers (``save_weights``/``load_weights``), optimizers, datasets,
downloads, the graph renderer and the plots.
"""
import contextlib
import math
import os
import re
import stat
import uuid
import zipfile

import numpy as np

__all__ = ['atomic_write', 'save_npz', 'existing_npz_path', 'read_npz', 'check_array_for',
           'check_header_for', 'NpzReader', 'open_regular', 'remove_stale_temp_files', 'temp_name']

_TEMP_RE = re.compile(r'^\..+\.(\d+)\.[0-9a-f]{8}\.part$')


def temp_name(path):
    """A new temporary file name next to ``path``: ``.<name>.<pid>.<8 hex>.part``.

    Same folder as the target, so ``os.replace`` is a rename, never a copy;
    the pid tells a later save whether the writer is still alive, and the
    random suffix lets one process (or two) write the same target at once.
    ``<name>`` is cut (by whole characters) when the temporary name would
    exceed the folder's longest file name (``NAME_MAX``, at most 255 bytes),
    so any name the folder can hold can be written.
    """
    folder, name = os.path.split(path)
    suffix = f'.{os.getpid()}.{uuid.uuid4().hex[:8]}.part'
    room = _name_max(folder) - 1 - len(suffix)
    name = name[:room]  # a character is at least one byte
    while len(os.fsencode(name)) > room and len(name) > 1:
        name = name[:-1]
    return os.path.join(folder, f'.{name}{suffix}')


def _name_max(folder):
    """The most bytes a file name in ``folder`` may have: ``NAME_MAX`` where known, never over 255."""
    try:
        limit = os.pathconf(folder or os.curdir, 'PC_NAME_MAX')
    except (AttributeError, OSError, ValueError):  # Windows has no pathconf; a folder not made yet
        return 255
    return min(limit, 255) if limit > 0 else 255


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
def atomic_write(path, mode='wb', what='atomic_write'):
    """Open a temporary file next to ``path``; on success rename it to ``path``.

    ``with atomic_write('out.png') as f: f.write(...)``.  If the block raises
    (or the process dies) ``path`` is untouched: it keeps its old content or
    stays absent.  Missing parent folders are created, and the temporary
    files that killed processes left in that folder are removed first
    (``remove_stale_temp_files``).

    What is at ``path`` already (checked before anything is written):

    * a regular file: replaced, keeping its permission bits and, where the
      process may set them, its owner and group (else the group alone);
      a new file gets the mode ``open()`` gives (``0o666 & ~umask``).
    * a symbolic link: written through, like ``open(path, 'w')``: the file it
      leads to (through every link) is replaced as above and the link stays.
      A link to nothing (``FileNotFoundError``) or one that cannot be
      followed (a loop: ``OSError``) is refused: no file is created for it.
    * a directory (``IsADirectoryError``), or a FIFO, device or socket
      (``FileExistsError``): refused, since the rename would delete it and
      leave a regular file in its place.

    Errors name ``what`` (the caller) and the path.  A hard link to the old
    file keeps the old content (the new file is a new inode).
    """
    if mode not in ('w', 'wb'):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    path = _write_target(os.path.abspath(path), what)
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
        _take_owner_and_mode(tmp, _existing_regular(path, what))
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise


def _write_target(path, what):
    """The file a write to the absolute ``path`` replaces: ``path``, or where its symbolic links lead."""
    if not os.path.islink(path):
        _existing_regular(path, what)
        return path
    try:
        target = os.path.realpath(path, strict=True)
    except FileNotFoundError:
        raise FileNotFoundError(f'{what}: {path!r} is a symbolic link to {os.readlink(path)!r}, which does '
                                f'not exist: not written (a save writes through a link to the file it '
                                f'leads to; create that file or remove the link)') from None
    except OSError as e:
        raise OSError(f'{what}: {path!r} is a symbolic link that cannot be followed ({e.strerror}): '
                      f'not written') from None
    _existing_regular(target, what, f'{path!r} is a symbolic link to {target!r}, which')
    return target


def _existing_regular(path, what, subject=None):
    """``os.stat(path)`` of the regular file at ``path``, None if nothing is there; refuse anything else."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    kind = _file_kind(st)
    if kind is None:
        return st
    error = IsADirectoryError if stat.S_ISDIR(st.st_mode) else FileExistsError
    raise error(f'{what}: {subject or repr(path)} is {kind}, not a regular file: not replaced (the '
                f'rename would delete it and leave a regular file in its place); choose another path')


def _take_owner_and_mode(tmp, old):
    """Give ``tmp`` the owner (where allowed, else the group alone) and permission bits of ``old``."""
    if old is None:
        return
    mode = stat.S_IMODE(old.st_mode)
    if hasattr(os, 'chown'):
        mine = os.stat(tmp)
        if (mine.st_uid, mine.st_gid) != (old.st_uid, old.st_gid):
            # Only root may give a file away; an ordinary user may still keep the group.
            for uid in (old.st_uid, -1):
                with contextlib.suppress(PermissionError):
                    os.chown(tmp, uid, old.st_gid)
                    break
            if os.stat(tmp).st_gid != old.st_gid:
                # The old group's bits were granted to that group, not to the one the file has now.
                mode &= ~(stat.S_IRWXG | stat.S_ISGID)
    # After chown, which clears the set-user/group-id bits.
    os.chmod(tmp, mode)


_KINDS = [(stat.S_ISDIR, 'a directory'), (stat.S_ISFIFO, 'a FIFO (named pipe)'),
          (stat.S_ISCHR, 'a character device'), (stat.S_ISBLK, 'a block device'),
          (stat.S_ISSOCK, 'a socket')]


def _file_kind(st):
    """None for a regular file's ``os.stat`` result, else what it is (``'a FIFO (named pipe)'``, ...)."""
    if stat.S_ISREG(st.st_mode):
        return None
    return next((kind for test, kind in _KINDS if test(st.st_mode)), 'a special file')


def open_regular(path, what):
    """``path`` opened for binary reading; ``ValueError`` naming ``what`` unless it is a regular file.

    Checked before the file is opened (``os.stat``: a FIFO without a writer
    would block ``open`` forever, ``/dev/zero`` never ends) and again on the
    opened file, which is opened with ``O_NONBLOCK`` where there is one, so a
    FIFO put there meanwhile cannot block either.
    """
    path = os.fspath(path)
    _refuse_to_read(os.stat(path), path, what)
    nonblock = getattr(os, 'O_NONBLOCK', 0)
    fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, 'O_BINARY', 0))
    try:
        _refuse_to_read(os.fstat(fd), path, what)
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, 'rb')
    except BaseException:
        os.close(fd)
        raise


def _refuse_to_read(st, path, what):
    kind = _file_kind(st)
    if kind is not None:
        raise ValueError(f'{what}: {path} is {kind}, not a regular file: only a regular file is read (a '
                         f'pipe or device can block forever or never end)')


def npz_path(path):
    """``path`` with ``.npz`` appended when missing (the name ``np.savez`` writes)."""
    path = os.fspath(path)
    return path if path.endswith('.npz') else path + '.npz'


def save_npz(path, arrays, what='save_npz'):
    """Write ``{key: array}`` as an ``.npz`` atomically (``.npz`` appended if missing, as NumPy does).

    The file is what ``np.savez`` writes (an uncompressed zip holding one
    ``<key>.npy`` per array, readable by ``np.load``), but the members are
    written here: ``np.savez(f, **arrays)`` would take a key ``file`` or
    ``allow_pickle`` as its own argument and lose or refuse that array.
    Object arrays are refused (``ValueError`` from NumPy: no pickle).
    Unlike ``atomic_write`` the folder must exist: a missing folder usually
    means a typo, so ``FileNotFoundError`` names it (``what`` names the caller).
    What is already at ``path`` is handled as ``atomic_write`` says (mode and
    owner kept, links written through, special files refused).
    A key holding a NUL character (which zip names cannot hold) raises
    ``ValueError`` naming it.
    """
    path = npz_path(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f'{what}: folder {folder!r} does not exist (create it first) '
                                f'to write {os.path.basename(path)!r}')
    for key in arrays:
        if not isinstance(key, str) or '\0' in key or not key:
            raise ValueError(f'{what}: cannot store the key {key!r} in {path} (keys are non-empty '
                             f'strings without NUL characters)')
    with atomic_write(path, what=what) as f:
        with zipfile.ZipFile(f, mode='w', compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for key, a in arrays.items():
                with zf.open(key + '.npy', mode='w', force_zip64=True) as member:
                    np.lib.format.write_array(member, np.asanyarray(a), allow_pickle=False)
    return path


def existing_npz_path(path, what='load'):
    """The file a loader should read for ``path``: the one ``save_npz(path)`` wrote.

    ``path`` itself when it ends in ``.npz``; otherwise ``path + '.npz'`` (what
    ``save_npz`` wrote) when only that exists, ``path`` when only it exists,
    and ``FileExistsError`` naming both when both exist (either could be
    meant, and silently taking one loads the wrong weights).  When neither
    exists ``path`` is returned and opening it raises ``FileNotFoundError``.
    """
    path = os.fspath(path)
    if path.endswith('.npz'):
        return path
    with_npz = path + '.npz'
    if os.path.exists(with_npz):
        if os.path.exists(path):
            raise FileExistsError(f'{what}: both {path!r} and {with_npz!r} exist; save_weights({path!r}) '
                                  f'writes {with_npz!r}: pass the full name of the file to load')
        return with_npz
    return path


def read_npz(path, what='read_npz'):
    """``{key: ndarray}`` of every member of an ``.npz`` file (never unpickles).

    Each member goes through ``NpzReader``: errors are ``ValueError`` naming
    the file and the key (object arrays, sizes that do not add up, corrupt
    data) or the file (not an ``.npz``).
    """
    with NpzReader(existing_npz_path(path, what), what) as npz:
        return {key: npz.read(key) for key in npz.keys()}


# The most a deflate stream can expand (RFC 1951: 258 bytes per 2-bit code,
# about 1032:1), with room for the stream's own few bytes.
_DEFLATE_MAX_RATIO = 1032
_NPY_MAGIC = b'\x93NUMPY'
_READ_CHUNK = 1 << 24


class NpzReader:
    """An ``.npz`` file read member by member, each member's header before its data.

    ``with NpzReader(path, what) as npz:`` then ``npz.keys()`` (the member
    names without ``.npy``, in file order, from the zip's central directory),
    ``npz.header(key)`` -> ``(shape, dtype)`` from the ``.npy`` header (a few
    hundred bytes are decompressed, not the data) and ``npz.read(key)`` ->
    ndarray.  ``header`` refuses a member whose declared
    ``prod(shape) * itemsize`` differs from the bytes the zip directory says
    the member holds (truncated or over-declared), or exceeds what its
    compressed bytes can expand to (stored: equal, deflate: 1032x), so no
    declared shape can make ``read`` allocate more than the file can hold.
    Object arrays are refused (never unpickled).

    Every error is a ``ValueError`` naming ``what`` (the caller), the file and,
    for a member, its key: a path that is not a regular file (a directory, a
    FIFO, a device such as ``/dev/zero``: refused before reading, without
    blocking, see ``open_regular``), a file that is not a zip (a plain
    ``.npy`` is named as such), a member that is not an ``.npy``, a
    duplicated key, a bad header, a compression other than stored/deflate, a
    size that does not add up, or data that is cut short or fails its CRC
    check.
    """

    def __init__(self, path, what='NpzReader'):
        self.path, self.what = os.fspath(path), what
        self._file = open_regular(self.path, what)
        self._zip = None
        self._members, self._headers = {}, {}
        try:
            try:
                self._zip = zipfile.ZipFile(self._file)
            except zipfile.BadZipFile:
                raise ValueError(self._not_a_zip()) from None
            for info in self._zip.infolist():
                self._add_member(info)
        except BaseException:
            self.close()
            raise

    def _not_a_zip(self):
        self._file.seek(0)
        if self._file.read(len(_NPY_MAGIC)) == _NPY_MAGIC:
            return (f'{self.what}: {self.path} is a single .npy array, not an .npz archive of named '
                    f'arrays (the format save_weights and Optimizer.save write)')
        return (f'{self.what}: {self.path} is not an .npz file (not a zip archive, or a truncated one: '
                f'its central directory is missing)')

    def _add_member(self, info):
        name = info.filename
        if not name.endswith('.npy') or info.is_dir():
            raise ValueError(f'{self.what}: {self.path} holds {name!r}, which is not an .npy array '
                             f'(an .npz holds only <key>.npy members)')
        key = name[:-4]
        if key in self._members:
            raise ValueError(f'{self.what}: {self.path} holds the key {key!r} twice')
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ValueError(f'{self.what}: {self.path}: {key!r} uses zip compression method '
                             f'{info.compress_type}; only stored and deflate (np.savez, '
                             f'np.savez_compressed) are read')
        self._members[key] = info

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Close the zip file and the file under it."""
        if self._zip is not None:
            self._zip.close()
        self._file.close()

    def keys(self):
        """The keys (member names without ``.npy``) in file order; nothing is decompressed."""
        return list(self._members)

    def _error(self, key, why):
        return ValueError(f'{self.what}: {self.path}: {key!r} {why}')

    def header(self, key):
        """``(shape, dtype)`` of ``key`` from its ``.npy`` header, sizes checked; no data is read."""
        if key not in self._headers:
            self._headers[key] = self._read_header(key)
        shape, dtype, _, _ = self._headers[key]
        return shape, dtype

    def _read_header(self, key):
        info = self._members[key]
        try:
            with self._zip.open(info) as f:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
                else:
                    raise ValueError(f'.npy format version {version} is not read here')
                offset = f.tell()
        except (EOFError, zipfile.BadZipFile, OSError) as e:
            raise self._error(key, f'cannot be read (truncated or corrupt): {e}') from None
        except ValueError as e:
            raise self._error(key, f'has no valid .npy header: {e}') from None
        if dtype.hasobject:
            raise self._error(key, f'holds Python objects (pickled data, dtype {dtype}), which are '
                                   f'never loaded')
        nbytes = math.prod(shape) * dtype.itemsize
        held = info.file_size - offset
        if nbytes != held:
            raise self._error(key, f'declares shape {shape} and dtype {dtype} ({nbytes:,} bytes) but '
                                   f'the archive says the member holds {held:,} bytes of data: the file '
                                   f'is truncated or corrupt')
        limit = info.compress_size * (1 if info.compress_type == zipfile.ZIP_STORED else _DEFLATE_MAX_RATIO)
        if info.file_size > limit + 1024:
            raise self._error(key, f'declares {info.file_size:,} bytes, more than its '
                                   f'{info.compress_size:,} compressed bytes can hold: the file is corrupt')
        return shape, dtype, fortran, offset

    def read(self, key):
        """The array ``key`` (its header checked first, see ``header``), read in chunks."""
        shape, dtype = self.header(key)
        fortran, offset = self._headers[key][2:]
        out = np.empty(math.prod(shape), dtype=dtype)
        buf = memoryview(out.view(np.uint8).reshape(-1)) if out.nbytes else memoryview(b'')
        try:
            with self._zip.open(self._members[key]) as f:
                f.read(offset)
                done = 0
                while done < len(buf):
                    n = f.readinto(buf[done:done + _READ_CHUNK])
                    if not n:
                        raise EOFError(f'the data ends after {done:,} of {len(buf):,} bytes')
                    done += n
                f.read(1)  # reaching the end checks the CRC
        except (EOFError, zipfile.BadZipFile, OSError, ValueError) as e:
            raise self._error(key, f'cannot be read (truncated or corrupt): {e}') from None
        return out.reshape(shape[::-1]).T if fortran else out.reshape(shape)


def check_header_for(shape, stored_dtype, dtype, target_shape, what, key, source='the file'):
    """Raise ``ValueError`` (as ``check_array_for``) when an array of ``shape`` and ``stored_dtype``
    cannot go into ``target_shape``/``dtype`` whatever its values; checked from a header, before reading.
    """
    why = _shape_or_kind_problem(shape, np.dtype(stored_dtype), np.dtype(dtype), target_shape)
    if why is not None:
        _raise_conversion(shape, stored_dtype, dtype, target_shape, what, key, source, why)


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
    why = _shape_or_kind_problem(value.shape, value.dtype, dtype, shape)
    if why is None:
        if value.dtype == dtype:
            return value.copy()
        with np.errstate(over='ignore', invalid='ignore'):
            out = value.astype(dtype)
            why = _overflow(value, out, dtype) if dtype.kind in 'fc' else _not_integral(value, dtype)
    if why is not None:
        _raise_conversion(value.shape, value.dtype, dtype, shape, what, key, source, why)
    return out


def _raise_conversion(shape, src, dtype, target_shape, what, key, source, why):
    target = f'{dtype}' if target_shape is None else f'shape {tuple(target_shape)} and dtype {dtype}'
    raise ValueError(f'{what}: {key!r} has shape {tuple(shape)} and dtype {src} in {source} '
                     f'but the parameter has {target}: {why}')


def _shape_or_kind_problem(value_shape, src, dtype, shape):
    """Why an array of ``value_shape``/``src`` cannot go into ``shape``/``dtype`` whatever its values."""
    if shape is not None and tuple(value_shape) != tuple(shape):
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
