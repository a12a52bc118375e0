"""52단계: GPU 지원 -- 같은 코드를 NumPy(CPU)와 CuPy(GPU)에서

딥러닝의 계산은 대부분 큰 배열의 곱셈과 덧셈이라 GPU가 훨씬 빠르다. CuPy는 NumPy와 거의 같은
API를 GPU에서 제공한다(cupy.array, cupy.exp, ...). 그래서 이 단계에서 mydezero에 새 파일 cuda.py를
만들고, 배열을 새로 만드는 곳(역전파의 시작값, 옵티마이저의 상태, GetItemGrad, DataLoader ...)에서
numpy 대신 "배열에 맞는 모듈" xp를 쓰게 고친다(python steps/mydezero_at.py --changes의 52단계).

    xp = mydezero.cuda.get_array_module(x)    # x가 cupy 배열이면 cupy, 아니면 numpy
    y = xp.exp(x)

사용자 코드에서 바뀌는 것은 세 줄이다.

    if mydezero.cuda.gpu_enable:         # CuPy가 설치되어 있고 GPU가 실제로 보일 때만 True
        train_loader.to_gpu()            # 배치를 GPU 배열로
        model.to_gpu()                   # 매개변수를 GPU로 (옵티마이저 상태도 GPU에 생긴다)

GPU로 돌리는 법: NVIDIA GPU와 드라이버가 있는 컴퓨터에서 CUDA 버전에 맞는 CuPy를 설치하고 (`pip
install cupy-cuda12x`; CUDA 11이면 cupy-cuda11x) `python steps/step52.py --gpu` 로 실행한다.
CuPy가 없으면 mydezero는 NumPy만으로 동작하고, GPU로 옮기는 호출(cuda.as_cupy, model.to_gpu())은
'CuPy cannot be loaded. Install CuPy!' 오류를 낸다(DeZero와 같은 문구).

표준 출력에는 어느 컴퓨터에서나 같은 내용만 쓴다: --gpu가 없으면 항상 CPU로 돈다. 이 컴퓨터에
GPU가 있는지(gpu_enable), 에폭당 걸린 시간은 표준 오류로 알린다.

에폭: DEZERO_KR_FAST=1(테스트)이면 2에폭, 그냥 실행하면 5에폭 (Digits, 51단계와 같은 모델).

출력에서 볼 것
* numpy 배열에는 get_array_module이 numpy를 돌려준다.
* 같은 학습 코드가 어느 장치에서 도는지와 손실
"""
import sys
import time

import numpy as np

import mydezero
import mydezero.functions as F
from mydezero import DataLoader, cuda, optimizers
from mydezero.datasets import Digits
from mydezero.models import MLP

from _common import FAST


if __name__ == '__main__':
    print(f'[환경] cuda.gpu_enable = {cuda.gpu_enable}', file=sys.stderr)
    x = np.array([1.0, 2.0])
    print('get_array_module(numpy 배열) ->', cuda.get_array_module(x).__name__)

    want_gpu = '--gpu' in sys.argv[1:]
    use_gpu = want_gpu and cuda.gpu_enable
    if want_gpu and not use_gpu:
        try:
            cuda.as_cupy(np.zeros(1))  # GPU가 없을 때 어떤 오류가 나는지 보여 준다
        except Exception as e:
            print(f'[GPU 없음] {e}', file=sys.stderr)
    if use_gpu:
        print('장치: GPU (CuPy)')
    elif want_gpu:
        print('장치: CPU (NumPy) -- GPU를 쓸 수 없어 CPU로 돈다')
    else:
        print('장치: CPU (NumPy) -- GPU로 돌리려면 --gpu')

    max_epoch = 2 if FAST else 5
    np.random.seed(0)
    train_set = Digits(train=True)
    train_loader = DataLoader(train_set, batch_size=100)
    model = MLP((100, 10), activation=F.relu)
    optimizer = optimizers.MomentumSGD(lr=0.1).setup(model)
    if use_gpu:
        train_loader.to_gpu()
        model.to_gpu()

    for epoch in range(max_epoch):
        start = time.perf_counter()
        sum_loss = 0.0
        for x, t in train_loader:
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(t)  # float()는 GPU 배열도 CPU 수로 가져온다
        seconds = time.perf_counter() - start
        print(f'[시간] epoch {epoch + 1}: {seconds:.3f}초', file=sys.stderr)
        print(f'epoch {epoch + 1}: 손실 {sum_loss / len(train_set):.4f}')

    W = model.l0.W.data
    print('학습한 W의 배열 모듈:', cuda.get_array_module(W).__name__,
          '| CPU로 가져온 모양:', cuda.as_numpy(W).shape)
    with mydezero.no_grad():
        x, t = Digits(train=False)[:]
        if use_gpu:
            x = cuda.as_cupy(x)
        y = model(x)
    acc = F.accuracy(y, cuda.as_cupy(t) if use_gpu else t)
    print(f'테스트 정확도: {float(acc.data):.4f}')
