"""MPI: ``init``, ``find_mpiexec`` and the ``Communicator`` (see the ``dezero_kr.distributed`` docstring)."""
import atexit
import contextlib
import os
import shutil
import sys
import time
import traceback

import numpy as np

from dezero_kr import cuda
from dezero_kr.progress import progress as _progress
from dezero_kr.distributed.buckets import buckets, check_same_layout, named_params

INSTALL_HINT = 'pip install -e ".[mpi]"  (mpi4py and the mpich wheel)'

# Environment variables in which MPI launchers (MPICH's hydra, Open MPI, PMIx) give each process
# the number of ranks.
LAUNCHER_SIZE_VARS = ('PMI_SIZE', 'OMPI_COMM_WORLD_SIZE', 'MPI_LOCALNRANKS', 'PMIX_SIZE')


def _launcher_size():
    """The number of ranks an MPI launcher says it started, or None when not under a launcher."""
    for name in LAUNCHER_SIZE_VARS:
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
        abort_on_error: when there is more than one rank, install a
            ``sys.excepthook`` that prints the exception with the rank and calls
            ``MPI_Abort`` (see ``Communicator.abort``), and make a rank that
            ends with ``sys.exit(status)``, status not 0, abort the job with
            that status (``_install_exit_hooks``).

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
            n = _launcher_size()
            if n is not None and n > 1:
                raise ImportError(
                    f'dezero_kr.distributed.init: this process was started by an MPI launcher as '
                    f'one of {n} ranks, but mpi4py cannot be imported ({e}). Install the MPI '
                    f'extra: {INSTALL_HINT}') from e
            return Communicator(None)
    comm = Communicator(mpi_comm)
    if abort_on_error and comm.size > 1:
        _install_excepthook(comm)
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

    def allgather_array(self, values):
        """Stack the equal-shaped NumPy arrays ``values`` of every rank: shape ``(size,) + values.shape``."""
        values = np.ascontiguousarray(values)
        out = np.empty((self.size,) + values.shape, dtype=values.dtype)
        if self.size == 1:
            out[0] = values
        else:
            self.mpi_comm.Allgather(values, out)
        return out

    def mean(self, value, weight=1.0):
        """The weighted mean ``sum_r w_r v_r / sum_r w_r`` of a number or array over all ranks.

        Returns a float for a scalar ``value``, a float64 array for an array
        (the same on every rank).  ``weight`` is usually the rank's sample count.
        Raises ValueError when the weights sum to zero.
        """
        v = np.asarray(cuda.as_numpy(value), dtype=np.float64)
        buf = np.empty(v.size + 1)
        buf[:-1] = v.ravel()
        buf[:-1] *= weight
        buf[-1] = weight
        self.allreduce_sum(buf)
        if buf[-1] == 0:
            raise ValueError(f'Communicator.mean: the weights of the {self.size} rank(s) sum to 0')
        out = buf[:-1] / buf[-1]
        return float(out[0]) if v.ndim == 0 else out.reshape(v.shape)

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
        for bucket in buckets([p for _, p in named if p.data is not None]):
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


def _abort_for_exception(comm, exc_type, exc, tb):
    traceback.print_exception(exc_type, exc, tb, file=sys.stderr)
    comm.abort(f'raised {exc_type.__name__}: {exc}; aborting all {comm.size} ranks (MPI_Abort)')


_hooked = []  # the communicators whose excepthook is installed (one per process is enough)


def _install_excepthook(comm):
    if _hooked:
        return
    _hooked.append(comm)
    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        if issubclass(exc_type, SystemExit):  # not an error: let Python handle it
            previous(exc_type, exc, tb)
            return
        _abort_for_exception(comm, exc_type, exc, tb)

    sys.excepthook = excepthook


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
