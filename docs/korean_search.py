"""Sphinx extension: a search language for Korean pages, so that 역전파 finds 역전파를 and 역전파는.

Sphinx has no Korean search language and falls back to English, which indexes
whole words.  Korean attaches particles and endings to the end of a word
(역전파 + 를, 역전파 + 는, 계산 + 한다), so the page's word is the reader's
word plus a suffix, and an exact lookup of 역전파 misses every page that only
says 역전파를.

Choice: index every *prefix* of each run of Hangul syllables (edge n-grams):
역전파를 is indexed as 역, 역전, 역전파 and 역전파를.  Any query that is the
start of a word on the page then matches exactly, with no list of particles and
endings to keep (a particle stripper misses verb endings such as 계산한다 and
needs rules for the many particle forms).  The costs: a larger index (for
this site 10,053 body terms instead of 8,058, and a searchindex.js of 382 KB
instead of 314 KB, with Sphinx 9.0), and a query also finds longer words that
start with it (전파 finds 전파하다, but not 역전파).  Korean words were never
stemmed, so nothing is lost there.

Words are also split where the script changes: ``Variable의`` is indexed as
``Variable`` (stemmed as every English word is) and ``의``; the English
default kept ``variable의`` as one term, so a search for ``Variable`` missed
it.  The query splitter (JavaScript ``splitQuery``) splits the same way, so
typing ``Variable의`` looks up ``variable`` and ``의``.  Everything that is
not Hangul is indexed exactly as Sphinx's English search does.

Enable it with ``extensions = [..., 'korean_search']`` and ``language = 'ko'``
(``html_search_language`` defaults to ``language``).
"""
import re

from sphinx.search.en import SearchEnglish

# Hangul syllables, Jamo and compatibility Jamo.
HANGUL = '\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f'
# A run of Hangul, or a run of other word characters (letters, digits, underscore).
_TOKEN = re.compile(rf'[{HANGUL}]+|(?:(?![{HANGUL}])\w)+')
_HANGUL_RUN = re.compile(rf'[{HANGUL}]+')

# The same split for queries typed in the search box.  Sphinx's default splitQuery splits only
# on non-word characters; this one also separates Hangul from other scripts, as split() does.
JS_SPLITTER = r'''
var splitQuery = (query) =>
  query.match(
    /[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]+|(?:(?![\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f])[\p{Letter}\p{Number}_\p{Emoji_Presentation}])+/gu,
  ) || [];
'''


def split_words(text):
    """The index terms of ``text``: non-Hangul words as they are, every prefix of each Hangul run.

    >>> split_words('역전파를 Variable의 grad')
    ['역', '역전', '역전파', '역전파를', 'Variable', '의', 'grad']
    """
    words = []
    for token in _TOKEN.findall(text):
        if _HANGUL_RUN.fullmatch(token):
            words.extend(token[:end] for end in range(1, len(token) + 1))
        else:
            words.append(token)
    return words


class SearchKorean(SearchEnglish):
    """Korean pages with English terms: Hangul runs as prefixes, everything else as in English."""

    lang = 'ko'
    # Sphinx names the JavaScript stemmer after language_name (window.Stemmer = EnglishStemmer):
    # the English stemmer it loads leaves Hangul unchanged, as the Python one does.
    language_name = 'English'
    js_splitter_code = JS_SPLITTER

    def split(self, input):  # noqa: A002 (Sphinx's parameter name)
        return split_words(input)


def setup(app):
    app.add_search_language(SearchKorean)
    return {'version': '1.0', 'parallel_read_safe': True, 'parallel_write_safe': True}
