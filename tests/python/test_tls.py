"""TLS listeners: tls-port beside the plain port, server certificates, client
certificates under tls-auth-clients yes/no/optional, and a CA that does not
match. Certificates are made at test time with the openssl command."""

import os
import shutil
import socket
import ssl
import subprocess
import time

import pytest
import redis

from conftest import AGAINST_REDIS, BINARY, free_port, running_server

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_ca(d, name):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
             "-out", f"{name}.crt", "-days", "2", "-subj", f"/CN=Test CA {name}", cwd=d)


def _make_cert(d, ca, name, ext):
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write(ext + "\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
             f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext",
             cwd=d)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("tls"))
    _make_ca(d, "ca")
    _make_ca(d, "other")
    _make_cert(d, "ca", "server", "subjectAltName=DNS:localhost,IP:127.0.0.1")
    _make_cert(d, "ca", "client", "extendedKeyUsage=clientAuth")
    _make_cert(d, "other", "stranger", "extendedKeyUsage=clientAuth")
    return lambda name: os.path.join(d, name)


def tls_args(certs, *extra):
    return ("--tls-cert-file", certs("server.crt"), "--tls-key-file", certs("server.key"),
            "--tls-ca-cert-file", certs("ca.crt"), *extra)


def wait_port(port):
    deadline = time.time() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.02)


def tls_client(port, certs, cert=None, ca="ca.crt"):
    kw = dict(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=certs(ca),
              decode_responses=True, socket_timeout=5)
    if cert:
        kw.update(ssl_certfile=certs(f"{cert}.crt"), ssl_keyfile=certs(f"{cert}.key"))
    return redis.Redis(**kw)


def refused(port, certs, **kw):
    """The server ends the handshake or the connection: a client without the
    certificate it asks for gets no reply."""
    c = tls_client(port, certs, **kw)
    try:
        with pytest.raises((redis.ConnectionError, ssl.SSLError, OSError)):
            c.ping()
    finally:
        c.close()


def test_plain_and_tls_at_once(certs):
    tls_port = free_port()
    with running_server("--tls-port", str(tls_port), *tls_args(certs)) as s:
        wait_port(tls_port)
        plain = s.client()
        t = tls_client(tls_port, certs, cert="client")
        assert plain.set("k", "v")
        assert t.get("k") == "v"
        # Large values cross TLS records both ways.
        big = "x" * 1_000_000
        assert t.set("big", big)
        assert plain.strlen("big") == len(big)
        assert t.get("big") == big
        pipe = t.pipeline(transaction=False)
        for i in range(1000):
            pipe.incr("n")
        assert pipe.execute()[-1] == 1000
        info = t.client_info()
        assert info["laddr"].endswith(f":{tls_port}")
        assert plain.config_get("tls-port") == {"tls-port": str(tls_port)}
        t.close()
        plain.close()


def test_auth_clients_yes_needs_a_certificate(certs):
    tls_port = free_port()
    with running_server("--tls-port", str(tls_port), *tls_args(certs)):
        wait_port(tls_port)
        refused(tls_port, certs)
        refused(tls_port, certs, cert="stranger")
        c = tls_client(tls_port, certs, cert="client")
        assert c.ping()
        c.close()


def test_auth_clients_optional_and_no(certs):
    for mode in ("optional", "no"):
        tls_port = free_port()
        with running_server("--tls-port", str(tls_port), *tls_args(certs, "--tls-auth-clients", mode)):
            wait_port(tls_port)
            c = tls_client(tls_port, certs)
            assert c.ping()
            c.close()
            c = tls_client(tls_port, certs, cert="client")
            assert c.ping()
            c.close()
            if mode == "optional":
                # A certificate offered must still be one the CA signed.
                refused(tls_port, certs, cert="stranger")


def test_client_refuses_a_server_of_another_ca(certs):
    tls_port = free_port()
    with running_server("--tls-port", str(tls_port), *tls_args(certs, "--tls-auth-clients", "no")):
        wait_port(tls_port)
        refused(tls_port, certs, ca="other.crt")


def test_plain_text_on_the_tls_port_is_not_served(certs):
    tls_port = free_port()
    with running_server("--tls-port", str(tls_port), *tls_args(certs, "--tls-auth-clients", "no")):
        wait_port(tls_port)
        with socket.create_connection(("127.0.0.1", tls_port), timeout=5) as sock:
            sock.sendall(b"PING\r\n")
            got = b""
            try:
                while True:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    got += chunk
            except OSError:
                pass
            assert b"PONG" not in got


