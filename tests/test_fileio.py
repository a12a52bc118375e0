"""fileio: atomic writes, stale temporary files, and all-or-nothing loads of weights and optimizer state."""
import contextlib
import os
import re
import stat
import subprocess
import sys

import numpy as np
import pytest

import dezero_kr.layers as L
import dezero_kr.optimizers as O
from dezero_kr import Parameter, fileio
from _subproc import python_env


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


# =============================================================================
# Issue 34: what is at the target path (modes, owners, special files, links, long names)
# =============================================================================
def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@contextlib.contextmanager
def _umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _saved_W(path):
    with np.load(path, allow_pickle=False) as f:
        return f['W']


def _other_net():
    net = Net()
    net.W.data = np.full((2, 3), 9, dtype=np.float32)
    return net


@pytest.mark.skipif(os.name == 'nt', reason='POSIX permission bits')
@pytest.mark.parametrize('old_mode', [0o600, 0o640, 0o444, 0o755, 0o4755])
def test_overwrite_keeps_the_old_files_mode(tmp_path, old_mode):
    target = tmp_path / 'w.npz'
    Net().save_weights(target)
    os.chmod(target, old_mode)
    with _umask(0o022):  # a new file would be 0644
        _other_net().save_weights(target)
        net, opt = _trained_adam()
        opt.save(tmp_path / 'opt.npz')
        os.chmod(tmp_path / 'opt.npz', old_mode)
        opt.save(tmp_path / 'opt.npz')
    assert _mode(target) == old_mode and _mode(tmp_path / 'opt.npz') == old_mode
    np.testing.assert_array_equal(_saved_W(target), np.full((2, 3), 9))


@pytest.mark.skipif(os.name == 'nt', reason='POSIX permission bits')
@pytest.mark.parametrize('mask', [0o022, 0o027, 0o077, 0o000])
def test_a_new_file_gets_the_mode_open_would_give_it(tmp_path, mask):
    # Not a regression of issue 34 (new files were right before): the guard for how a new file is made.
    with _umask(mask):
        Net().save_weights(tmp_path / 'w.npz')
        with open(tmp_path / 'by_open', 'w'):
            pass
    assert _mode(tmp_path / 'w.npz') == 0o666 & ~mask == _mode(tmp_path / 'by_open')


@pytest.mark.skipif(not hasattr(os, 'geteuid') or os.geteuid() != 0, reason='only root can give a file away')
def test_overwrite_keeps_the_old_files_owner_and_group(tmp_path):
    target = tmp_path / 'w.npz'
    Net().save_weights(target)
    os.chown(target, 12345, 23456)
    os.chmod(target, 0o2640)  # setgid too: chown would clear it if it came after chmod
    _other_net().save_weights(target)
    st = os.stat(target)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (12345, 23456, 0o2640)
    np.testing.assert_array_equal(_saved_W(target), np.full((2, 3), 9))


@pytest.mark.skipif(not hasattr(os, 'chown'), reason='POSIX owners')
def test_an_owner_the_process_may_not_set_keeps_at_least_the_group(tmp_path, monkeypatch):
    target = tmp_path / 'w.npz'
    Net().save_weights(target)
    os.chmod(target, 0o640)
    old = os.stat(target)
    real_chown, calls = os.chown, []

    def chown(path, uid, gid, **kw):  # as an ordinary user: giving a file to another uid is refused
        calls.append((uid, gid))
        if uid != -1:
            raise PermissionError(1, 'Operation not permitted', path)
        real_chown(path, uid, gid, **kw)

    monkeypatch.setattr(os, 'chown', chown)
    monkeypatch.setattr(os, 'stat', _stat_with_owner(os.stat, str(target), 4242, old.st_gid))
    _other_net().save_weights(target)
    monkeypatch.undo()
    assert calls == [(4242, old.st_gid), (-1, old.st_gid)]
    assert _mode(target) == 0o640
    np.testing.assert_array_equal(_saved_W(target), np.full((2, 3), 9))


@pytest.mark.skipif(not hasattr(os, 'chown'), reason='POSIX owners')
def test_a_group_the_process_may_not_keep_loses_the_group_bits(tmp_path, monkeypatch):
    """0660 of another group must not become writable by the saver's own group."""
    target = tmp_path / 'w.npz'
    Net().save_weights(target)
    os.chmod(target, 0o2664)
    old = os.stat(target)

    def chown(path, uid, gid, **kw):  # neither the owner nor the group may be kept
        raise PermissionError(1, 'Operation not permitted', path)

    monkeypatch.setattr(os, 'chown', chown)
    monkeypatch.setattr(os, 'stat', _stat_with_owner(os.stat, str(target), 4242, old.st_gid + 1))
    _other_net().save_weights(target)
    monkeypatch.undo()
    assert _mode(target) == 0o604
    np.testing.assert_array_equal(_saved_W(target), np.full((2, 3), 9))


