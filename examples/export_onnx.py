"""Train the Digits CNN, export it to ONNX and run the file in ONNX Runtime (학습한 모델을 ONNX로).

    pip install -e ".[onnx]" onnxruntime
    python examples/export_onnx.py                   # 15 epochs, writes digits_cnn.onnx here
    python examples/export_onnx.py --epochs 2 --out model.onnx

The model and the training are those of ``digits_cnn.py`` (random affine
distortions, label smoothing, Adam with warm-up + cosine).  After training:

1. ``dezero_kr.onnx.export(model, x, path)`` runs one forward pass in test mode
   (dropout off) and writes its graph; the weights are initializers named by
   their paths (``conv1/W``, ``fc2/b``), as ``save_weights`` names them.
2. ONNX Runtime loads the file and scores the 297 test images in one batch
   (the file was exported with a batch of 1: axis 0 is dynamic).
3. Both accuracies are printed, with the largest score difference between
   dezero_kr and ONNX Runtime and the number of images whose predicted class differs.

Without ``onnxruntime`` the file is still written and the script says how to
install it (exit status 0); without ``onnx`` the export says ``pip install
"dezero_kr[onnx]"``.
"""
import math
import sys
import time

import numpy as np

import dezero_kr.functions as F
import dezero_kr.onnx
from dezero_kr import DataLoader, no_grad, test_mode
from dezero_kr.datasets import Digits
from dezero_kr.optimizers import Adam, WarmupCosine
from dezero_kr.paths import display_path

import _util
from digits_cnn import DigitsCNN
from digits_mlp import random_affine, train


def train_cnn(args):
    """``digits_cnn.py``'s training, ``args.epochs`` epochs: the trained model and the test set."""
    np.random.seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train_set, test_set = Digits(train=True, flatten=False), Digits(train=False, flatten=False)
    loader = DataLoader(train_set, batch_size=32, seed=args.seed)
    model = DigitsCNN(0.3)
    optimizer = Adam(alpha=0.003).setup(model)
    total_steps = args.epochs * loader.max_iter
    optimizer.add_hook(WarmupCosine(0.003, warmup_steps=math.ceil(0.2 * total_steps),
                                    total_steps=total_steps))

    def distort(x):
        return random_affine(x.reshape(len(x), 64), rng).reshape(x.shape)

    train(args, model, optimizer, loader, test_set, distort, 0.1, log_every=5)
    return model, test_set


def run_onnx(path, images):
    """Scores of ``images`` from ONNX Runtime, or None (with a hint) when it is not installed."""
    try:
        import onnxruntime
    except ImportError:
        print('[ONNX Runtime 없음 / not installed] pip install onnxruntime 으로 설치하면 '
              f'{display_path(path)} 를 실행해 봅니다 (to run the file)')
        return None
    session = onnxruntime.InferenceSession(path, providers=['CPUExecutionProvider'])
    return session.run(None, {session.get_inputs()[0].name: images})[0]


def main(argv=None):
    p = _util.parser(__doc__, epochs=15)
    p.add_argument('--out', default='digits_cnn.onnx', help='the ONNX file (default: digits_cnn.onnx)')
    args = p.parse_args(argv)
    start = time.perf_counter()

    model, test_set = train_cnn(args)
    images, labels = test_set.data.astype(np.float32), test_set.label
    with test_mode(), no_grad():
        scores = model(images).data
    accuracy = float((scores.argmax(axis=1) == labels).mean())

    dezero_kr.onnx.export(model, images[:1], args.out, input_names=['image'], output_names=['scores'])
    print(f'[ONNX 저장 / saved] {display_path(args.out)}')
    onnx_scores = run_onnx(args.out, images)
    if onnx_scores is not None:
        onnx_accuracy = float((onnx_scores.argmax(axis=1) == labels).mean())
        differ = int((onnx_scores.argmax(axis=1) != scores.argmax(axis=1)).sum())
        print(f'dezero_kr 정확도 / accuracy {accuracy:.4f}   ONNX Runtime {onnx_accuracy:.4f}')
        print(f'점수 차이 최대 / max score difference {np.abs(onnx_scores - scores).max():.2e}, '
              f'예측이 다른 이미지 / images predicted differently: {differ}')
        print(f'{_util.RESULT_PREFIX} onnx_test_accuracy = {onnx_accuracy:.4f}')
    _util.report('test_accuracy', accuracy, start)
    return 0


if __name__ == '__main__':
    sys.exit(main())
