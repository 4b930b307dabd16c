"""The network layer as clients see it: buffer fields of CLIENT LIST / CLIENT
INFO, query buffers given back when idle (and used_memory with them),
maxclients refusals, and listeners moved by CONFIG SET port / bind."""

import socket
import time

import pytest
import redis

from conftest import free_port, running_server


def fields(line):
    return dict(kv.split("=", 1) for kv in line.strip().split(" "))


def raw_client_list(r, client_id):
    # redis-py parses CLIENT LIST into dicts; the raw line keeps every field.
    return r.execute_command("CLIENT LIST ID", client_id, **{"NEVER_DECODE": True}) \
        .decode().strip()


def until(check, timeout=10.0):
    deadline = time.time() + timeout
    while True:
        value = check()
        if value or time.time() > deadline:
            return value
        time.sleep(0.2)


def test_client_info_reports_the_callers_buffers(r):
    info = fields(r.execute_command("CLIENT", "INFO"))
    # The whole request is in the query buffer while it runs:
    # *2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n
    assert info["qbuf"] == "26"
    assert int(info["qbuf-free"]) > 0
    assert info["argv-mem"] == "10"
    assert int(info["fd"]) > 2
    assert info["obl"] == "0" and info["oll"] == "0" and info["omem"] == "0"
    assert int(info["tot-mem"]) > int(info["qbuf-free"])
    assert info["events"] == "r"


def test_each_client_has_its_own_descriptor(server):
    a, b = server.client(), server.client()
    fa = fields(a.execute_command("CLIENT", "INFO"))["fd"]
    fb = fields(b.execute_command("CLIENT", "INFO"))["fd"]
    assert fa != fb


def test_idle_client_gives_back_its_query_buffer(server):
    idle, watcher = server.client(), server.client()
    idle_id = idle.client_id()
    before = fields(raw_client_list(watcher, idle_id))
    assert int(before["qbuf-free"]) > 0
    # Redis's clients cron shrinks a query buffer idle for over 2 seconds.
    after = until(lambda: (lambda f: f if f["qbuf-free"] == "0" else None)(
        fields(raw_client_list(watcher, idle_id))))
    assert after, raw_client_list(watcher, idle_id)
    assert after["qbuf"] == "0"
    assert int(after["tot-mem"]) < int(before["tot-mem"])
    # The buffer comes back when the client speaks again.
    assert idle.ping()


def test_used_memory_falls_after_a_big_set_and_del():
    with running_server() as server:
        writer, watcher = server.client(), server.client()
        watcher.ping()
        writer.ping()
        time.sleep(0.5)
        baseline = watcher.info("memory")["used_memory"]
        writer.set("big", "x" * (2 * 1024 * 1024))
        writer.delete("big")
        # The writer stays connected and idle; its 2 MB query buffer must go.
        settled = until(lambda: watcher.info("memory")["used_memory"] < baseline + 512 * 1024)
        assert settled, (baseline, watcher.info("memory")["used_memory"])


def test_pending_replies_show_in_the_output_fields(server):
    r = server.client()
    r.set("big", "x" * (4 * 1024 * 1024))
    slow = socket.create_connection(("127.0.0.1", server.port))
    try:
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.sendall(b"CLIENT ID\r\n")
        slow_id = int(slow.recv(64).strip()[1:])
        slow.sendall(b"GET big\r\n" * 8)

        # Redis queues the replies a moment before it asks for writability,
        # so poll until the stable state: replies queued and a write pending.
        def pending():
            f = fields(raw_client_list(r, slow_id))
            queued = int(f["oll"]) > 0 and int(f["omem"]) > 0
            return f if queued and f["events"] == "rw" else None

        f = until(pending, 5)
        assert f, raw_client_list(r, slow_id)
        assert int(f["tot-mem"]) >= int(f["omem"])
    finally:
        slow.close()


def test_clients_past_maxclients_are_refused_and_counted():
    with running_server() as server:
        r = server.client()
        r.config_set("maxclients", "3")
        try:
            others = [server.client(), server.client()]
            for c in others:
                c.ping()
            before = r.info("stats")["rejected_connections"]
            for _ in range(3):
                s = socket.create_connection(("127.0.0.1", server.port))
                s.settimeout(5)
                assert s.recv(100) == b"-ERR max number of clients reached\r\n"
                s.close()
            assert r.info("stats")["rejected_connections"] == before + 3
        finally:
            r.config_set("maxclients", "10000")


def test_config_set_port_moves_the_listener():
    with running_server() as server:
        r = server.client()
        old_port = server.port
        new_port = free_port()
        assert r.config_set("port", new_port)
        try:
            assert r.config_get("port") == {"port": str(new_port)}
            assert redis.Redis(host="127.0.0.1", port=new_port).ping()
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", old_port), timeout=1).close()
            # The connection that asked stays.
            assert r.ping()
            with socket.socket() as held:
                held.bind(("127.0.0.1", 0))
                held.listen()
                with pytest.raises(redis.ResponseError) as e:
                    r.config_set("port", held.getsockname()[1])
                assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'port') - "
                                        "Unable to listen on this port. Check server logs.")
            assert r.config_get("port") == {"port": str(new_port)}
            assert redis.Redis(host="127.0.0.1", port=new_port).ping()
        finally:
            r.config_set("port", old_port)


def test_config_set_bind_rebinds():
    with running_server() as server:
        r = server.client()
        try:
            assert r.config_set("bind", "127.0.0.1 127.0.0.2")
            assert r.config_get("bind") == {"bind": "127.0.0.1 127.0.0.2"}
            assert redis.Redis(host="127.0.0.2", port=server.port).ping()
            with pytest.raises(redis.ResponseError) as e:
                r.config_set("bind", "192.0.2.1")
            assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'bind') - "
                                    "Failed to bind to specified addresses.")
            assert r.config_get("bind") == {"bind": "127.0.0.1 127.0.0.2"}
            assert redis.Redis(host="127.0.0.2", port=server.port).ping()
        finally:
            r.config_set("bind", "127.0.0.1")
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.2", server.port), timeout=1).close()
        assert r.ping()
