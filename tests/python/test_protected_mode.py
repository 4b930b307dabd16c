"""Protected mode: with no password for the default user, only loopback
clients are served, whatever `bind` says."""

import socket
import subprocess

import pytest

from conftest import running_server

PROTECTED_PREFIX = b"-DENIED Redis is running in protected mode because protected mode is enabled"


def outside_address():
    """A non-loopback IPv4 address of this machine, or None."""
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for word in out.split():
        if "." in word and not word.startswith("127."):
            return word
    return None


ADDR = outside_address()
needs_address = pytest.mark.skipif(ADDR is None, reason="this machine has no non-loopback IPv4 address")


def first_reply(port, host):
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(b"PING\r\n")
        got = b""
        while not got.endswith(b"\r\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        return got


@needs_address
def test_non_loopback_client_is_denied_without_a_password():
    with running_server("--bind", f"127.0.0.1 {ADDR}") as s:
        got = first_reply(s.port, ADDR)
        assert got.startswith(PROTECTED_PREFIX), got
        assert got.endswith(b"accepting connections from the outside.\r\n"), got
        # Loopback clients are served, and may turn protected mode off.
        r = s.client()
        assert r.ping()
        assert int(r.info("stats")["rejected_connections"]) == 1
        assert r.config_get("protected-mode") == {"protected-mode": "yes"}
        assert r.config_set("protected-mode", "no")
        assert first_reply(s.port, ADDR) == b"+PONG\r\n"
        r.close()


@needs_address
def test_a_password_or_protected_mode_off_lets_others_in():
    with running_server("--bind", f"127.0.0.1 {ADDR}", "--requirepass", "pw") as s:
        assert first_reply(s.port, ADDR).startswith(b"-NOAUTH")
    with running_server("--bind", f"127.0.0.1 {ADDR}", "--protected-mode", "no") as s:
        assert first_reply(s.port, ADDR) == b"+PONG\r\n"