def _stat_with_owner(real_stat, path, uid, gid):
    """``os.stat`` that reports ``path`` as owned by ``uid`` (another user's file)."""
    def fake(p, *args, **kw):
        st = real_stat(p, *args, **kw)
        if os.fspath(p) != path:
            return st
        fields = list(st)
        fields[stat.ST_UID], fields[stat.ST_GID] = uid, gid
        return os.stat_result(fields)
    return fake


def _special_files(tmp_path):
    """name -> (path, kind pattern) of special files made in ``tmp_path`` (never anything under /dev)."""
    made = {}
    if hasattr(os, 'mkfifo'):
        os.mkfifo(tmp_path / 'fifo.npz')
        made['fifo'] = (tmp_path / 'fifo.npz', r'a FIFO \(named pipe\)')
        os.symlink('fifo.npz', tmp_path / 'link_to_fifo.npz')
        made['link_to_fifo'] = (tmp_path / 'link_to_fifo.npz', r'a FIFO \(named pipe\)')
    try:  # a character device node of our own (the null device's numbers), inside tmp_path
        os.mknod(tmp_path / 'chardev.npz', stat.S_IFCHR | 0o600, os.makedev(1, 3))
        made['chardev'] = (tmp_path / 'chardev.npz', r'a character device')
    except (AttributeError, OSError):
        pass
    return made


def _file_type(path):
    return stat.S_IFMT(os.lstat(path).st_mode)


@pytest.mark.parametrize('kind', ['fifo', 'link_to_fifo', 'chardev'])
@pytest.mark.parametrize('saver', ['save_weights', 'Adam.save', 'atomic_write'])
def test_saving_onto_a_special_file_is_refused_and_leaves_it_in_place(tmp_path, kind, saver):
    made = _special_files(tmp_path)
    if kind not in made:
        pytest.skip(f'cannot make a {kind} here')
    path, pattern = made[kind]
    before = {name: _file_type(tmp_path / name) for name in os.listdir(tmp_path)}
    with pytest.raises(FileExistsError, match=rf"{saver}: .*{path.name}.* is {pattern}, not a regular file: "
                                              rf"not replaced"):
        if saver == 'save_weights':
            Net().save_weights(path)
        elif saver == 'Adam.save':
            _trained_adam()[1].save(path)
        else:
            with fileio.atomic_write(path) as f:
                f.write(b'x')
    assert {name: _file_type(tmp_path / name) for name in os.listdir(tmp_path)} == before  # no temp file


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='needs os.mkfifo')
def test_onnx_export_onto_a_fifo_is_refused(tmp_path):
    pytest.importorskip('onnx')
    import dezero_kr.onnx as dx
    os.mkfifo(tmp_path / 'm.onnx')
    with pytest.raises(FileExistsError, match=r"onnx.export: .*m.onnx' is a FIFO \(named pipe\), not a regular"):
        dx.export(L.Linear(2, in_size=3), np.ones((1, 3), np.float32), tmp_path / 'm.onnx')
    assert stat.S_ISFIFO(os.lstat(tmp_path / 'm.onnx').st_mode) and os.listdir(tmp_path) == ['m.onnx']


@pytest.mark.skipif(os.name == 'nt', reason='POSIX symbolic links')
def test_saving_onto_a_directory_is_refused_before_writing(tmp_path):
    (tmp_path / 'w.npz').mkdir()
    os.symlink('w.npz', tmp_path / 'link.npz')
    for name in ('w.npz', 'link.npz'):
        with pytest.raises(IsADirectoryError, match=rf"save_weights: .*{name}.* is a directory, not a regular"):
            Net().save_weights(tmp_path / name)
    assert sorted(os.listdir(tmp_path)) == ['link.npz', 'w.npz'] and os.listdir(tmp_path / 'w.npz') == []


@pytest.mark.skipif(os.name == 'nt', reason='POSIX symbolic links')
def test_saving_through_a_symlink_replaces_its_target_and_keeps_the_link(tmp_path):
    (tmp_path / 'real').mkdir()
    (tmp_path / 'links').mkdir()
    real = tmp_path / 'real' / 'w.npz'
    Net().save_weights(real)
    os.chmod(real, 0o600)
    os.symlink('../real/w.npz', tmp_path / 'links' / 'hop.npz')  # relative, in another folder
    os.symlink('hop.npz', tmp_path / 'links' / 'w.npz')  # a chain of two links
    _other_net().save_weights(tmp_path / 'links' / 'w.npz')
    assert os.readlink(tmp_path / 'links' / 'w.npz') == 'hop.npz'
    assert os.readlink(tmp_path / 'links' / 'hop.npz') == '../real/w.npz'
    assert sorted(os.listdir(tmp_path / 'links')) == ['hop.npz', 'w.npz']
    assert os.listdir(tmp_path / 'real') == ['w.npz'] and _mode(real) == 0o600
    np.testing.assert_array_equal(_saved_W(real), np.full((2, 3), 9))
    loaded = Net()
    loaded.load_weights(tmp_path / 'links' / 'w.npz')
    np.testing.assert_array_equal(loaded.W.data, np.full((2, 3), 9))