def test_tls_only_when_port_is_0(certs):
    tls_port = free_port()
    plain_port = free_port()
    if AGAINST_REDIS:
        cmd = ["redis-server", "--save", "", "--appendonly", "no"]
    else:
        cmd = [BINARY, "--save", ""]
    cmd += ["--bind", "127.0.0.1", "--port", "0", "--tls-port", str(tls_port),
            *tls_args(certs, "--tls-auth-clients", "no")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(tls_port)
        c = tls_client(tls_port, certs)
        assert c.ping()
        assert c.config_get("port") == {"port": "0"}
        c.close()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", plain_port), timeout=0.5).close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_protocols_and_ciphers(certs):
    tls_port = free_port()
    args = tls_args(certs, "--tls-auth-clients", "no", "--tls-protocols", "TLSv1.2",
                    "--tls-ciphers", "ECDHE-RSA-AES256-GCM-SHA384")
    with running_server("--tls-port", str(tls_port), *args) as s:
        wait_port(tls_port)
        ctx = ssl.create_default_context(cafile=certs("ca.crt"))
        with socket.create_connection(("127.0.0.1", tls_port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.version() == "TLSv1.2"
                assert tls.cipher()[0] == "ECDHE-RSA-AES256-GCM-SHA384"
                tls.sendall(b"PING\r\n")
                assert tls.recv(100) == b"+PONG\r\n"
        # A client that speaks only TLS 1.3 is refused.
        ctx13 = ssl.create_default_context(cafile=certs("ca.crt"))
        ctx13.minimum_version = ssl.TLSVersion.TLSv1_3
        with socket.create_connection(("127.0.0.1", tls_port), timeout=5) as raw:
            with pytest.raises((ssl.SSLError, OSError)):
                ctx13.wrap_socket(raw, server_hostname="localhost")
        r = s.client()
        assert r.config_get("tls-protocols") == {"tls-protocols": "TLSv1.2"}
        r.close()


def test_redis_cli_over_tls(certs):
    if shutil.which("redis-cli") is None:
        pytest.skip("needs redis-cli")
    tls_port = free_port()
    with running_server("--tls-port", str(tls_port), *tls_args(certs)):
        wait_port(tls_port)
        base = ["redis-cli", "-p", str(tls_port), "--tls", "--cacert", certs("ca.crt")]
        ok = subprocess.run(base + ["--cert", certs("client.crt"), "--key", certs("client.key"),
                                    "PING"], capture_output=True, text=True, timeout=10)
        assert ok.stdout.strip() == "PONG", ok
        bad = subprocess.run(base + ["PING"], capture_output=True, text=True, timeout=10)
        assert "PONG" not in bad.stdout


def test_config_set_turns_tls_on_and_off(certs):
    with running_server() as s:
        r = s.client()
        tls_port = free_port()
        # Without a certificate the port cannot be served.
        with pytest.raises(redis.ResponseError) as e:
            r.config_set("tls-port", tls_port)
        assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'tls-port') - "
                                "Unable to update TLS configuration. Check server logs.")
        assert r.config_get("tls-port") == {"tls-port": "0"}
        assert r.config_set("tls-cert-file", certs("server.crt"))
        assert r.config_set("tls-key-file", certs("server.key"))
        assert r.config_set("tls-ca-cert-file", certs("ca.crt"))
        assert r.config_set("tls-port", tls_port)
        c = tls_client(tls_port, certs, cert="client")
        assert c.ping()
        c.close()
        with pytest.raises(redis.ResponseError) as e:
            r.config_set("tls-cert-file", certs("missing.crt"))
        assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
                                "Unable to update TLS configuration. Check server logs.")
        assert r.config_get("tls-cert-file") == {"tls-cert-file": certs("server.crt")}
        # Clients need no certificate from now on.
        assert r.config_set("tls-auth-clients", "no")
        c = tls_client(tls_port, certs)
        assert c.ping()
        c.close()
        assert r.config_set("tls-port", 0)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", tls_port), timeout=0.5).close()
        r.close()


def test_protected_mode_answers_over_tls(certs):
    from test_protected_mode import ADDR, PROTECTED_PREFIX
    if ADDR is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    tls_port = free_port()
    with running_server("--bind", f"127.0.0.1 {ADDR}", "--tls-port", str(tls_port),
                        *tls_args(certs, "--tls-auth-clients", "no")):
        wait_port(tls_port)
        ctx = ssl.create_default_context(cafile=certs("ca.crt"))
        ctx.check_hostname = False
        with socket.create_connection((ADDR, tls_port), timeout=5) as raw:
            with ctx.wrap_socket(raw) as tls:
                tls.sendall(b"PING\r\n")
                got = b""
                while not got.endswith(b"\r\n"):
                    chunk = tls.recv(4096)
                    if not chunk:
                        break
                    got += chunk
                assert got.startswith(PROTECTED_PREFIX), got


def test_config_set_bind_moves_the_tls_listeners_too(certs):
    tls_port = free_port()
    with running_server("--tls-port", str(tls_port), *tls_args(certs, "--tls-auth-clients", "no")) as s:
        wait_port(tls_port)
        r = s.client()
        assert r.config_set("bind", "127.0.0.1 127.0.0.2")
        ctx = ssl.create_default_context(cafile=certs("ca.crt"))
        ctx.check_hostname = False
        with socket.create_connection(("127.0.0.2", tls_port), timeout=5) as raw:
            with ctx.wrap_socket(raw) as tls:
                tls.sendall(b"PING\r\n")
                assert tls.recv(100) == b"+PONG\r\n"
        r.close()


def test_ca_cert_dir_verifies_client_certificates(certs, tmp_path):
    ca_dir = tmp_path / "cas"
    ca_dir.mkdir()
    shutil.copy(certs("ca.crt"), ca_dir / "ca.crt")
    # OpenSSL finds CAs in a directory by subject-hash names.
    subprocess.run(["openssl", "rehash", str(ca_dir)], check=True, capture_output=True)
    tls_port = free_port()
    with running_server("--tls-port", str(tls_port), "--tls-cert-file", certs("server.crt"),
                        "--tls-key-file", certs("server.key"), "--tls-ca-cert-dir", str(ca_dir)):
        wait_port(tls_port)
        c = tls_client(tls_port, certs, cert="client")
        assert c.ping()
        c.close()
        refused(tls_port, certs, cert="stranger")
        refused(tls_port, certs)
