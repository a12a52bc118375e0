"""dezero_kr.download against an HTTP server the tests run on 127.0.0.1.

Nothing here may reach the real internet: an autouse fixture makes every
non-loopback connection fail, and the cache folder is a tmp_path.
"""
import hashlib
import http.server
import os
import socket
import threading

import pytest

from dezero_kr import download
from dezero_kr.download import ChecksumError, DownloadError, atomic_write, cache_dir, get_file

BODY = bytes(range(256)) * 40  # 10,240 bytes
BODY_SHA = hashlib.sha256(BODY).hexdigest()


# -----------------------------------------------------------------------------
# fixtures: a private cache folder, a local HTTP server (conftest.py blocks the internet)
# -----------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    folder = tmp_path / 'cache'
    monkeypatch.setenv('DEZERO_KR_CACHE', str(folder))
    monkeypatch.setenv('DEZERO_KR_PROGRESS', '0')
    return folder


class _Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.0: the server closes the connection after each response, which
    # is what makes a short body end early for the client.
    def do_GET(self):
        self.server.requests.append((self.path, self.headers.get('Range')))
        route = self.server.routes.get(self.path)
        if route is None:
            self.send_error(404)
            return
        route(self)

    def log_message(self, *args):
        pass


def serve(body, ranges=True):
    """Route: send ``body``; honour ``Range: bytes=N-`` when ``ranges``."""
    def route(handler):
        start = 0
        wanted = handler.headers.get('Range')
        if ranges and wanted and wanted.startswith('bytes='):
            start = int(wanted[len('bytes='):].rstrip('-'))
        part = body[start:]
        handler.send_response(206 if start else 200)
        if start:
            handler.send_header('Content-Range', f'bytes {start}-{len(body) - 1}/{len(body)}')
        handler.send_header('Content-Length', str(len(part)))
        handler.end_headers()
        handler.wfile.write(part)
    return route


def truncated(body, sent):
    """Route: promise the whole body (Content-Length) but send only ``sent`` bytes."""
    def route(handler):
        handler.send_response(200)
        handler.send_header('Content-Length', str(len(body)))
        handler.end_headers()
        handler.wfile.write(body[:sent])
    return route


def sequence(*routes):
    """Route: the k-th request is answered by the k-th route (the last one repeats)."""
    calls = []

    def route(handler):
        routes[min(len(calls), len(routes) - 1)](handler)
        calls.append(1)
    return route


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
    httpd.routes = {}
    httpd.requests = []
    httpd.url = lambda path: f'http://127.0.0.1:{httpd.server_address[1]}{path}'
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def closed_port_url(path):
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    return f'http://127.0.0.1:{port}{path}'  # nothing listens there any more


# -----------------------------------------------------------------------------
# tests
# -----------------------------------------------------------------------------
def test_cache_dir_default_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv('DEZERO_KR_CACHE')
    assert cache_dir() == os.path.join(os.path.expanduser('~'), '.dezero_kr')
    monkeypatch.setenv('DEZERO_KR_CACHE', str(tmp_path / 'elsewhere'))
    assert cache_dir() == str(tmp_path / 'elsewhere')
    monkeypatch.setenv('DEZERO_KR_CACHE', '~/x')  # ~ is expanded
    assert cache_dir() == os.path.join(os.path.expanduser('~'), 'x')


def test_good_file_is_downloaded_verified_and_then_served_from_cache(server, cache):
    server.routes['/d/data.bin'] = serve(BODY)
    path = get_file(server.url('/d/data.bin'), sha256=BODY_SHA, progress=False)
    assert path == str(cache / 'data.bin')
    assert open(path, 'rb').read() == BODY
    assert os.listdir(cache) == ['data.bin']  # no temp file left behind

    assert get_file(server.url('/d/data.bin'), sha256=BODY_SHA.upper(), progress=False) == path
    assert len(server.requests) == 1  # second call: verified cache, no request


def test_file_name_argument_and_no_digest(server, cache):
    server.routes['/input.txt?raw=1'] = serve(b'hello')
    path = get_file(server.url('/input.txt?raw=1'), 'renamed.txt', progress=False)
    assert path == str(cache / 'renamed.txt')
    assert open(path, 'rb').read() == b'hello'
    # Without a digest an existing file is trusted as it is (DeZero's rule).
    (cache / 'renamed.txt').write_bytes(b'edited by hand')
    assert open(get_file(server.url('/input.txt?raw=1'), 'renamed.txt', progress=False),
                'rb').read() == b'edited by hand'
    assert len(server.requests) == 1


