"""Issue 23, weights and optimizer files: every name round-trips, hostile files are refused early and clearly.

Covered: keys that are ``np.savez`` keywords, two parameters on one path,
``model.weights`` vs ``model.weights.npz``, assigning a Variable over a
Parameter, pickling a layer after a call, a decompression bomb, and the
message of every broken file (naming the file and the key).
"""
import pickle
import tracemalloc
import zipfile

import numpy as np
import pytest

import dezero_kr.functions as F
import dezero_kr.layers as L
import dezero_kr.models as M
import dezero_kr.optimizers as O
from dezero_kr import Parameter, Variable, fileio


class Named(L.Layer):
    """Parameters whose names are keywords of np.savez / np.load."""

    def __init__(self, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        for name in ('file', 'allow_pickle', 'args', 'kwds', 'arr_0'):
            setattr(self, name, Parameter(rng.standard_normal((2, 3))))


def _values(layer):
    return {k: p.data.copy() for k, p in layer.named_params()}


# =============================================================================
# Data loss
# =============================================================================
def test_every_parameter_name_round_trips(tmp_path):
    saved = Named(1)
    saved.save_weights(tmp_path / 'w')
    loaded = Named(2)
    loaded.load_weights(tmp_path / 'w')
    for key, value in _values(saved).items():
        np.testing.assert_array_equal(getattr(loaded, key).data, value)
    with np.load(tmp_path / 'w.npz', allow_pickle=False) as f:  # still a plain np.savez file
        assert sorted(f.files) == sorted(_values(saved))
        np.testing.assert_array_equal(f['allow_pickle'], saved.allow_pickle.data)


def test_optimizer_state_of_keyword_named_parameters_round_trips(tmp_path):
    net = Named(1)
    opt = O.Adam().setup(net)
    for p in net.params():
        p.grad = Variable(np.ones_like(p.data))
    opt.update()
    opt.save(tmp_path / 'opt')
    opt2 = O.Adam().setup(Named(1))
    opt2.load(tmp_path / 'opt')
    np.testing.assert_array_equal(opt2._state[opt2.target.file]['m'], opt._state[net.file]['m'])


class Clash(L.Layer):
    def __init__(self):
        super().__init__()
        self.a = L.Linear(2, in_size=3)
        setattr(self, 'a/W', Parameter(np.zeros((3, 2), np.float32)))


def test_two_parameters_on_one_path_are_refused_at_save_and_load(tmp_path):
    m = Clash()
    with pytest.raises(ValueError, match=r"save_weights: two parameters have the path 'a/W': attribute 'W' of "
                                         r"Linear and attribute 'a/W' of Clash"):
        m.save_weights(tmp_path / 'w')
    assert not (tmp_path / 'w.npz').exists()
    fileio.save_npz(tmp_path / 'w', {'a/W': np.ones((3, 2)), 'a/b': np.ones(2)})
    before = m.a.W.data.copy()
    with pytest.raises(ValueError, match=r"load_weights: two parameters have the path 'a/W'"):
        m.load_weights(tmp_path / 'w')
    np.testing.assert_array_equal(m.a.W.data, before)
    assert np.all(getattr(m, 'a/W').data == 0) and np.all(m.a.b.data == 0)


def test_optimizer_state_of_two_parameters_on_one_path_is_refused(tmp_path):
    m = Clash()
    opt = O.MomentumSGD().setup(m)
    for p in m.params():
        p.grad = Variable(np.ones_like(p.data))
    opt.update()
    with pytest.raises(ValueError, match=r"MomentumSGD state: two parameters have the path 'a/W'"):
        opt.save(tmp_path / 'opt')


def test_load_weights_reads_what_save_weights_wrote_or_refuses_the_ambiguity(tmp_path):
    path = tmp_path / 'model.weights'
    saved = M.MLP((3, 2))
    saved(np.ones((1, 4), np.float32))
    saved.save_weights(path)                     # writes model.weights.npz
    fresh = M.MLP((3, 2), )
    fresh(np.ones((1, 4), np.float32))
    fresh.load_weights(path)                     # only the .npz exists: that one
    np.testing.assert_array_equal(fresh.l0.W.data, saved.l0.W.data)
    other = M.MLP((3, 2))
    other(np.ones((1, 4), np.float32))
    with open(path, 'wb') as f:                  # now model.weights exists too
        np.savez(f, **{k: p.data for k, p in other.named_params()})
    with pytest.raises(FileExistsError, match=r"load_weights: both '.*model.weights' and '.*model.weights.npz' "
                                              r"exist"):
        fresh.load_weights(path)
    fresh.load_weights(str(path) + '.npz')       # the full name is never ambiguous
    np.testing.assert_array_equal(fresh.l0.W.data, saved.l0.W.data)
    (tmp_path / 'model.weights.npz').unlink()
    fresh.load_weights(path)                     # only model.weights: that one
    np.testing.assert_array_equal(fresh.l0.W.data, other.l0.W.data)


def test_assigning_a_variable_over_a_parameter_is_an_error():
    lin = L.Linear(2, in_size=3)
    W = lin.W
    with pytest.raises(TypeError, match=r"Linear: cannot assign a Variable to 'W', which holds a Parameter .*"
                                        r"assign Linear.W.data = <array>"):
        lin.W = lin.W * 1.0
    with pytest.raises(TypeError, match=r"cannot assign a ndarray to 'b'"):
        lin.b = np.zeros(2)
    assert lin.W is W and [p for p in lin.params()] == [lin.W, lin.b]
    lin.W.data = W.data * 2.0          # the way to change values
    lin.W = Parameter(np.ones((3, 2), np.float32))  # a Parameter replaces it
    assert list(lin.params())[0] is lin.W
    lin.b = None                       # None removes it, as in DeZero
    assert list(lin.params()) == [lin.W]
    mlp = M.MLP((3, 2))
    with pytest.raises(TypeError, match=r"MLP: cannot assign a int to 'l0', which holds a Layer"):
        mlp.l0 = 3


def test_a_model_pickles_after_a_forward_call_and_computes_the_same():
    np.random.seed(0)
    model = M.MLP((5, 3))
    x = np.random.randn(4, 2).astype(np.float32)
    y = model(x)
    F.sum(y * y).backward()
    assert model.l0.inputs[0]() is not None   # the call's weak references are there
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy(x).data, model(x).data)
    np.testing.assert_array_equal(copy.l0.W.grad.data, model.l0.W.grad.data)
    assert [k for k, _ in copy.named_params()] == [k for k, _ in model.named_params()]


