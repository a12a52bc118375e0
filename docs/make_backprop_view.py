"""Write the live backward-pass viewers that docs/backprop_view.md embeds.

    python docs/make_backprop_view.py                 # docs/_generated/viewer/*.html
    python docs/make_backprop_view.py --out DIR       # somewhere else
    python docs/make_backprop_view.py --screenshot    # also docs/_static/backprop_view.png

The docs build (docs/conf.py) runs this script and Sphinx copies the pages into
the site as they are (``html_extra_path``): each page is one self-contained
file, so the site still needs no network.  The pages are generated, never
committed; only the README's screenshot is (it needs headless Chromium and
chromedriver at /usr/bin).
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dezero_kr.graph.backprop_view import plot_backward, record_forward  # noqa: E402
from dezero_kr.core import Variable  # noqa: E402
from make_graphs import seed_graph  # noqa: E402  (this folder: docs/)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, '_generated', 'viewer')
SCREENSHOT = os.path.join(HERE, '_static', 'backprop_view.png')


def seed_view():
    """u = x*y; L = u*u + u at x=2, y=3 (dL/dx = 39, dL/dy = 26), forward recorded."""
    with record_forward() as rec:
        x, y, L = seed_graph()  # the same graph as docs/graph.md's pictures
    return plot_backward(L, forward=rec, title='L = u*u + u, u = x*y')


def create_graph_views():
    """y = x**4 at x=2: backward(create_graph=True) gives gx = 4x^3 = 32 as a graph,
    whose own backward gives 12x^2 = 48."""
    x = Variable(np.array(2.0), name='x')
    y = x ** 4
    y.name = 'y'
    first = plot_backward(y, create_graph=True, title='y = x**4, create_graph=True')
    gx = x.grad
    gx.name = 'gx'
    x.cleargrad()
    second = plot_backward(gx, title='gx = dy/dx 의 역전파 (backward of the gradient)')
    return first, second


def views():
    yield 'seed', seed_view()
    first, second = create_graph_views()
    yield 'create_graph', first
    yield 'grad_of_grad', second


def write(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for stem, view in views():
        view.save(os.path.join(out_dir, f'{stem}.html'))
        names.append(stem)
    return names


def screenshot(page, png, steps=2):
    """Open ``page`` in headless Chromium, press next ``steps`` times, save ``png``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = '/usr/bin/chromium'
    for arg in ('--headless=new', '--no-sandbox', '--disable-gpu', '--window-size=1280,720',
                '--hide-scrollbars'):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=options)
    try:
        driver.get('file://' + os.path.abspath(page))
        for _ in range(steps):
            driver.find_element('id', 'dz-next').click()
        with tempfile.TemporaryDirectory(dir=os.path.dirname(png)) as tmp:
            shot = os.path.join(tmp, 'shot.png')
            driver.save_screenshot(shot)
            os.replace(shot, png)
    finally:
        driver.quit()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', default=DEFAULT_OUT, help='output folder (default: %(default)s)')
    parser.add_argument('--screenshot', action='store_true',
                        help=f'also save the seed page after step 2 as {SCREENSHOT}')
    args = parser.parse_args(argv)
    names = write(args.out)
    print(f'wrote {len(names)} viewers to {args.out}: {", ".join(names)}')
    if args.screenshot:
        screenshot(os.path.join(args.out, 'seed.html'), SCREENSHOT)
        print(f'wrote {SCREENSHOT}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
