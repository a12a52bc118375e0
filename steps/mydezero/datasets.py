#@ file step 48
"""데이터셋 (48단계부터). 인터넷 없이 돈다: 데이터는 코드로 만들거나 저장소에 있는
파일을 읽는다."""
#@ step 51
import gzip
import importlib.util
import os

#@ end
import numpy as np


def get_spiral(train=True):
    """세 갈래 나선: x float32 (300, 2), t int (300,).

    난수는 자기만의 RandomState(훈련 1984, 테스트 2020)에서 뽑는다. DeZero는
    np.random.seed로 전역 난수를 다시 심었다: 그러면 데이터를 만든 뒤의 가중치
    초기화까지 바뀌어 버린다.
    """
    rng = np.random.RandomState(1984 if train else 2020)

    num_data, num_class, input_dim = 100, 3, 2
    data_size = num_class * num_data
    x = np.zeros((data_size, input_dim), dtype=np.float32)
    t = np.zeros(data_size, dtype=int)

    for j in range(num_class):
        for i in range(num_data):
            rate = i / num_data
            radius = 1.0 * rate
            theta = j * 4.0 + 4.0 * rate + rng.randn() * 0.2
            ix = num_data * j + i
            x[ix] = np.array([radius * np.sin(theta),
                              radius * np.cos(theta)]).flatten()
            t[ix] = j
    indices = rng.permutation(num_data * num_class)  # 섞는다
    x = x[indices]
    t = t[indices]
    return x, t
#@ step 49


class Dataset:
    """dataset[i] -> (transform(data[i]), target_transform(label[i]));
    len(dataset) -> 샘플 개수.

    하위 클래스는 prepare()에서 self.data와 self.label을 채운다. index에는 정수
    말고도 인덱스 배열이나 슬라이스를 줄 수 있다 (그러면 배치가 한 번에
    나온다).
    """

    def __init__(self, train=True, transform=None, target_transform=None):
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        if self.transform is None:
            self.transform = lambda x: x
        if self.target_transform is None:
            self.target_transform = lambda x: x

        self.data = None
        self.label = None
        self.prepare()

    def __getitem__(self, index):
        if self.label is None:  # 정답이 없는 데이터
            return self.transform(self.data[index]), None
        else:
            return self.transform(self.data[index]), \
                self.target_transform(self.label[index])

    def __len__(self):
        return len(self.data)

    def prepare(self):
        pass


class Spiral(Dataset):
    def prepare(self):
        self.data, self.label = get_spiral(self.train)
#@ end
#@ step 51


def _digits_file():
    """8x8 숫자 데이터 파일(digits.csv.gz)의 경로.

    이 파일은 저장소의 dezero_kr/data/에 들어 있다 (scikit-learn이 싣는 UCI
    데이터, 출처와 라이선스는 같은 폴더의 NOTICE). dezero_kr를 import하지 않고
    파일 위치만 찾는다.
    """
    # 패키지를 실행하지 않고 위치만
    spec = importlib.util.find_spec('dezero_kr')
    folders = list(spec.submodule_search_locations) if spec else []
    here = os.path.dirname(os.path.abspath(__file__))
    # 저장소 안에서
    folders.append(os.path.join(here, '..', '..', 'dezero_kr'))
    for folder in folders:
        path = os.path.join(folder, 'data', 'digits.csv.gz')
        if os.path.exists(path):
            return path
    raise FileNotFoundError('digits.csv.gz를 찾지 못했다: '
                            '저장소의 dezero_kr/data/에 있어야 한다')


class Digits(Dataset):
    """8x8 손글씨 숫자 1,797장: 앞의 1,500장이 훈련, 뒤의 297장이 테스트.
    x float32 (N, 64) 0~1 (픽셀 0~16을 16으로 나눈다), t int 0~9.
    flatten=False이면 x는 (N, 1, 8, 8)."""

    def __init__(self, train=True, transform=None, target_transform=None,
                 flatten=True):
        self.flatten = flatten
        super().__init__(train, transform, target_transform)

    def prepare(self):
        with gzip.open(_digits_file(), 'rt') as f:
            # 한 줄: 픽셀 64개, 정답
            table = np.loadtxt(f, delimiter=',', dtype=np.int64)
        x, t = table[:, :64], table[:, 64].astype(int)
        part = slice(None, 1500) if self.train else slice(1500, None)
        x = x[part].astype(np.float32) / np.float32(16)
        self.data = x if self.flatten else x.reshape(-1, 1, 8, 8)
        self.label = t[part]

    @staticmethod
    def labels():
        return {i: str(i) for i in range(10)}
#@ end
#@ step 59


class SinCurve(Dataset):
    """사인파 다음 값 맞히기: data = y[:-1], label = y[1:], (999, 1) float64.
    훈련은 sin(x) + 잡음(-0.05~0.05), 테스트는 cos(x). 잡음은 seed에서 나와
    매번 같다."""

    def __init__(self, train=True, transform=None, target_transform=None,
                 seed=0):
        self.seed = seed
        super().__init__(train, transform, target_transform)

    def prepare(self):
        num_data = 1000
        dtype = np.float64

        x = np.linspace(0, 2 * np.pi, num_data)
        noise_range = (-0.05, 0.05)
        rng = np.random.default_rng(self.seed)
        noise = rng.uniform(noise_range[0], noise_range[1], size=x.shape)
        if self.train:
            y = np.sin(x) + noise
        else:
            y = np.cos(x)
        y = y.astype(dtype)
        self.data = y[:-1][:, np.newaxis]
        self.label = y[1:][:, np.newaxis]
#@ end
