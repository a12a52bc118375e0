"""The stand-in is as strict as the suite needs: what a GPU refuses, it refuses.

(With real CuPy these are skipped by design: they test the stand-in, not CuPy.)
"""
import cupy
import numpy as np
import pytest
from _device import STANDIN

pytestmark = pytest.mark.skipif(not STANDIN, reason='tests the stand-in itself (not a GPU skip)')


def test_numpy_cannot_see_a_device_array():
    a = cupy.arange(6.0)
    for call in (np.asarray, np.array, np.sum, np.exp, np.zeros_like, lambda x: np.maximum(x, 0)):
        with pytest.raises(TypeError):
            call(a)


def test_host_and_device_arrays_do_not_mix():
    a = cupy.ones(3)
    for call in (lambda: a + np.ones(3), lambda: np.ones(3) * a, lambda: cupy.add(a, np.ones(3)),
                 lambda: a.__setitem__(0, np.ones(()))):
        with pytest.raises(TypeError, match='host numpy.ndarray'):
            call()
    assert cupy.asnumpy(a + 2.0 * np.float32(3)).tolist() == [7.0, 7.0, 7.0]


def test_ufuncs_have_no_at_and_scatter_add_does_it():
    import cupyx
    a = cupy.zeros(3)
    with pytest.raises(AttributeError, match='scatter_add'):
        cupy.add.at(a, cupy.asarray([0, 0]), 1.0)
    cupyx.scatter_add(a, cupy.asarray([0, 0, 2]), cupy.asarray([1.0, 2.0, 5.0]))
    assert a.get().tolist() == [3.0, 0.0, 5.0]


def test_reductions_stay_on_the_device_and_reads_are_counted():
    a = cupy.asarray(np.arange(4.0))
    cupy.reset_transfers()
    s = a.sum()
    assert isinstance(s, cupy.ndarray) and s.shape == ()
    assert cupy.transfers == {'to_host': 0, 'to_device': 0}
    assert float(s) == 6.0 and bool(s) and s.item() == 6.0 and a.get().sum() == 6.0
    assert cupy.transfers['to_host'] == 4
    cupy.asarray(np.ones(2))
    assert cupy.transfers['to_device'] == 1


def test_get_array_module_and_device_count():
    assert cupy.get_array_module(cupy.ones(1)) is cupy
    assert cupy.get_array_module(np.ones(1)) is np
    assert cupy.cuda.runtime.getDeviceCount() == 1


def test_random_draws_equal_numpy_legacy_draws_under_one_seed():
    cupy.random.seed(5)
    np.random.seed(5)
    assert cupy.random.rand(3, 2).get().tolist() == np.random.rand(3, 2).tolist()
