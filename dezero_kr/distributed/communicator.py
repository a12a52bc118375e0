"""MPI: ``init``, ``find_mpiexec`` and the ``Communicator`` (see the ``dezero_kr.distributed`` docstring)."""
import atexit
import contextlib
import json
import os
import shutil
import signal
import sys
import time
import traceback

import numpy as np

from dezero_kr import cuda
from dezero_kr.progress import progress as _progress
from dezero_kr.distributed.buckets import check_same_layout, make_buckets, named_params

INSTALL_HINT = 'pip install -e ".[mpi]"  (mpi4py and the mpich wheel)'

# Environment variables in which MPI launchers (MPICH's hydra, Open MPI, PMIx) give each process
# the number of ranks.
LAUNCHER_SIZE_VARS = ('PMI_SIZE', 'OMPI_COMM_WORLD_SIZE', 'MPI_LOCALNRANKS', 'PMIX_SIZE')
LAUNCHER_RANK_VARS = ('PMI_RANK', 'OMPI_COMM_WORLD_RANK', 'PMIX_RANK')


def launcher_size():
    """The number of ranks an MPI launcher says it started, or None when not under a launcher."""
    return _launcher_number(LAUNCHER_SIZE_VARS)


def _launcher_number(names):
    """The first of the environment variables ``names`` that holds a whole number, or None."""
    for name in names:
        value = os.environ.get(name)
        if value and value.strip().isdigit():
            return int(value)
    return None


def find_mpiexec():
    """The ``mpiexec`` to start jobs with: the one installed beside this Python (the ``mpich``
    wheel's, which matches mpi4py) when present, else the first on ``PATH``.

    Raises FileNotFoundError naming ``pip install -e ".[mpi]"`` when there is none.
    """
    beside = os.path.join(os.path.dirname(sys.executable), 'mpiexec')
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which('mpiexec')
    if found is None:
        raise FileNotFoundError(f'find_mpiexec: no mpiexec beside {sys.executable} or on PATH; '
                                f'install the MPI extra: {INSTALL_HINT}')
    return found


_MPI = None  # the mpi4py.MPI module once imported


def _mpi():
    """The ``mpi4py.MPI`` module (imported on first use: it is an optional extra)."""
    global _MPI
    if _MPI is None:
        # Kept after the first call: an import statement per all-reduce cost 1.5 us (measured).
        from mpi4py import MPI  # optional extra (pip install -e ".[mpi]"): imported here, not at the top
        _MPI = MPI
    return _MPI


# =============================================================================
# init and the communicator
# =============================================================================
def init(mpi_comm=None, abort_on_error=True):
    """Start (or join) the MPI job and return a ``Communicator``.

    Args:
        mpi_comm: an ``mpi4py`` communicator to use (default ``MPI.COMM_WORLD``).
        abort_on_error: when there is more than one rank, keep the
            ``sys.excepthook`` the import installed, now calling ``MPI_Abort``
            after printing the exception with the rank (see
            ``Communicator.abort``), and make a rank that ends with
            ``sys.exit(status)``, status not 0, abort the job with that status
            (``_install_exit_hooks``).  False: take the import's hook back.

    Under ``mpiexec -n R`` every process gets ``rank`` 0..R-1 and ``size`` R.
    Run alone (no ``mpiexec``) it returns ``rank`` 0, ``size`` 1, also without
    mpi4py.  Raises ImportError, naming ``pip install -e ".[mpi]"``, when the
    process was started by an MPI launcher but mpi4py cannot be imported (going
    on alone would silently train R unrelated models).
    """
    if mpi_comm is None:
        try:
            mpi_comm = _mpi().COMM_WORLD
        except ImportError as e:
            n = launcher_size()
            if n is not None and n > 1:
                raise ImportError(
                    f'dezero_kr.distributed.init: this process was started by an MPI launcher as '
                    f'one of {n} ranks, but mpi4py cannot be imported ({e}). Install the MPI '
                    f'extra: {INSTALL_HINT}') from e
            return Communicator(None)
    comm = Communicator(mpi_comm)
    if not abort_on_error:
        _remove_pre_init_hook()
    elif comm.size > 1:
        install_excepthook(comm)
        _install_exit_hooks(comm)
    return comm


