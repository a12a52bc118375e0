"""The cache directory and verified, atomic downloads.

Every downloaded file lives in one flat folder, ``cache_dir()``:

* default ``~/.dezero_kr`` (DeZero used ``~/.dezero``);
* override it with the environment variable ``DEZERO_KR_CACHE``, read on
  every call, so tests and notebooks can point it elsewhere at any time.

``get_file(url)`` returns the path of the cached copy, downloading it first
when it is missing.  A download

1. goes to a temporary file *in the cache folder itself* (so the final
   ``os.replace`` is an atomic rename on the same file system),
2. is retried once when it breaks off (the retry asks for the missing bytes
   with an HTTP ``Range`` header when it already has some),
3. is checked against a SHA-256 digest when one is given, and
4. only then replaces the cached file.

So an interrupted or corrupt download never leaves a half-written file under
the final name and never destroys a good cached copy.  When every URL fails
(for example offline), ``DownloadError`` lists each URL with its reason and
the exact path where the file can be placed by hand.

Only the standard library is used (``urllib``); nothing here needs the
network until ``get_file`` is called.
"""
import hashlib
import numbers
import os
import urllib.error
import urllib.parse

from dezero_kr.fileio import atomic_write, remove_stale_temp_files  # noqa: F401 (atomic_write: public name)
from dezero_kr.fileio import remove_quietly as _remove_quietly, temp_name as _temp_name
from dezero_kr.progress import progress as _progress_bar

# urllib.request and http.client (which load ssl and email, ~40 ms) are imported
# in the two functions that talk to a server, so `import dezero_kr` stays light.

ENV_CACHE = 'DEZERO_KR_CACHE'
DEFAULT_CACHE = os.path.join('~', '.dezero_kr')

_CHUNK = 1 << 16
_USER_AGENT = 'dezero_kr-downloader/1.0 (Python urllib)'

__all__ = ['cache_dir', 'get_file', 'sha256sum', 'atomic_write',
           'DownloadError', 'ChecksumError', 'ENV_CACHE', 'DEFAULT_CACHE']


class DownloadError(OSError):
    """No URL produced a usable file.  The message says what to do by hand."""


class ChecksumError(DownloadError):
    """Every copy that arrived had the wrong SHA-256 digest."""


class _IncompleteDownload(OSError):
    """The server closed the connection before sending Content-Length bytes."""


def cache_dir():
    """Return the absolute cache folder (``$DEZERO_KR_CACHE`` or ``~/.dezero_kr``).

    The folder is not created here; ``get_file`` and ``atomic_write`` create it
    when they write.
    """
    path = os.environ.get(ENV_CACHE) or DEFAULT_CACHE
    return os.path.abspath(os.path.expanduser(path))


def sha256sum(path):
    """Return the lower-case hex SHA-256 digest of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def _file_name_from_url(url):
    name = urllib.parse.urlsplit(url).path.rstrip('/').rsplit('/', 1)[-1]
    if not name:
        raise ValueError(f'cannot derive a file name from {url!r}; pass file_name=')
    return urllib.parse.unquote(name)


def _error_text(error):
    if isinstance(error, urllib.error.HTTPError):
        return f'HTTP {error.code} {error.reason}'
    if isinstance(error, urllib.error.URLError):
        return f'{error.reason}'
    return f'{type(error).__name__}: {error}'


def _download_once(url, part, timeout, show_progress, label):
    """Make one request and write the body into ``part``.

    When ``part`` already holds bytes, ask only for the rest (``Range``).  A
    server that ignores the header answers 200 with the whole file, and the
    part file is then rewritten from the start.
    """
    have = os.path.getsize(part)
    headers = {'User-Agent': _USER_AGENT}
    if have:
        headers['Range'] = f'bytes={have}-'
    import urllib.request  # here, not at the top: see the imports
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        resumed = have > 0 and response.status == 206
        if resumed and not response.headers.get('Content-Range', '').startswith(f'bytes {have}-'):
            # A 206 for some other range cannot be appended; start over.
            os.truncate(part, 0)
            raise _IncompleteDownload(f'server answered an unexpected range '
                                      f'({response.headers.get("Content-Range")!r})')
        start = have if resumed else 0
        expected = _expected_size(response.headers, start, resumed)
        with open(part, 'ab' if resumed else 'wb') as out, \
                _progress_bar(desc=label, total=expected, initial=start, unit='B', unit_scale=True,
                         unit_divisor=1024, disable=not show_progress) as bar:
            while True:
                # read(n) returns b'' when the peer closes early, even when
                # fewer than Content-Length bytes came; the size check below
                # turns that into an error instead of a silently short file.
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                bar.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())
            size = out.tell()
    if expected is not None and size != expected:
        raise _IncompleteDownload(f'connection closed after {size} of {expected} bytes')


def _expected_size(headers, start, resumed):
    """The file's full size from Content-Length (or a 206's Content-Range total); None if not sent.

    A body shorter than this is never kept: the caller compares the bytes on disk with it.
    """
    length = (headers.get('Content-Length') or '').strip()
    if length.isdigit():
        return start + int(length)
    total = (headers.get('Content-Range') or '').rpartition('/')[2].strip()
    if resumed and total.isdigit():
        return int(total)
    return None


def _timeout_from_env():
    """Seconds from ``$DEZERO_KR_TIMEOUT`` (default 30); a clear error for anything but a positive number."""
    raw = os.environ.get('DEZERO_KR_TIMEOUT', '30')
    try:
        value = float(raw)
    except ValueError:
        value = None
    if value is None or not value > 0 or value == float('inf'):
        raise ValueError(f'get_file: the environment variable DEZERO_KR_TIMEOUT must be a positive '
                         f'number of seconds, got {raw!r}')
    return value


def _download_with_retry(url, part, timeout, show_progress, label):
    """Try ``url`` twice; the second try resumes from the bytes already on disk."""
    import http.client  # here, not at the top: see the imports
    error = None
    for _ in range(2):
        try:
            _download_once(url, part, timeout, show_progress, label)
            return
        except urllib.error.HTTPError as e:  # before URLError: it is a subclass
            error = e
            if e.code == 416:  # our Range was refused: restart from byte 0
                os.truncate(part, 0)
                continue
            if 400 <= e.code < 500:
                raise  # 403/404 will not change on a retry: go to the next mirror
        except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
            error = e  # refused, reset, timeout, short body: retry once
    raise error


def _checked_timeout(timeout):
    """``timeout`` in seconds (None: ``$DEZERO_KR_TIMEOUT``); ``ValueError`` unless a positive finite number."""
    if timeout is None:
        return _timeout_from_env()
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or not 0 < timeout < float('inf'):
        raise ValueError(f'get_file: timeout must be a positive number of seconds, got {timeout!r}')
    return timeout


def _checked_file_name(url, file_name):
    """The cache file name: ``file_name`` or the URL's last segment; ``ValueError`` if it has a folder part."""
    name = file_name if file_name is not None else _file_name_from_url(url)
    if not name or os.path.basename(name) != name or name in ('.', '..'):
        raise ValueError(f'file_name must be a plain file name, not {name!r}')
    return name


