"""Draw the exported ONNX graph of the Digits CNN for docs/onnx.md (docs/_static/onnx/).

    python docs/make_onnx_graph.py            # write digits_cnn.dot and digits_cnn.svg
    python docs/make_onnx_graph.py --check    # exit 1 if the committed .dot differs from the code's

The model (``examples/digits_cnn.py``'s ``DigitsCNN``, weights from seed 0) is
exported with ``dezero_kr.onnx.export`` and its ONNX graph, with the shapes
ONNX's shape inference finds, drawn by ``dezero_kr.onnx.to_dot`` and
``dezero_kr.graph.render_dot`` (graphviz-pure when installed, so the SVG is the
same on every machine).  Needs the ``onnx`` package (``pip install -e ".[onnx]"``);
the docs build does not run it, the tests check that the committed text is current.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'examples'))

import dezero_kr.onnx  # noqa: E402
from dezero_kr import Variable  # noqa: E402
from dezero_kr.graph import find_graphviz_pure, find_renderer, render_dot  # noqa: E402
from digits_cnn import DigitsCNN  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, '_static', 'onnx')
STEM = 'digits_cnn'


def dot_text():
    """The DOT text of the exported Digits CNN (with inferred shapes)."""
    import onnx  # the [onnx] extra: only this script needs it
    np.random.seed(0)
    model = DigitsCNN(0.3)
    x = np.zeros((1, 1, 8, 8), np.float32)
    model(Variable(x))
    with tempfile.TemporaryDirectory() as tmp:
        proto = dezero_kr.onnx.export(model, x, os.path.join(tmp, 'm.onnx'), input_names=['image'],
                                      output_names=['scores'])
    return dezero_kr.onnx.to_dot(onnx.shape_inference.infer_shapes(proto))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=DEFAULT_OUT, help='output folder (default: %(default)s)')
    parser.add_argument('--check', action='store_true', help='only check the committed .dot')
    args = parser.parse_args(argv)
    text = dot_text()
    dot_path = os.path.join(args.out, STEM + '.dot')
    if args.check:
        try:
            with open(dot_path, encoding='utf-8') as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        if not same or not os.path.isfile(dot_path[:-4] + '.svg'):
            print(f'{dot_path} is stale; run `python docs/make_onnx_graph.py`')
            return 1
        print(f'{dot_path} is up to date')
        return 0
    os.makedirs(args.out, exist_ok=True)
    path = render_dot(text, os.path.join(args.out, STEM + '.svg'),
                      renderer=find_graphviz_pure() or find_renderer())
    print(f'wrote {path} and {dot_path}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
