#@ file step 50
"""데이터를 미니배치로 꺼내 주는 DataLoader (50단계부터).

DataLoader는 스스로 반복자(iterator)다: for 문이 끝나면(StopIteration) 스스로
reset해서 다음 for 문이 다음 에폭이 된다.
"""
import math

import numpy as np

#@ step 52
from mydezero import cuda
#@ end


class DataLoader:
    def __init__(self, dataset, batch_size, shuffle=True, gpu=False):
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.data_size = len(dataset)
        self.max_iter = math.ceil(self.data_size / batch_size)
        self.gpu = gpu

        self.reset()

    def reset(self):
        self.iteration = 0
        if self.shuffle:
            # 에폭마다 새 순서
            self.index = np.random.permutation(len(self.dataset))
        else:
            self.index = np.arange(len(self.dataset))

    def __iter__(self):
        return self

    def __len__(self):
        return self.max_iter

    def __next__(self):
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration

        i, batch_size = self.iteration, self.batch_size
        # 마지막은 짧을 수 있다
        batch_index = self.index[i * batch_size:(i + 1) * batch_size]
        batch = [self.dataset[i] for i in batch_index]

#@ step 50-51
        xp = np  # 배열 모듈 (52단계에서 cupy도 고르게 된다)
#@ end
#@ step 52
        xp = cuda.cupy if self.gpu else np
#@ end
        x = xp.array([example[0] for example in batch])
        t = xp.array([example[1] for example in batch])

        self.iteration += 1
        return x, t

    def next(self):
        return self.__next__()
#@ step 52

    def to_cpu(self):
        self.gpu = False

    def to_gpu(self):
        self.gpu = True
#@ end
#@ step 60


class SeqDataLoader(DataLoader):
    """시계열을 batch_size개의 흐름으로 나눠 읽는다 (섞지 않는다). N개를
    batch_size개로 나누면 흐름 k는 k * (N // batch_size)에서 시작해 한 칸씩
    간다."""

    def __init__(self, dataset, batch_size, gpu=False):
        super().__init__(dataset=dataset, batch_size=batch_size, shuffle=False,
                         gpu=gpu)

    def __next__(self):
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration

        jump = self.data_size // self.batch_size
        batch_index = [(i * jump + self.iteration) % self.data_size for i in
                       range(self.batch_size)]
        batch = [self.dataset[i] for i in batch_index]

        xp = cuda.cupy if self.gpu else np
        x = xp.array([example[0] for example in batch])
        t = xp.array([example[1] for example in batch])

        self.iteration += 1
        return x, t
#@ end
