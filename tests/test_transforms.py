"""dezero_kr.transforms: array transforms exactly, PIL transforms when Pillow is installed."""
import sys

import numpy as np
import pytest

from dezero_kr.transforms import (
    AsType, CenterCrop, Compose, Convert, Flatten, Normalize, RandomHorizontalFlip, Resize,
    ToArray, ToFloat, ToInt, ToPIL)


def test_compose_applies_in_order_and_empty_is_identity():
    x = np.arange(4)
    assert Compose()(x) is x
    assert Compose([])(x) is x
    assert Compose([lambda a: a + 1, lambda a: a * 10])(x).tolist() == [10, 20, 30, 40]


def test_mnist_default_pipeline():
    image = np.arange(784, dtype=np.uint8).reshape(1, 28, 28)  # values wrap mod 256
    out = Compose([Flatten(), ToFloat(), Normalize(0., 255.)])(image)
    assert out.shape == (784,) and out.dtype == np.float32
    assert out[:3].tolist() == [0.0, np.float32(1) / np.float32(255), np.float32(2) / np.float32(255)]
    assert out[256] == 0.0 and out.max() == 1.0


def test_normalize_scalar_and_per_channel():
    x = np.ones((3, 2, 2), dtype=np.float32) * np.array([1, 2, 3], dtype=np.float32)[:, None, None]
    out = Normalize(mean=[1, 2, 3], std=[1, 2, 4])(x)
    assert out.dtype == np.float32
    assert out[:, 0, 0].tolist() == [0.0, 0.0, 0.0]
    y = Normalize(mean=[0, 0, 1], std=[1, 2, 4])(x)
    assert y[:, 1, 1].tolist() == [1.0, 1.0, 0.5]
    z = Normalize(0.5, 0.5)(np.array([0.5, 1.5], dtype=np.float32))
    assert z.tolist() == [0.0, 2.0] and z.dtype == np.float32
    assert Normalize()(np.array([3.0])).tolist() == [3.0]


def test_flatten_astype_toint():
    x = np.arange(6, dtype=np.uint8).reshape(1, 2, 3)
    flat = Flatten()(x)
    assert flat.tolist() == [0, 1, 2, 3, 4, 5] and not np.shares_memory(flat, x)
    assert ToFloat is AsType
    assert AsType()(x).dtype == np.float32 and AsType(np.float64)(x).dtype == np.float64
    assert ToInt()(np.array([1.7, -2.2])).tolist() == [1, -2]
    assert ToInt()(np.array([1.7])).dtype == np.dtype(int)


def test_random_horizontal_flip_on_arrays():
    x = np.arange(6).reshape(1, 2, 3)
    flipped = RandomHorizontalFlip(p=1.0)(x)
    assert flipped.tolist() == [[[2, 1, 0], [5, 4, 3]]]
    assert not np.shares_memory(flipped, x) and flipped.flags.writeable
    assert RandomHorizontalFlip(p=0.0)(x) is x
    assert RandomHorizontalFlip(p=1.0)(np.arange(3).reshape(1, 3)).tolist() == [[2, 1, 0]]


def test_random_horizontal_flip_is_reproducible_with_a_seed():
    def pattern(rng):
        flip = RandomHorizontalFlip(rng=rng)
        return [bool(flip(np.array([[0, 1]]))[0, 0]) for _ in range(40)]

    a = pattern(1)
    assert a == pattern(1) == pattern(np.random.default_rng(1))
    assert 5 < sum(a) < 35  # about half flipped
    with pytest.raises(ValueError):
        RandomHorizontalFlip(p=1.5)


def test_pil_transforms_explain_how_to_install_pillow(monkeypatch):
    monkeypatch.setitem(sys.modules, 'PIL', None)  # makes `import PIL` fail
    for transform, arg in ((Convert('RGB'), object()), (Resize(4), object()),
                           (CenterCrop(2), object()), (ToPIL(), np.zeros((3, 2, 2), np.uint8))):
        with pytest.raises(ImportError, match='pip install pillow'):
            transform(arg)
    # Array transforms never need it.
    assert ToArray()(np.ones(2)).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError):
        ToArray()('not an image')


@pytest.fixture
def Image():
    return pytest.importorskip('PIL.Image', reason='Pillow is not installed')


@pytest.fixture
def rgb_image(Image):
    array = np.zeros((4, 6, 3), dtype=np.uint8)  # H=4, W=6
    array[..., 0] = np.arange(6)          # red: column index
    array[..., 1] = np.arange(4)[:, None]  # green: row index
    array[..., 2] = 200
    return Image.fromarray(array)


def test_to_array_and_back(rgb_image):
    chw = ToArray()(rgb_image)
    assert chw.shape == (3, 4, 6) and chw.dtype == np.float32
    assert chw[0, 0].tolist() == [0, 1, 2, 3, 4, 5] and chw[1, :, 0].tolist() == [0, 1, 2, 3]
    back = ToPIL()(chw.astype(np.uint8))
    assert back.size == (6, 4) and np.array_equal(np.asarray(back), np.asarray(rgb_image))
    gray = ToArray(np.uint8)(rgb_image.convert('L'))
    assert gray.shape == (1, 4, 6)
    assert ToPIL()(gray).mode == 'L'


def test_convert_bgr_swaps_red_and_blue(rgb_image):
    bgr = np.asarray(Convert('BGR')(rgb_image))
    rgb = np.asarray(rgb_image)
    assert np.array_equal(bgr[..., 0], rgb[..., 2]) and np.array_equal(bgr[..., 2], rgb[..., 0])
    assert Convert('L')(rgb_image).mode == 'L'


def test_resize_and_center_crop(rgb_image):
    assert Resize((3, 2))(rgb_image).size == (3, 2)
    assert Resize(5)(rgb_image).size == (5, 5)
    crop = CenterCrop((3, 2))(rgb_image)  # W 6 -> 3 (left 1), H 4 -> 2 (top 1)
    assert crop.size == (3, 2)
    cropped = np.asarray(crop)
    assert cropped[0, :, 0].tolist() == [1, 2, 3] and cropped[:, 0, 1].tolist() == [1, 2]


def test_random_horizontal_flip_on_pil(rgb_image):
    flipped = np.asarray(RandomHorizontalFlip(p=1.0)(rgb_image))
    assert flipped[0, :, 0].tolist() == [5, 4, 3, 2, 1, 0]