def test_bad_file_names_are_refused():
    for name in ('../evil', 'a/b', '..', ''):
        with pytest.raises(ValueError):
            get_file('http://127.0.0.1:9/x', name)


def test_checksum_mismatch_deletes_the_temp_file_and_raises(server, cache):
    corrupt = BODY[:-1] + b'X'
    server.routes['/data.bin'] = serve(corrupt)
    with pytest.raises(ChecksumError) as info:
        get_file(server.url('/data.bin'), sha256=BODY_SHA, progress=False)
    message = str(info.value)
    assert 'SHA-256 mismatch' in message
    assert hashlib.sha256(corrupt).hexdigest() in message and BODY_SHA in message
    assert os.listdir(cache) == []  # neither the bad file nor a temp file


def test_stale_cached_file_is_replaced_only_by_a_verified_copy(server, cache):
    cache.mkdir()
    (cache / 'data.bin').write_bytes(b'old and wrong')
    server.routes['/data.bin'] = serve(b'also wrong')
    with pytest.raises(ChecksumError) as info:
        get_file(server.url('/data.bin'), sha256=BODY_SHA, progress=False)
    assert 'does not match the expected SHA-256' in str(info.value)
    assert (cache / 'data.bin').read_bytes() == b'old and wrong'  # untouched
    assert os.listdir(cache) == ['data.bin']

    server.routes['/data.bin'] = serve(BODY)
    path = get_file(server.url('/data.bin'), sha256=BODY_SHA, progress=False)
    assert open(path, 'rb').read() == BODY


def test_truncated_transfer_is_retried_once_then_fails_cleanly(server, cache):
    server.routes['/data.bin'] = truncated(BODY, sent=1000)
    with pytest.raises(DownloadError) as info:
        get_file(server.url('/data.bin'), progress=False)
    assert f'connection closed after 1000 of {len(BODY)} bytes' in str(info.value)
    # One retry, asking for the missing bytes only.
    assert server.requests == [('/data.bin', None), ('/data.bin', 'bytes=1000-')]
    assert os.listdir(cache) == []


def test_truncated_transfer_resumes_with_range(server, cache):
    server.routes['/data.bin'] = sequence(truncated(BODY, sent=3000), serve(BODY))
    path = get_file(server.url('/data.bin'), sha256=BODY_SHA, progress=False)
    assert open(path, 'rb').read() == BODY
    assert server.requests == [('/data.bin', None), ('/data.bin', 'bytes=3000-')]
    assert os.listdir(cache) == ['data.bin']


def test_retry_restarts_when_the_server_ignores_range(server, cache):
    server.routes['/data.bin'] = sequence(truncated(BODY, sent=3000), serve(BODY, ranges=False))
    path = get_file(server.url('/data.bin'), sha256=BODY_SHA, progress=False)
    assert open(path, 'rb').read() == BODY  # 200 answer rewrote the part file


def test_404_falls_back_to_the_mirror_without_retrying(server, cache):
    server.routes['/mirror/data.bin'] = serve(BODY)
    path = get_file(server.url('/gone/data.bin'), sha256=BODY_SHA,
                    mirrors=[server.url('/mirror/data.bin')], progress=False)
    assert open(path, 'rb').read() == BODY
    assert [p for p, _ in server.requests] == ['/gone/data.bin', '/mirror/data.bin']


def test_checksum_failure_on_one_mirror_tries_the_next(server, cache):
    server.routes['/a/data.bin'] = serve(b'corrupt')
    server.routes['/b/data.bin'] = serve(BODY)
    path = get_file(server.url('/a/data.bin'), sha256=BODY_SHA,
                    mirrors=[server.url('/b/data.bin')], progress=False)
    assert open(path, 'rb').read() == BODY


def test_offline_error_names_every_url_and_where_to_put_the_file(server, cache):
    urls = [closed_port_url('/mnist/t10k-labels-idx1-ubyte.gz'), server.url('/missing/t10k-labels-idx1-ubyte.gz')]
    with pytest.raises(DownloadError) as info:
        get_file(urls[0], sha256=BODY_SHA, mirrors=urls[1:], progress=False)
    assert not isinstance(info.value, ChecksumError)
    message = str(info.value)
    assert "Could not download 't10k-labels-idx1-ubyte.gz'" in message
    assert f'  - {urls[0]}  ->  ' in message and 'refused' in message.lower()
    assert f'  - {urls[1]}  ->  HTTP 404' in message
    assert 'place it by hand at:\n  ' + str(cache / 't10k-labels-idx1-ubyte.gz') in message
    assert 'DEZERO_KR_CACHE' in message and BODY_SHA in message
    assert not os.path.exists(cache / 't10k-labels-idx1-ubyte.gz')
    assert os.listdir(cache) == []