class Communicator:
    """The ranks of one job: ``rank``, ``size``, collectives on arrays and rank-0 helpers.

    ``mpi_comm`` is the ``mpi4py`` communicator, or None for a process running
    alone without mpi4py (then every collective returns its input).
    """

    def __init__(self, mpi_comm):
        self.mpi_comm = mpi_comm
        self.rank = 0 if mpi_comm is None else mpi_comm.Get_rank()
        self.size = 1 if mpi_comm is None else mpi_comm.Get_size()
        self._mean_layout = self._gather_layout = None  # agreed by every rank (see _exchange)

    def __repr__(self):
        backend = 'mpi4py' if self.mpi_comm is not None else 'no MPI'
        return f'<Communicator rank {self.rank} of {self.size} ({backend})>'

    @property
    def is_root(self):
        """True on rank 0, the rank that logs, draws progress bars and writes files."""
        return self.rank == 0

    # --- collectives ----------------------------------------------------------------
    def barrier(self):
        """Wait until every rank has arrived here."""
        if self.size > 1:
            self.mpi_comm.Barrier()

    def allreduce_sum(self, buf, cuda_aware=False):
        """Sum the contiguous array ``buf`` over all ranks, in place; returns the summed array.

        A CuPy array is copied to the host and back unless ``cuda_aware`` (then
        MPI reads device memory itself; needs a CUDA-aware MPI build).
        """
        if self.size == 1:
            return buf
        MPI = _mpi()
        if isinstance(buf, np.ndarray) or cuda_aware:
            self.mpi_comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
            return buf
        host = cuda.as_numpy(buf)
        self.mpi_comm.Allreduce(MPI.IN_PLACE, host, op=MPI.SUM)
        buf[...] = cuda.as_cupy(host)
        return buf

    def bcast_array(self, buf, root=0):
        """Overwrite the contiguous array ``buf`` on every rank with rank ``root``'s values."""
        if self.size > 1:
            if isinstance(buf, np.ndarray):
                self.mpi_comm.Bcast(buf, root=root)
            else:
                host = cuda.as_numpy(buf)
                self.mpi_comm.Bcast(host, root=root)
                buf[...] = cuda.as_cupy(host)
        return buf

    def allgather_json(self, obj):
        """Every rank's ``obj`` in rank order (a list of ``size``): it travels as JSON text
        (so lists come back for tuples), never pickled.  A collective: every rank calls it."""
        data = np.frombuffer(json.dumps(obj).encode(), dtype=np.uint8)
        if self.size == 1:
            return [json.loads(data.tobytes())]
        sizes = np.empty(self.size, dtype=np.int64)
        self.mpi_comm.Allgather(np.array([data.size], dtype=np.int64), sizes)
        out = np.empty(int(sizes.sum()), dtype=np.uint8)
        self.mpi_comm.Allgatherv(data, [out, sizes])
        ends = np.cumsum(sizes)
        return [json.loads(out[end - n:end].tobytes()) for n, end in zip(sizes.tolist(), ends.tolist())]

    def allgather_array(self, values):
        """Stack the equal-shaped NumPy arrays ``values`` of every rank: shape ``(size,) + values.shape``.

        Raises ValueError on every rank, naming the ranks and their shapes and
        dtypes, when they differ (see ``_exchange``: checked once per change).
        """
        values = np.ascontiguousarray(values)
        if self.size == 1:
            return values[None].copy()
        raw = values.reshape(-1).view(np.uint8)

        def send(layout, ok):
            block = np.zeros(layout[0] * layout[2] + 1, dtype=np.uint8)
            if ok:
                block[:-1] = raw
                block[-1] = 1
            blocks = np.empty((self.size, block.size), dtype=np.uint8)
            self.mpi_comm.Allgather(block, blocks)
            return blocks if blocks[:, -1].all() else None

        layout = [values.size, str(values.dtype), values.dtype.itemsize, list(values.shape)]
        blocks = self._exchange('Communicator.allgather_array', '_gather_layout', layout, send)
        return blocks[:, :-1].copy().view(values.dtype).reshape((self.size,) + values.shape)

    def mean(self, value, weight=1.0):
        """The weighted mean ``sum_r w_r v_r / sum_r w_r`` of a number or array over all ranks.

        Returns a float for a scalar ``value``, a float64 array for an array
        (the same on every rank).  ``weight`` is usually the rank's sample count.
        Raises ValueError when the weights sum to zero, and on every rank when
        the ranks' values differ in shape (naming the ranks and shapes).
        """
        v = np.asarray(cuda.as_numpy(value), dtype=np.float64)

        def send(layout, ok):
            buf = np.zeros(layout[0] + 2)
            if ok:
                buf[:-2] = v.ravel()
                buf[:-2] *= weight
                buf[-2] = weight
                buf[-1] = 1
            self.allreduce_sum(buf)
            return buf if buf[-1] == self.size else None

        buf = self._exchange('Communicator.mean', '_mean_layout', [v.size, 'shape', 0, list(v.shape)],
                             send)
        if buf[-2] == 0:
            raise ValueError(f'Communicator.mean: the weights of the {self.size} rank(s) sum to 0')
        out = buf[:-2] / buf[-2]
        return float(out[0]) if v.ndim == 0 else out.reshape(v.shape)

    def _exchange(self, what, attr, layout, send):
        """One collective whose message size depends on ``layout``, checked to agree between ranks.

        ``send(layout, ok)`` runs the collective with a message sized by
        ``layout`` (``[count, dtype, itemsize, shape]``) and a flag ``ok``; it
        returns the result, or None when some rank's flag was not set.  The
        last layout all ranks agreed on is kept in ``attr``: while this rank's
        is the same, a call costs the one collective.  A rank whose layout
        changed sends a message of the agreed size with the flag cleared, so
        the others learn of it without a message of a size they do not
        expect; then every rank exchanges its layout (``allgather_json``), and
        raises ValueError naming the ranks that differ, or agrees on the new one.
        """
        for _ in range(2):  # after one agreement every rank sends its flag: a second try succeeds
            agreed = getattr(self, attr)
            if agreed != layout:
                if agreed is not None:
                    send(agreed, False)
                self._agree(what, attr, layout)
            result = send(layout, True)
            if result is not None:
                return result
            self._agree(what, attr, layout)  # another rank's changed: raises unless it matches
        raise no_agreement(what)

    def _agree(self, what, attr, layout):
        everyone = self.allgather_json(layout)
        differ = [r for r in range(self.size) if everyone[r] != everyone[0]]
        if differ:
            setattr(self, attr, None)  # every rank raises: the next call agrees afresh
            raise ValueError(f'{what}: the ranks differ: ' + '; '.join(
                f'rank {r} has {_describe_layout(everyone[r])}, rank 0 {_describe_layout(everyone[0])}'
                for r in differ[:3]))
        setattr(self, attr, everyone[0])

    def bcast_params(self, target, root=0):
        """Copy rank ``root``'s parameter values to every rank (in place).

        ``target`` is a Layer/Model or an iterable of Parameters.  Parameters
        without data yet (lazy layers before their first forward pass) are left
        alone.  First checks that every rank has the same parameter layout
        (names, shapes, dtypes) and raises ValueError naming the ranks that differ.
        """
        named = named_params(target)
        check_same_layout(self, named, 'bcast_params')
        if self.size == 1:
            return
        for bucket in make_buckets([p for _, p in named if p.data is not None]):
            buf = bucket.xp.empty(bucket.total, dtype=bucket.dtype)
            if self.rank == root:
                for p, start, stop in bucket.entries:
                    buf[start:stop] = p.data.reshape(-1)
            self.bcast_array(buf, root=root)
            if self.rank != root:
                for p, start, stop in bucket.entries:
                    p.data[...] = buf[start:stop].reshape(p.data.shape)

    # --- rank-0 helpers ---------------------------------------------------------------
    def print(self, *args, **kwargs):
        """``print`` on rank 0 only (flushed, so lines from a job appear at once)."""
        if self.is_root:
            kwargs.setdefault('flush', True)
            print(*args, **kwargs)

    def progress(self, iterable=None, **kwargs):
        """``dezero_kr.progress.progress`` on rank 0; the other ranks draw nothing."""
        kwargs['disable'] = kwargs.get('disable', False) or not self.is_root
        return _progress(iterable, **kwargs)

    def root_only(self, fn, *args, **kwargs):
        """Call ``fn(*args, **kwargs)`` on rank 0 only, then wait for every rank (so a file
        it writes is complete before any rank goes on).  Returns fn's result on rank 0, None
        elsewhere."""
        result = fn(*args, **kwargs) if self.is_root else None
        self.barrier()
        return result

    def save_weights(self, model, path):
        """``model.save_weights(path)`` written by rank 0 (all ranks hold the same values).
        The file loads into a single-process model with ``load_weights``."""
        self.root_only(model.save_weights, path)

    # --- failure -------------------------------------------------------------------
    def abort(self, message, errorcode=1):
        """Print ``message`` (prefixed with this rank) to standard error and end every rank of the job.

        Alone (size 1) it raises SystemExit(errorcode) instead.
        """
        sys.stderr.write(f'dezero_kr.distributed: rank {self.rank} of {self.size}: {message}\n')
        sys.stderr.flush()
        if self.size > 1:
            # MPI_Abort tears the job down at once; mpiexec may not yet have forwarded
            # what this rank just wrote (seen: 1 run in ~10 lost the message).
            time.sleep(0.5)
            self.mpi_comm.Abort(errorcode)
        raise SystemExit(errorcode)

    @contextlib.contextmanager
    def abort_on_error(self):
        """``with comm.abort_on_error():`` -- an exception leaving the block aborts the whole job
        (traceback, rank and error on standard error).  ``SystemExit(0)`` passes through."""
        try:
            yield self
        except SystemExit as e:
            if e.code in (None, 0) or self.size == 1:
                raise
            self.abort(f'exited with status {e.code}; aborting the job (MPI_Abort)')
        except BaseException as e:
            if self.size == 1:
                raise
            _abort_for_exception(self, type(e), e, e.__traceback__)