def _download_first(urls, target, expected, timeout, show_progress, label):
    """Put the first URL's file that arrives whole (and matches ``expected``) at ``target``.

    Returns None on success, else ``(failures, checksum_failures)``: each
    URL with its reason, and how many of them were SHA-256 mismatches.
    """
    os.makedirs(os.path.dirname(target), exist_ok=True)
    remove_stale_temp_files(os.path.dirname(target))  # .part files of killed downloads
    part = _temp_name(target)
    failures = []
    checksum_failures = 0
    try:
        for candidate in urls:
            open(part, 'wb').close()  # each mirror starts from byte 0
            try:
                _download_with_retry(candidate, part, timeout, show_progress, label)
            except Exception as e:
                failures.append((candidate, _error_text(e)))
                continue
            if expected is not None:
                got = sha256sum(part)
                if got != expected:
                    checksum_failures += 1
                    failures.append((candidate, f'SHA-256 mismatch: got {got}, expected {expected}'))
                    continue
            os.replace(part, target)
            return None
    finally:
        _remove_quietly(part)
    return failures, checksum_failures


def _manual_help(name, target, urls, sha256, failures, stale):
    """The ``DownloadError`` message: what was tried, and where to put the file by hand."""
    lines = [f'Could not download {name!r}.']
    if failures:
        lines.append('Tried:')
        lines.extend(f'  - {url}  ->  {reason}' for url, reason in failures)
    if stale:
        lines.append(f'The cached copy at {target} does not match the expected SHA-256; '
                     'it was left in place but will not be used.')
    lines.append('To work offline, download the file on a machine with internet access '
                 '(any URL below) and place it by hand at:')
    lines.append(f'  {target}')
    lines.append('URLs:')
    lines.extend(f'  {url}' for url in urls)
    if sha256:
        lines.append(f'Expected SHA-256: {sha256}')
    lines.append(f'(The cache folder is {os.path.dirname(target)}; change it with the '
                 f'{ENV_CACHE} environment variable, default {DEFAULT_CACHE}.)')
    return '\n'.join(lines)


def get_file(url, file_name=None, sha256=None, mirrors=(), progress=True, timeout=None):
    """Return the local path of ``url``'s file, downloading it into the cache first if needed.

    Args:
        url: the primary URL (DeZero's first argument).
        file_name: name inside ``cache_dir()``; defaults to the URL's last
            path segment (DeZero's second argument).
        sha256: expected hex digest.  When given, a cached copy is checked on
            every call and a download is kept only if it matches.  When None
            (digest unknown), any existing file is trusted, as in DeZero.
        mirrors: further full URLs for the same file, tried in order after ``url``.
        progress: draw a download bar on standard error.
        timeout: seconds to wait on a stalled connection; None reads
            ``$DEZERO_KR_TIMEOUT`` (default 30), so datasets that call
            ``get_file`` for you can be told to give up sooner.

    Returns:
        str: absolute path of the verified file in ``cache_dir()``.

    Raises:
        ChecksumError: every copy that arrived had the wrong digest.
        DownloadError: no URL worked (offline, 404, ...).  The message lists
            each URL with its error and where to put the file by hand.
        ValueError: ``timeout`` (or ``$DEZERO_KR_TIMEOUT``) is not a positive
            number, or ``file_name`` is not a plain file name (it has a folder).
    """
    timeout = _checked_timeout(timeout)
    name = _checked_file_name(url, file_name)
    expected = sha256.lower() if sha256 else None
    target = os.path.join(cache_dir(), name)

    stale = False
    if os.path.exists(target):
        if expected is None or sha256sum(target) == expected:
            return target
        # A corrupt or outdated copy: fetch a good one and swap it in only
        # after it verifies.  If that fails the old file is left untouched.
        stale = True

    urls = [url, *mirrors]
    failed = _download_first(urls, target, expected, timeout, progress, name)
    if failed is None:
        return target
    failures, checksum_failures = failed
    message = _manual_help(name, target, urls, expected, failures, stale)
    if checksum_failures == len(urls):
        raise ChecksumError(message)
    raise DownloadError(message)
