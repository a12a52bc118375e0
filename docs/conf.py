"""Sphinx configuration: Korean MyST Markdown pages, API reference from docstrings,
math rendered by a bundled MathJax (no network when building or reading)."""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, ROOT)

# The example graph pictures are regenerated from the code on every build.
sys.path.insert(0, os.path.dirname(__file__))
import make_graphs  # noqa: E402

make_graphs.main([])

project = 'dezero_kr'
author = 'dezero_kr developers'
language = 'ko'
copyright = '2026, dezero_kr developers'

extensions = [
    'myst_parser',
    'sphinx.ext.autodoc',
    'sphinx.ext.napoleon',  # Google-style 'Args:' sections in docstrings
    'sphinx-mathjax-offline',  # ships MathJax inside the built site
    'korean_search',  # docs/korean_search.py: 역전파 finds 역전파를 / 역전파는
]
napoleon_use_ivar = True  # 'Attributes:' as fields, not duplicate attribute entries
myst_enable_extensions = ['dollarmath', 'amsmath', 'colon_fence']
myst_heading_anchors = 3
source_suffix = {'.md': 'markdown'}
exclude_patterns = ['_build', 'README.md']
root_doc = 'index'

autodoc_member_order = 'bysource'
autodoc_default_options = {'members': True, 'undoc-members': False}

html_theme = 'alabaster'
html_static_path = ['_static']
# Reading comfort: one sans font family for Hangul and Latin text (the theme's default is
# a serif for Latin only), and a body column wide enough for 80 columns of code at 1366 px.
_SANS = '"Noto Sans KR", "NanumGothic", "Nanum Gothic", "Apple SD Gothic Neo", "Malgun Gothic", sans-serif'
html_theme_options = {
    'page_width': '1180px',
    'sidebar_width': '230px',
    'font_family': _SANS,
    'head_font_family': _SANS,
    'font_size': '16px',
    'code_font_family': '"D2Coding", "NanumGothicCoding", "DejaVu Sans Mono", "Menlo", "Consolas", monospace',
    'code_font_size': '0.9em',
}
html_css_files = ['dezero_kr.css']
html_title = 'dezero_kr'

# The live backward-pass viewers of backprop_view.md: written on every build into
# docs/_generated/viewer/ and copied into the site as they are (self-contained pages).
import make_backprop_view  # noqa: E402

make_backprop_view.main(['--out', os.path.join(os.path.dirname(__file__), '_generated', 'viewer')])
html_extra_path = ['_generated']
exclude_patterns.append('_generated')
