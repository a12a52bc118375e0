"""fileio: atomic writes, stale temporary files, and all-or-nothing loads of weights and optimizer state."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dezero_kr.layers as L
import dezero_kr.optimizers as O
from dezero_kr import Parameter, fileio


class Net(L.Layer):
    def __init__(self, dtype=np.float32):
        super().__init__()
        self.W = Parameter(np.arange(6, dtype=dtype).reshape(2, 3), name='W')
        self.b = Parameter(np.zeros(3, dtype=dtype), name='b')


def _snapshot(net):
    return [p.data.copy() for p in net.params()]


def _unchanged(net, before):
    for p, b in zip(net.params(), before):
        assert p.data.dtype == b.dtype
        np.testing.assert_array_equal(p.data, b)


# =============================================================================
# load_weights: every conversion checked before anything changes
# =============================================================================
@pytest.mark.parametrize('bad_b, dtype, match', [
    (np.array(['x', 'y', 'z']), np.float32, r"'b' .* dtype <U1 in .*w.npz but .* dtype float32: .*not a number"),
    (np.array([1 + 2j, 0, 0]), np.float32, r"'b' .* complex128 .* float32: complex values into a real dtype"),
    (np.array([1e300, 0, 0]), np.float32, r"'b' .* float64 .* float32: some values overflow float32"),
    (np.array([1e300, 0, 0]), np.float16, r"'b' .* float64 .* float16: some values overflow"),
    (np.array([1.5, 0, 0]), np.int32, r"'b' .* float64 .* int32: values that are not whole numbers"),
    (np.array([300, 0, 0]), np.int8, r"'b' .* int64 .* int8: values from 0 to 300 are out of the range"),
    (np.array([-1, 0, 0]), np.uint8, r"'b' .* int64 .* uint8: values from -1 to 0 are out of the range"),
    (np.array([b'a', b'b', b'c']), np.float64, r"'b' .* \|S1 .*not a number"),
])
def test_load_weights_refuses_a_lossy_conversion_and_changes_nothing(tmp_path, bad_b, dtype, match):
    net = Net(dtype)
    before = _snapshot(net)
    # W is fine and comes first in the file: it must not be loaded either.
    np.savez(tmp_path / 'w.npz', W=np.full((2, 3), 7, dtype=dtype), b=bad_b)
    with pytest.raises(ValueError, match=match):
        net.load_weights(tmp_path / 'w.npz')
    _unchanged(net, before)


def test_load_weights_refuses_objects_naming_the_key(tmp_path):
    net = Net()
    before = _snapshot(net)
    np.savez(tmp_path / 'w.npz', W=np.zeros((2, 3)), b=np.array([{'evil': 1}, 2, 3], dtype=object))
    with pytest.raises(ValueError, match=r"'b' holds Python objects"):
        net.load_weights(tmp_path / 'w.npz')
    _unchanged(net, before)


def test_load_weights_accepts_exact_and_rounding_conversions(tmp_path):
    net = Net(np.float32)
    W = np.linspace(-1, 1, 6).reshape(2, 3)  # float64: rounds to float32, allowed
    np.savez(tmp_path / 'w.npz', W=W, b=np.array([1, 2, 3], dtype=np.int64))
    net.load_weights(tmp_path / 'w.npz')
    assert net.W.data.dtype == np.float32 and net.b.data.dtype == np.float32
    np.testing.assert_array_equal(net.W.data, W.astype(np.float32))
    np.testing.assert_array_equal(net.b.data, [1, 2, 3])
    # inf and nan stored as such are values, not overflow
    np.savez(tmp_path / 'inf.npz', W=np.full((2, 3), np.inf), b=np.array([np.nan, 0, 0]))
    net.load_weights(tmp_path / 'inf.npz')
    assert np.all(np.isposinf(net.W.data)) and np.isnan(net.b.data[0])
    # whole floats into an integer parameter
    ints = Net(np.int16)
    np.savez(tmp_path / 'i.npz', W=np.arange(6.0).reshape(2, 3) * 1000, b=np.array([-32768.0, 0, 32767]))
    ints.load_weights(tmp_path / 'i.npz')
    np.testing.assert_array_equal(ints.b.data, [-32768, 0, 32767])


def test_load_into_a_lazy_parameter_refuses_strings(tmp_path):
    lazy = L.Linear(3, nobias=True)
    np.savez(tmp_path / 'w.npz', W=np.array([['a']]))
    with pytest.raises(ValueError, match=r"'W' .* <U1 .*not a number"):
        lazy.load_weights(tmp_path / 'w.npz')
    assert lazy.W.data is None


# =============================================================================
# Optimizer state: the same checks, before t, hyper-parameters or state change
# =============================================================================
def _trained_adam():
    net = Net(np.float32)
    opt = O.Adam().setup(net)
    for p in net.params():
        p.grad = Parameter(np.ones_like(p.data))
    opt.update()
    return net, opt


@pytest.mark.parametrize('entry, value, match', [
    ('state/b/m', np.array([1e300, 0, 0]), r"'b/m' .* float64 .* float32: some values overflow"),
    ('state/b/v', np.array([1j, 0, 0]), r"'b/v' .* complex128 .* float32: complex"),
    ('state/W/m', np.array(['a', 'b']), r"'W/m' .* <U1 .*shapes differ"),
    ('state/b/v', np.array(['a', 'b', 'c']), r"'b/v' has shape \(3,\) and dtype <U1 in the state .*not a number"),
    ('state/b/m', np.array([{}, 1, 2], dtype=object), r"'state/b/m' holds Python objects"),
    ('hyperparams/alpha', np.array('fast'), r"hyperparams/alpha must be one real number, got"),
    ('t', np.array(2.5), r"t must be a whole number"),
])
def test_optimizer_load_validates_everything_first(tmp_path, entry, value, match):
    net, opt = _trained_adam()
    opt.save(tmp_path / 'opt.npz')
    with np.load(tmp_path / 'opt.npz') as f:
        arrays = dict(f)
    arrays[entry] = value
    np.savez(tmp_path / 'bad.npz', **arrays)
    net2, opt2 = _trained_adam()
    opt2.t, opt2.alpha = 5, 0.5
    m_before = opt2._state[net2.W]['m'].copy()
    with pytest.raises(ValueError, match=match):
        opt2.load(tmp_path / 'bad.npz')
    assert opt2.t == 5 and opt2.alpha == 0.5
    np.testing.assert_array_equal(opt2._state[net2.W]['m'], m_before)


def test_optimizer_load_round_trip_keeps_float32(tmp_path):
    net, opt = _trained_adam()
    opt.save(tmp_path / 'opt')
    net2 = Net(np.float32)
    opt2 = O.Adam().setup(net2)
    opt2.load(tmp_path / 'opt')
    assert opt2.t == 1
    for p, q in zip(net.params(), net2.params()):
        for slot in ('m', 'v'):
            assert opt2._state[q][slot].dtype == np.float32
            np.testing.assert_array_equal(opt2._state[q][slot], opt._state[p][slot])


def test_optimizer_setup_needs_a_model():
    with pytest.raises(TypeError, match=r"SGD.setup: target must be a Layer/Model .* got 42 of type int"):
        O.SGD().setup(42)


# =============================================================================
# Saving: missing folders, stale temporary files
# =============================================================================
def test_save_into_a_missing_folder_names_it(tmp_path):
    folder = tmp_path / 'no_such_dir'
    with pytest.raises(FileNotFoundError, match=r"save_weights: folder .*no_such_dir' does not exist"):
        Net().save_weights(folder / 'w.npz')
    net, opt = _trained_adam()
    with pytest.raises(FileNotFoundError, match=r"Adam.save: folder .*no_such_dir' does not exist"):
        opt.save(folder / 'opt.npz')
    assert not folder.exists()


def _dead_pid():
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait()  # reaped: the pid no longer exists (reuse within the test is practically impossible)
    return proc.pid


def test_next_save_removes_temp_files_of_dead_processes_only(tmp_path):
    dead = _dead_pid()
    live = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])
    try:
        stale = tmp_path / f'.w.npz.{dead}.0123abcd.part'
        other_stale = tmp_path / f'.other.bin.{dead}.deadbeef.part'
        alive = tmp_path / f'.w.npz.{live.pid}.89abcdef.part'
        mine = tmp_path / f'.w.npz.{os.getpid()}.00000000.part'
        unrelated = [tmp_path / 'notes.part', tmp_path / f'.w.npz.{dead}.part', tmp_path / 'w.npz.1.x.part']
        for p in [stale, other_stale, alive, mine, *unrelated]:
            p.write_bytes(b'x' * 10)
        Net().save_weights(tmp_path / 'w.npz')
        left = set(os.listdir(tmp_path))
        assert stale.name not in left and other_stale.name not in left
        assert {alive.name, mine.name, 'w.npz', *(p.name for p in unrelated)} == left
    finally:
        live.kill()
        live.wait()


def test_killed_save_loop_leaves_nothing_after_the_next_save(tmp_path):
    # A child writes temp files and is SIGKILLed mid-write (simulated: it creates
    # its temp file through atomic_write and never finishes).
    code = (
        'import os, sys, time\n'
        'from dezero_kr.fileio import atomic_write\n'
        'with atomic_write(sys.argv[1]) as f:\n'
        '    f.write(b"x" * 1000); f.flush(); print("ready", flush=True); time.sleep(60)\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, '-c', code, str(tmp_path / 'w.npz')], stdout=subprocess.PIPE,
                            env=env)
    try:
        assert proc.stdout.readline().strip() == b'ready'
        leftovers = [n for n in os.listdir(tmp_path) if n.endswith('.part')]
        assert len(leftovers) == 1 and f'.{proc.pid}.' in leftovers[0]
        Net().save_weights(tmp_path / 'w.npz')  # the writer is alive: its file stays
        assert leftovers[0] in os.listdir(tmp_path)
    finally:
        proc.kill()
        proc.wait()
    Net().save_weights(tmp_path / 'w.npz')  # now it is dead: removed
    assert os.listdir(tmp_path) == ['w.npz']


def test_atomic_write_mode_error_names_the_mode(tmp_path):
    with pytest.raises(ValueError, match=r"atomic_write: mode must be 'w' or 'wb', got 'a'"):
        with fileio.atomic_write(tmp_path / 'x', 'a'):
            pass


def test_old_import_paths_still_work():
    from dezero_kr.download import atomic_write
    from dezero_kr.layers import existing_npz_path, save_npz
    assert atomic_write is fileio.atomic_write
    assert save_npz is fileio.save_npz and existing_npz_path is fileio.existing_npz_path


def test_sigkilled_save_loops_leave_no_temp_file_after_the_next_save(tmp_path):
    # The reported case: a loop of save_weights killed again and again left .part files.
    code = (
        'import sys, numpy as np\n'
        'import dezero_kr.layers as L\n'
        'net = L.Linear(1000, in_size=1000)\n'
        'net.save_weights(sys.argv[1])\n'
        'print("ready", flush=True)\n'
        'while True:\n'
        '    net.save_weights(sys.argv[1])\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    chooser = np.random.default_rng(3)
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, '-c', code, str(tmp_path / 'w.npz')], stdout=subprocess.PIPE,
                                env=env)
        assert proc.stdout.readline().strip() == b'ready'
        try:
            proc.wait(timeout=float(chooser.uniform(0.05, 0.4)))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    Net().save_weights(tmp_path / 'other.npz')  # any save into the folder cleans it
    assert sorted(os.listdir(tmp_path)) == ['other.npz', 'w.npz']
    with np.load(tmp_path / 'w.npz') as f:  # and the killed loops' file is whole
        assert f['W'].shape == (1000, 1000)