def test_interrupted_download_keeps_the_old_file_and_leaves_no_temp(server, cache, monkeypatch):
    cache.mkdir()
    (cache / 'data.bin').write_bytes(b'old')

    def crash(url, part, *args):
        with open(part, 'wb') as f:
            f.write(b'half a fi')
        raise KeyboardInterrupt  # e.g. Ctrl-C in the middle of the transfer

    monkeypatch.setattr(download, '_download_once', crash)
    with pytest.raises(KeyboardInterrupt):
        get_file(server.url('/data.bin'), sha256=BODY_SHA, progress=False)
    assert (cache / 'data.bin').read_bytes() == b'old'
    assert os.listdir(cache) == ['data.bin']


def test_progress_bar_is_drawn_on_stderr(server, cache, monkeypatch, capsys):
    monkeypatch.delenv('DEZERO_KR_PROGRESS')
    server.routes['/data.bin'] = serve(BODY)
    get_file(server.url('/data.bin'), progress=True)
    err = capsys.readouterr().err
    assert 'data.bin' in err and '100%' in err


def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / 'sub' / 'out.txt'
    with atomic_write(target, 'w') as f:
        f.write('first')
    assert target.read_text() == 'first'
    with pytest.raises(RuntimeError):
        with atomic_write(target) as f:
            f.write(b'second, half')
            raise RuntimeError('boom')
    assert target.read_text() == 'first'
    assert os.listdir(target.parent) == ['out.txt']


# -----------------------------------------------------------------------------
# short bodies are never cached; the timeout variable is checked
# -----------------------------------------------------------------------------
def test_truncated_body_without_digest_is_never_cached(server, cache):
    server.routes['/data.bin'] = truncated(BODY, sent=5000)
    with pytest.raises(DownloadError, match=f'connection closed after 5000 of {len(BODY)} bytes'):
        get_file(server.url('/data.bin'), progress=False)  # no sha256: only the length can tell
    assert os.listdir(cache) == []
    server.routes['/data.bin'] = serve(BODY)  # the server is fixed: the next call downloads again
    path = get_file(server.url('/data.bin'), progress=False)
    assert open(path, 'rb').read() == BODY


def _partial_without_length(body, sent):
    """Route: a 206 that names the range and total (Content-Range) but no Content-Length, cut short."""
    def route(handler):
        start = int(handler.headers['Range'][len('bytes='):].rstrip('-'))
        handler.send_response(206)
        handler.send_header('Content-Range', f'bytes {start}-{len(body) - 1}/{len(body)}')
        handler.end_headers()
        handler.wfile.write(body[start:start + sent])
    return route


def test_resumed_body_is_checked_against_the_content_range_total(server, cache):
    server.routes['/data.bin'] = sequence(truncated(BODY, sent=3000), _partial_without_length(BODY, 2000))
    with pytest.raises(DownloadError, match=f'connection closed after 5000 of {len(BODY)} bytes'):
        get_file(server.url('/data.bin'), progress=False)
    assert os.listdir(cache) == []


@pytest.mark.parametrize('value', ['abc', '0', '-5', 'nan', ''])
def test_bad_timeout_variable_is_named(server, cache, monkeypatch, value):
    server.routes['/data.bin'] = serve(BODY)
    monkeypatch.setenv('DEZERO_KR_TIMEOUT', value)
    with pytest.raises(ValueError, match=f"get_file: the environment variable DEZERO_KR_TIMEOUT must be a "
                                         f"positive number of seconds, got '{value}'"):
        get_file(server.url('/data.bin'), progress=False)
    assert server.requests == []


def test_bad_timeout_argument():
    with pytest.raises(ValueError, match="get_file: timeout must be a positive number of seconds, got 0"):
        get_file('http://127.0.0.1:9/x.bin', timeout=0)


def test_download_removes_temp_files_of_dead_processes(server, cache):
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait()
    cache.mkdir()
    stale = cache / f'.data.bin.{proc.pid}.0123abcd.part'
    stale.write_bytes(b'half a download')
    server.routes['/data.bin'] = serve(BODY)
    get_file(server.url('/data.bin'), progress=False)
    assert os.listdir(cache) == ['data.bin']
