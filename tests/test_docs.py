"""The Sphinx site builds with warnings as errors, reads math without a network, finds
Korean words inside their particle forms, and its tutorial code boxes fit 80 columns."""
import html
import json
import pathlib
import re
import shutil
import subprocess
import sys
import time
import unicodedata

import pytest

from _subproc import python_env

pytest.importorskip('sphinx', reason='docs extra not installed (pip install -e ".[test]")')
pytest.importorskip('myst_parser', reason='docs extra not installed')

DOCS = pathlib.Path(__file__).resolve().parent.parent / 'docs'


def build_html(source, out):
    """``sphinx -W`` (warnings are errors) from ``source`` into ``out``, offline; returns ``out``."""
    proc = subprocess.run([sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-b', 'html', '-q',
                           str(source), str(out)], capture_output=True, text=True,
                          timeout=600, env=python_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    """The documentation site, built once for the checks below."""
    return build_html(DOCS, tmp_path_factory.mktemp('site') / 'html')


def test_docs_build_with_warnings_as_errors(site):
    pages = list(site.glob('*.html'))
    assert any(p.name == 'api.html' for p in pages)
    for page in pages:
        text = page.read_text(encoding='utf-8')
        scripts = re.findall(r'<script[^>]+src="([^"]+)"', text)
        remote = [s for s in scripts if s.startswith(('http:', 'https:', '//'))]
        assert not remote, f'{page.name} loads scripts from the network: {remote}'


# =============================================================================
# Korean search (docs/korean_search.py)
# =============================================================================
def search_index(html):
    """The search index a built site ships: ``Search.setIndex({...})`` in searchindex.js."""
    text = (html / 'searchindex.js').read_text(encoding='utf-8')
    return json.loads(text[text.index('(') + 1:text.rindex(')')])


def pages_found(index, term):
    """Docnames a search for ``term`` (already stemmed) finds in the body or a title."""
    found = set()
    for table in ('terms', 'titleterms'):
        hits = index[table].get(term, [])
        found.update(index['docnames'][i] for i in ([hits] if isinstance(hits, int) else hits))
    return found


SMALL_PAGES = {
    'a': '역전파를 배운다.',
    'b': '역전파는 연쇄 법칙을 거꾸로 따라간다.',
    'c': '순전파만 계산하는 Variable의 값.',
}


def small_project(folder, extensions):
    folder.mkdir()
    (folder / 'conf.py').write_text(
        f'import sys\nsys.path.insert(0, {str(DOCS)!r})\n'
        f"project = 't'\nlanguage = 'ko'\nextensions = {extensions!r}\n", encoding='utf-8')
    toctree = '\n'.join(f'   {name}' for name in SMALL_PAGES)
    (folder / 'index.rst').write_text(f'Index\n=====\n\n.. toctree::\n\n{toctree}\n', encoding='utf-8')
    for name, text in SMALL_PAGES.items():
        (folder / f'{name}.rst').write_text(f'Page {name}\n======\n\n{text}\n', encoding='utf-8')
    return folder


def test_korean_search_finds_words_inside_their_particle_forms(tmp_path):
    index = search_index(build_html(small_project(tmp_path / 'ko', ['korean_search']),
                                    tmp_path / 'ko_html'))
    assert pages_found(index, '역전파') == {'a', 'b'}
    assert pages_found(index, '역전파를') == {'a'}
    assert pages_found(index, '역') == {'a', 'b'}
    assert pages_found(index, '순전파') == {'c'}
    assert pages_found(index, '전파') == set()  # a prefix search, not a substring search
    assert pages_found(index, 'variabl') == {'c'}  # English words split from 의, stemmed as before
    assert pages_found(index, '의') == {'c'}
    # Sphinx's default (English) search indexes whole words: 역전파 finds neither page.
    english = search_index(build_html(small_project(tmp_path / 'en', []), tmp_path / 'en_html'))
    assert pages_found(english, '역전파') == set()
    assert pages_found(english, 'variabl') == set()


def test_korean_search_on_the_site_finds_every_page_with_a_suffixed_form(site):
    index = search_index(site)
    suffixed = {path.relative_to(DOCS).with_suffix('').as_posix()
                for path in DOCS.rglob('*.md') if re.search('역전파[를는]', path.read_text(encoding='utf-8'))}
    suffixed &= set(index['docnames'])
    assert suffixed, 'no page says 역전파를 or 역전파는'
    assert suffixed <= pages_found(index, '역전파')
    language_data = (site / '_static' / 'language_data.js').read_text(encoding='utf-8')
    assert 'window.Stemmer = EnglishStemmer;' in language_data and 'var EnglishStemmer' in language_data
    assert 'var splitQuery' in language_data and '\\uac00-\\ud7a3' in language_data


def test_korean_split_words_matches_its_doc():
    sys.path.insert(0, str(DOCS))
    try:
        import korean_search
    finally:
        sys.path.remove(str(DOCS))
    assert korean_search.split_words('역전파를 Variable의 grad, 3단계') == [
        '역', '역전', '역전파', '역전파를', 'Variable', '의', 'grad', '3', '단', '단계']



def chromium():
    webdriver = pytest.importorskip('selenium.webdriver', reason='selenium is not installed '
                                    '(pip install -e ".[test]")')
    browser = shutil.which('chromium') or shutil.which('chromium-browser')
    driver = shutil.which('chromedriver')
    if browser is None or driver is None:
        pytest.skip('chromium / chromedriver not installed (apt-get install chromium chromium-driver)')
    options = webdriver.ChromeOptions()
    for arg in ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'):
        options.add_argument(arg)
    options.binary_location = browser
    return webdriver.Chrome(service=webdriver.ChromeService(driver), options=options)


# The search page's own steps: split and stem the query (splitter and stemmer from
# language_data.js), then look the terms up in the loaded index.  Calling them directly skips
# the result snippets, which the page fetches one by one and file:// refuses.
SEARCH_JS = """
const [query, terms, excluded, highlight, objects] = Search._parseQuery(arguments[0]);
return Search._performSearch(query, terms, excluded, highlight, objects).map(r => r[0]);
"""


def test_korean_search_in_a_real_browser(site):
    """The built page's JavaScript finds pages that only say 역전파를 / 역전파는."""
    index = search_index(site)
    only_suffixed = pages_found(index, '역전파') - {
        page for page in index['docnames']
        if re.search('역전파(?![가-힣])', (site / f'{page}.html').read_text(encoding='utf-8'))}
    assert only_suffixed, 'the site has no page that says only 역전파를 / 역전파는'
    browser = chromium()
    try:
        browser.get((site / 'search.html').as_uri())
        deadline = time.monotonic() + 30
        while not browser.execute_script('return Search.hasIndex();'):
            assert time.monotonic() < deadline, 'the search index never loaded'
            time.sleep(0.05)
        found = {query: set(browser.execute_script(SEARCH_JS, query))
                 for query in ('역전파', 'Variable의', '전파')}
        split = browser.execute_script("return splitQuery('Variable의 역전파를');")
        errors = [e for e in browser.get_log('browser') if e['level'] == 'SEVERE']
    finally:
        browser.quit()
    assert not errors, errors
    assert split == ['Variable', '의', '역전파를']
    assert only_suffixed <= found['역전파']
    assert pages_found(index, 'variabl') <= found['Variable의']  # split where the script changes
    assert found['역전파'] - found['전파']  # a prefix search: 전파 does not find 역전파를


# Every built page: each code/output line (literal blocks and included files, as
# rendered) must fit 80 columns, counting a Hangul character as two: at 1366 px the theme
# shows about 100, so no page scrolls sideways. The pages are globbed from the build, so a
# new page is covered without editing this list; only Sphinx's generated index pages and
# its asset folders (_static, _sources, ...) are left out.
GENERATED_PAGES = {'genindex', 'search', 'py-modindex'}


def narrow_pages(site):
    """Every built .html page as 'folder/name', less GENERATED_PAGES and '_' folders."""
    pages = []
    for path in site.rglob('*.html'):
        rel = path.relative_to(site).with_suffix('')
        if rel.parts[0].startswith('_') or rel.as_posix() in GENERATED_PAGES:
            continue
        pages.append(rel.as_posix())
    return sorted(pages)


def _display_width(line):
    return sum(2 if unicodedata.east_asian_width(ch) in 'WF' else 1 for ch in line)


def _wide_lines(page_html, limit=80):
    wide = []
    for block in re.findall(r'<pre>(.*?)</pre>', page_html, re.S):
        for line in html.unescape(re.sub(r'<[^>]+>', '', block)).splitlines():
            if _display_width(line) > limit:
                wide.append(line)
    return wide


def test_wide_line_detector():
    assert _wide_lines('<pre>' + 'x' * 80 + '\n' + '가' * 41 + '</pre>') == ['가' * 41]
    assert _wide_lines('<pre><span>a &lt; b</span></pre><p>' + 'x' * 200 + '</p>') == []


def test_narrow_pages_are_every_built_page(site):
    pages = narrow_pages(site)
    sources = {p.relative_to(DOCS).with_suffix('').as_posix() for p in DOCS.rglob('*.md')
               if not p.relative_to(DOCS).parts[0].startswith('_')}
    assert sources <= set(pages), sorted(sources - set(pages))
    assert {'tutorial/stage3', 'tutorial/stage4', 'tutorial/stage5', 'distributed'} <= set(pages)
    assert not GENERATED_PAGES & set(pages)


def test_code_lines_fit_80_columns_on_every_page(site):
    report = []
    for page in narrow_pages(site):
        wide = _wide_lines((site / f'{page}.html').read_text(encoding='utf-8'))
        if wide:
            report.append(f'{page}: {len(wide)} line(s) wider than 80 columns:')
            report.extend(wide)
    assert not report, '\n'.join(report)
