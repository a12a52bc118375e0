#@ file step 49
"""전처리 (49단계): Dataset의 transform에 넘기는 작은 함수 객체들.

    f = Compose([Flatten(), ToFloat(), Normalize(0., 255.)])
    x = f(x)

(DeZero의 PIL 이미지 변환 Convert, Resize, CenterCrop, ToArray, ToPIL은
Pillow가 필요해서 뺐다.)
"""
import numpy as np


class Compose:
    """여러 변환을 차례로."""

    def __init__(self, transforms=[]):
        self.transforms = transforms

    def __call__(self, img):
        if not self.transforms:
            return img
        for t in self.transforms:
            img = t(img)
        return img


class Normalize:
    """(x - mean) / std. mean, std가 채널마다 다르면 (C, 1, 1) 모양으로 맞춘다.
    """

    def __init__(self, mean=0, std=1):
        self.mean = mean
        self.std = std

    def __call__(self, array):
        mean, std = self.mean, self.std

        if not np.isscalar(mean):
            mshape = [1] * array.ndim
            mshape[0] = len(array) if len(self.mean) == 1 else len(self.mean)
            mean = np.array(self.mean, dtype=array.dtype).reshape(*mshape)
        if not np.isscalar(std):
            rshape = [1] * array.ndim
            rshape[0] = len(array) if len(self.std) == 1 else len(self.std)
            std = np.array(self.std, dtype=array.dtype).reshape(*rshape)
        return (array - mean) / std


class Flatten:
    """한 줄로 편다."""

    def __call__(self, array):
        return array.flatten()


class AsType:
    def __init__(self, dtype=np.float32):
        self.dtype = dtype

    def __call__(self, array):
        return array.astype(self.dtype)


ToFloat = AsType