@pytest.mark.skipif(os.name == 'nt', reason='POSIX symbolic links')
@pytest.mark.parametrize('link_to, pattern', [
    ('missing.npz', r"is a symbolic link to 'missing.npz', which does not exist"),
    ('no_dir/w.npz', r"is a symbolic link to 'no_dir/w.npz', which does not exist"),
    ('w.npz', r"is a symbolic link that cannot be followed"),  # a link to itself: a loop
])
def test_saving_onto_a_link_that_leads_nowhere_is_refused(tmp_path, link_to, pattern):
    link = tmp_path / 'w.npz'
    os.symlink(link_to, link)
    with pytest.raises(OSError, match=rf"save_weights: .*w.npz' {pattern}"):
        Net().save_weights(link)
    assert os.listdir(tmp_path) == ['w.npz'] and os.readlink(link) == link_to


@pytest.mark.parametrize('name', ['a' * 251 + '.npz', '가' * 83 + '.npz', 'b' * 100 + '가' * 50 + '.npz'])
def test_a_name_of_up_to_255_bytes_is_saved(tmp_path, name):
    assert 237 <= len(os.fsencode(name)) <= 255
    Net().save_weights(tmp_path / name)
    net, opt = _trained_adam()
    opt.save(tmp_path / ('o' + name[1:]))
    assert sorted(os.listdir(tmp_path)) == sorted([name, 'o' + name[1:]])
    np.testing.assert_array_equal(_saved_W(tmp_path / name), Net().W.data)


def test_the_shortened_temp_name_of_a_long_name_is_still_cleaned_when_stale(tmp_path):
    name = '가' * 83 + '.npz'
    tmp = os.path.basename(fileio.temp_name(str(tmp_path / name)))
    assert len(os.fsencode(tmp)) <= 255 and tmp.startswith('.가') and tmp.endswith('.part')
    stale = tmp_path / tmp.replace(f'.{os.getpid()}.', f'.{_dead_pid()}.')
    stale.write_bytes(b'x')
    assert fileio.remove_stale_temp_files(tmp_path) == [str(stale)]


# Loading a special file must neither block (a FIFO with no writer) nor read forever (/dev/zero):
# each load runs in a child with a time limit and a memory cap, so the suite cannot hang or swap.
_LOAD_CHILD = (
    'import resource, sys\n'
    'resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n'
    'import dezero_kr.layers as L, dezero_kr.optimizers as O\n'
    'net = L.Linear(2, in_size=2)\n'
    'load = net.load_weights if sys.argv[1] == "load_weights" else O.Adam().setup(net).load\n'
    'try:\n'
    '    load(sys.argv[2])\n'
    'except Exception as e:\n'
    '    print(type(e).__name__, e)\n')


def _load_in_child(loader, path):
    try:
        done = subprocess.run([sys.executable, '-c', _LOAD_CHILD, loader, str(path)], capture_output=True,
                              text=True, timeout=60, env=python_env(OPENBLAS_NUM_THREADS='1'))
    except subprocess.TimeoutExpired:
        pytest.fail(f'{loader}({str(path)!r}) did not return within 60 s')
    return done.stdout.strip() + done.stderr.strip()


@pytest.mark.skipif(os.name == 'nt', reason='FIFOs, /dev and resource limits are POSIX')
@pytest.mark.parametrize('loader', ['load_weights', 'Adam.load'])
def test_loading_a_fifo_is_refused_without_blocking(tmp_path, loader):
    made = _special_files(tmp_path)
    for kind in ('fifo', 'link_to_fifo'):
        path, pattern = made[kind]
        assert re.fullmatch(rf"ValueError {loader}: {re.escape(str(path))} is {pattern}, not a regular file: "
                            r"only a regular file is read.*", _load_in_child(loader, path))
        assert stat.S_ISFIFO(os.stat(path).st_mode)


@pytest.mark.skipif(os.name == 'nt', reason='/dev and resource limits are POSIX')
@pytest.mark.parametrize('device', ['/dev/zero', '/dev/urandom', '/dev/null'])
def test_loading_a_device_is_refused_without_reading_it(device):
    # READ only: nothing here ever writes to /dev.
    if not os.path.exists(device):
        pytest.skip(f'no {device}')
    assert re.fullmatch(rf"ValueError load_weights: {device} is a character device, not a regular file: "
                        r"only a regular file is read.*", _load_in_child('load_weights', device))


def test_loading_a_directory_names_it(tmp_path):
    (tmp_path / 'w.npz').mkdir()
    with pytest.raises(ValueError, match=r"load_weights: .*w.npz is a directory, not a regular file"):
        Net().load_weights(tmp_path / 'w.npz')