def test_pickling_a_layer_that_holds_a_computed_variable_names_it():
    rnn = L.RNN(3, in_size=2)
    rnn(np.ones((1, 2)))
    with pytest.raises(TypeError, match=r"cannot pickle or deepcopy RNN: its attribute 'h' holds a Variable "
                                        r"computed by Tanh .*reset_state\(\).*save_weights"):
        pickle.dumps(M.Sequential(rnn))  # the sub-layer names itself
    rnn.reset_state()
    copy = pickle.loads(pickle.dumps(rnn))
    x = np.full((1, 2), 0.5)
    np.testing.assert_array_equal(copy(x).data, rnn(x).data)


# =============================================================================
# Decompression bomb: headers first, only expected members read
# =============================================================================
BOMB_LAYER_W = np.arange(6, dtype=np.float32).reshape(3, 2)


@pytest.fixture(scope='module')
def bomb(tmp_path_factory):
    """A ~1 MiB .npz: an SGD state, one member 'evil' declaring 1 GiB of zeros, then a Linear(2, 3)'s W and b.

    Deflate compresses zeros about 1000x, so 'evil' takes 1 MiB on disk.
    """
    path = tmp_path_factory.mktemp('bomb') / 'bomb.npz'
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for key, a in [('optimizer', np.array('SGD')), ('t', np.array(0)), ('hyperparams/lr', np.array(0.01))]:
            with zf.open(key + '.npy', 'w') as m:
                np.lib.format.write_array(m, a)
        with zf.open('evil.npy', 'w', force_zip64=True) as m:
            np.lib.format.write_array_header_1_0(m, {'descr': '|u1', 'fortran_order': False, 'shape': (1 << 30,)})
            zeros = bytes(1 << 20)
            for _ in range(1024):
                m.write(zeros)
        for key, a in [('W', BOMB_LAYER_W), ('b', np.ones(2, np.float32))]:
            with zf.open(key + '.npy', 'w') as m:
                np.lib.format.write_array(m, a)
    assert path.stat().st_size < 2 * 2 ** 20
    with zipfile.ZipFile(path) as zf:
        assert zf.getinfo('evil.npy').file_size > 2 ** 30  # it does declare 1 GiB
    return path