def no_agreement(what):
    """The RuntimeError for ranks that agreed on a layout yet still report a change."""
    return RuntimeError(f'{what}: the ranks agreed on their layout, yet a rank still reports a '
                        f'change (a Communicator whose allreduce_sum does not sum over the ranks?)')


def _describe_layout(layout):
    shape = tuple(layout[3])
    return f'shape {shape}' if layout[1] == 'shape' else f'{shape} {layout[1]}'


def _abort_for_exception(comm, exc_type, exc, tb):
    traceback.print_exception(exc_type, exc, tb, file=sys.stderr)
    comm.abort(f'raised {exc_type.__name__}: {exc}; aborting all {comm.size} ranks (MPI_Abort)')


class _AbortHook:
    """The ``sys.excepthook`` of a rank of a job of more than one rank: an uncaught exception
    (not ``SystemExit``) ends every rank of the job instead of leaving the others waiting.

    Installed when ``dezero_kr.distributed`` is imported under a launcher of more than one
    rank (``comm`` None: ``_end_before_init``), given its communicator by ``init()``
    (``_abort_for_exception``: ``MPI_Abort``).
    """

    def __init__(self, previous):
        self.previous = previous
        self.comm = None

    def __call__(self, exc_type, exc, tb):
        if issubclass(exc_type, SystemExit):  # not an error: let Python handle it
            self.previous(exc_type, exc, tb)
        elif self.comm is None:
            _end_before_init(exc_type, exc, tb)
        else:
            _abort_for_exception(self.comm, exc_type, exc, tb)


