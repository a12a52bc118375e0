"""Shared fixtures: no test reaches the internet (loopback servers only)."""
import socket

import pytest


@pytest.fixture(autouse=True)
def no_internet(monkeypatch):
    """Fail any connection that leaves this machine (tests start their own 127.0.0.1 servers)."""
    real_connect = socket.socket.connect

    def loopback_only(self, address):
        if isinstance(address, tuple) and address[0] not in ('127.0.0.1', '::1', 'localhost'):
            raise OSError(f'test tried to reach {address}')
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, 'connect', loopback_only)