def _peak_mib(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / 2 ** 20


def test_load_weights_refuses_a_bomb_member_from_its_header(bomb):
    net = L.Linear(2, in_size=3)
    before = _values(net)

    def load():
        with pytest.raises(ValueError, match=r"load_weights: .*bomb.npz does not match Linear: missing keys "
                                             r"\[\], unexpected keys \['optimizer', 't', 'hyperparams/lr', 'evil'\]"):
            net.load_weights(bomb)
    assert _peak_mib(load) < 8
    assert all(np.array_equal(v, p.data) for v, p in zip(before.values(), net.params()))


def test_optimizer_load_refuses_a_bomb_member_from_its_header(bomb):
    opt = O.SGD().setup(L.Linear(2, in_size=3))

    def load():
        with pytest.raises(ValueError, match=r"SGD.load: .*bomb.npz has an unexpected entry 'evil'"):
            opt.load(bomb)
    assert _peak_mib(load) < 8


def test_a_bomb_under_an_expected_key_is_refused_by_its_shape(bomb):
    """Every member is expected, 'evil' as a (3, 2) parameter: its declared shape differs, nothing is read."""
    net = L.Linear(2, in_size=3)
    for key in ('evil', 'optimizer', 't', 'hyperparams/lr'):
        setattr(net, key, Parameter(np.zeros((3, 2)) if key == 'evil' else np.zeros(())))

    def load():
        with pytest.raises(ValueError, match=r"'evil' has shape \(1073741824,\) and dtype uint8 in .*bomb.npz but "
                                             r"the parameter has shape \(3, 2\)"):
            net.load_weights(bomb)
    assert _peak_mib(load) < 8
    assert not np.array_equal(net.W.data, BOMB_LAYER_W)  # all or nothing: W was not loaded


# =============================================================================
# Clear errors naming the file and the key
# =============================================================================
def _npy_member(path, key, header, data):
    with zipfile.ZipFile(path, 'w') as zf:
        with zf.open(key + '.npy', 'w') as m:
            np.lib.format.write_array_header_1_0(m, header)
            m.write(data)
    return path


def test_over_declared_member_names_file_and_key(tmp_path):
    path = _npy_member(tmp_path / 'w.npz', 'W', {'descr': '<f4', 'fortran_order': False, 'shape': (3, 2)},
                       bytes(8))
    with pytest.raises(ValueError, match=r"load_weights: .*w.npz: 'W' declares shape \(3, 2\) and dtype float32 "
                                         r"\(24 bytes\) but the archive says the member holds 8 bytes"):
        L.Linear(2, in_size=3, nobias=True).load_weights(path)


def test_a_header_declaring_8_tib_is_a_clear_error_not_memory_error(tmp_path):
    path = _npy_member(tmp_path / 'w.npz', 'W', {'descr': '<f8', 'fortran_order': False, 'shape': (1 << 40,)},
                       bytes(64))
    lazy = L.Linear(2, nobias=True)  # a lazy parameter takes any shape: only the sizes protect it
    with pytest.raises(ValueError, match=r"w.npz: 'W' declares shape \(1099511627776,\) and dtype float64 "
                                         r"\(8,796,093,022,208 bytes\)"):
        lazy.load_weights(path)
    assert lazy.W.data is None


def test_truncated_file_and_corrupt_member_name_the_file_and_key(tmp_path):
    net = L.Linear(2, in_size=3)
    net.save_weights(tmp_path / 'w')
    data = (tmp_path / 'w.npz').read_bytes()
    (tmp_path / 'cut.npz').write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match=r"load_weights: .*cut.npz is not an .npz file \(not a zip archive, "
                                         r"or a truncated one"):
        net.load_weights(tmp_path / 'cut.npz')
    # flip a byte of W's data: the CRC check names the key
    pos = data.index(net.W.data.tobytes())
    bad = data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1:]
    (tmp_path / 'bad.npz').write_bytes(bad)
    before = net.W.data.copy()
    with pytest.raises(ValueError, match=r"load_weights: .*bad.npz: 'W' cannot be read \(truncated or corrupt\)"):
        net.load_weights(tmp_path / 'bad.npz')
    np.testing.assert_array_equal(net.W.data, before)


def test_a_plain_npy_and_random_bytes_are_named(tmp_path):
    np.save(tmp_path / 'w.npy', np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"load_weights: .*w.npy is a single .npy array, not an .npz archive"):
        L.Linear(2, in_size=3).load_weights(tmp_path / 'w.npy')
    (tmp_path / 'r.npz').write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(ValueError, match=r"Adam.load: .*r.npz is not an .npz file"):
        O.Adam().setup(L.Linear(2, in_size=3)).load(tmp_path / 'r.npz')


def test_optimizer_entry_without_a_slot_is_named(tmp_path):
    net = L.Linear(2, in_size=3, nobias=True)
    fileio.save_npz(tmp_path / 'o', {'optimizer': np.array('Adam'), 't': np.array(1), 'state/W': np.zeros((3, 2))})
    with pytest.raises(ValueError, match=r"Adam.load: .*o.npz has an unexpected entry 'state/W' \(Adam saves "
                                         r"optimizer, t, .*state/<parameter path>/<m\|v>"):
        O.Adam().setup(net).load(tmp_path / 'o')