_hook = None  # the _AbortHook installed in this process, if any


def install_excepthook(comm=None):
    """Install (once per process) the excepthook that aborts the job on an uncaught error;
    with ``comm``, the hook aborts through that communicator from now on."""
    global _hook
    if _hook is None:
        _hook = _AbortHook(sys.excepthook)
        sys.excepthook = _hook
    if comm is not None and _hook.comm is None:
        _hook.comm = comm


def _remove_pre_init_hook():
    """``init(abort_on_error=False)``: take back the hook the import installed."""
    global _hook
    if _hook is not None and _hook.comm is None and sys.excepthook is _hook:
        sys.excepthook = _hook.previous
        _hook = None


def _launcher_rank():
    """This process's rank as an MPI launcher gives it, or None when not under a launcher."""
    return _launcher_number(LAUNCHER_RANK_VARS)


def _end_before_init(exc_type, exc, tb):
    """An uncaught exception before ``init()``: print it with the rank, then end the job.

    A rank that merely exits before ``MPI_Init`` leaves MPICH's ``mpiexec`` waiting for it
    for ever, with the other ranks inside ``MPI_Init`` (measured: the job never ended).  So
    the rank aborts with ``MPI_Abort`` when MPI is running already (the script imported
    mpi4py itself), and else kills itself with SIGKILL, which every launcher takes for a
    failed rank: the job ends at once, ``mpiexec`` with status 9.
    """
    traceback.print_exception(exc_type, exc, tb, file=sys.stderr)
    size = launcher_size()
    sys.stderr.write(f'dezero_kr.distributed: rank {_launcher_rank()} of {size}: raised '
                     f'{exc_type.__name__}: {exc} before dist.init(); ending all {size} ranks\n')
    sys.stderr.flush()
    time.sleep(0.5)  # let mpiexec forward the message first (see Communicator.abort)
    MPI = sys.modules.get('mpi4py.MPI')
    if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.COMM_WORLD.Abort(1)
    os.kill(os.getpid(), getattr(signal, 'SIGKILL', signal.SIGTERM))


_exit_status = []  # the status sys.exit ended this process with (noted by _RankExit)


class _RankExit(SystemExit):
    """The ``SystemExit`` that ``sys.exit`` raises once ``init()`` has run.

    Freed with no Python frame running, it is Python's top level ending the
    process with this status: the status is noted for ``_abort_on_failed_exit``.
    Freed while Python code runs, a ``try`` caught it (or a thread ended with
    it): the process goes on and nothing is noted.
    """

    def __del__(self):
        try:
            sys._getframe(1)
        except ValueError:  # no caller frame: the interpreter's top level handled it
            _exit_status.append(self.code)


def _install_exit_hooks(comm):
    """Make ``sys.exit(status)`` with a non-zero status, uncaught, abort every rank of the job.

    A rank that exits normally calls ``MPI_Finalize`` (mpi4py does, at exit),
    which hydra takes for a clean end, so without this the other ranks wait
    in their next collective forever.  Registered after mpi4py's own exit
    function, ``_abort_on_failed_exit`` runs before it.
    """
    if sys.exit is _exit:
        return
    atexit.register(_abort_on_failed_exit, comm)
    sys.exit = _exit


def _exit(status=None):
    """``sys.exit`` while a ``dezero_kr.distributed`` job runs: raises ``_RankExit(status)``."""
    raise _RankExit(status)


def _abort_on_failed_exit(comm):
    """At exit: ``MPI_Abort`` with the status ``sys.exit`` ended this rank with, unless it is 0/None.

    A status that is not an int (``sys.exit('message')``) exits with 1, as Python does.
    """
    if not _exit_status or _exit_status[-1] in (None, 0):
        return
    status = _exit_status[-1]
    code = status if isinstance(status, int) and not isinstance(status, bool) else 1
    comm.abort(f'exited with status {status!r} outside comm.abort_on_error(); aborting the job '
               f'(MPI_Abort({code}))', errorcode=code)
