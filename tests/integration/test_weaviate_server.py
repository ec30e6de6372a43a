"""The embedded-server manager and binary lookup, against the real weaviate-server binary."""
import json
import logging
import os
import socket
import time

import pytest

from common.errors import WeaviateUnavailable
from indexer.models import SourceRecord
from indexer.store.weaviate_server import (EmbeddedWeaviate, ServerInfo, ServerPorts, _pid_alive,
                                           choose_ports, find_binary, free_ports, is_ready)

pytestmark = pytest.mark.weaviate


def _gone(pid: int) -> bool:
    """Not running: no such process, or a zombie nobody reaped yet."""
    if not _pid_alive(pid):
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_find_binary_with_bogus_explicit_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GOPATH", raising=False)
    bogus = tmp_path / "no-such-weaviate"
    with pytest.raises(WeaviateUnavailable) as exc:
        find_binary(str(bogus))
    assert str(exc.value) == f"WEAVIATE_BINARY={bogus} is not an executable file"
    assert WeaviateUnavailable.exit_code == 3


def test_find_binary_with_non_executable_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GOPATH", raising=False)
    f = tmp_path / "weaviate-server"
    f.write_text("#!/bin/sh\n")
    f.chmod(0o644)
    with pytest.raises(WeaviateUnavailable, match="is not an executable file"):
        find_binary(str(f))


def test_find_binary_not_installed_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GOPATH", raising=False)
    with pytest.raises(WeaviateUnavailable) as exc:
        find_binary(None)
    assert "weaviate-server not found" in str(exc.value)
    assert "go install github.com/weaviate/weaviate/cmd/weaviate-server@v1.39.0" in str(exc.value)


def test_find_binary_explicit(weaviate_binary):
    assert find_binary(weaviate_binary) == weaviate_binary


def test_free_ports_pairs_are_consecutive():
    ports = free_ports(6, consecutive_pairs=2)
    assert len(set(ports)) == 6
    assert ports[1] == ports[0] + 1 and ports[3] == ports[2] + 1


def test_is_ready_false_on_closed_port():
    (port,) = free_ports(1)
    assert is_ready(f"http://127.0.0.1:{port}", timeout_s=0.5) is False


def test_embedded_ensure_reuses_then_stop(tmp_path, weaviate_binary):
    home = tmp_path / "home"
    mgr = EmbeddedWeaviate(home, weaviate_binary)
    assert mgr.running() is None
    assert mgr.stop() is False
    info = mgr.ensure()
    try:
        assert is_ready(info.url)
        assert info.data_path == str(home / "weaviate" / "data")
        state = json.loads((home / "weaviate" / "server.json").read_text())
        assert ServerInfo(**state) == info
        # A second manager on the same home (a second CLI command) reuses the process.
        again = EmbeddedWeaviate(home, weaviate_binary).ensure()
        assert again == info
        assert mgr.running() == info
    finally:
        stopped = mgr.stop()
    assert stopped is True
    deadline = time.monotonic() + 10
    while not _gone(info.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(info.pid)
    assert not is_ready(info.url, timeout_s=0.5)
    assert not (home / "weaviate" / "server.json").exists()
    # The port record outlives stop, for the next start to reuse.
    recorded = ServerPorts.from_json((home / "weaviate" / "ports.json").read_text())
    assert (recorded.http, recorded.grpc) == (info.http_port, info.grpc_port)
    assert mgr.running() is None
    assert mgr.stop() is False


def test_embedded_ensure_replaces_stale_state_file(tmp_path, weaviate_binary):
    home = tmp_path / "home"
    root = home / "weaviate"
    root.mkdir(parents=True)
    # A dead pid and a closed port, as left behind by a crashed server.
    (port,) = free_ports(1)
    (root / "server.json").write_text(json.dumps(
        {"pid": 2 ** 22 + 1, "http_port": port, "grpc_port": port, "data_path": "x"}))
    mgr = EmbeddedWeaviate(home, weaviate_binary)
    assert mgr.running() is None
    info = mgr.ensure()
    try:
        assert info.pid != 2 ** 22 + 1 and is_ready(info.url)
    finally:
        mgr.stop()


def test_embedded_ensure_with_bogus_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GOPATH", raising=False)
    with pytest.raises(WeaviateUnavailable, match="is not an executable file"):
        EmbeddedWeaviate(tmp_path / "home", str(tmp_path / "nope")).ensure()


# --------------------------------------------------------------------------- port reuse

def _listener(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:``port``, the way another program would hold it
    (SO_REUSEADDR, as Go servers set: the port may still have TIME_WAIT connections)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pid)


def _spread(ports: ServerPorts) -> set[int]:
    return {ports.http, ports.grpc, ports.gossip, ports.data, ports.raft, ports.raft_rpc}


def test_choose_ports_keeps_free_ones_and_replaces_taken_ones(caplog):
    previous = ServerPorts.fresh()
    assert len(_spread(previous)) == 6
    assert choose_ports(previous) == previous
    assert choose_ports(None) != previous  # nothing recorded: all new (and all distinct)
    assert len(_spread(choose_ports(None))) == 6

    held = [_listener(previous.http), _listener(previous.data)]
    try:
        with caplog.at_level(logging.WARNING, logger="indexer.store.weaviate_server"):
            chosen = choose_ports(previous)
    finally:
        for s in held:
            s.close()
    assert (chosen.grpc, chosen.raft) == (previous.grpc, previous.raft)
    assert chosen.http != previous.http
    # The memberlist data port is taken, so the gossip/data pair moves as a whole.
    assert chosen.gossip != previous.gossip and chosen.data == chosen.gossip + 1
    assert len(_spread(chosen)) == 6
    assert previous.http not in _spread(chosen) and previous.data not in _spread(chosen)
    logged = caplog.text
    assert f"http port {previous.http} " in logged and f"using {chosen.http}" in logged
    assert f"gossip port {previous.gossip} " in logged
    assert "grpc port" not in logged and "raft port" not in logged


def test_choose_ports_partial_or_broken_records():
    (http,) = free_ports(1)
    # An old server.json gives only HTTP and gRPC; one port named twice is used once.
    chosen = choose_ports({"http": http, "grpc": http})
    assert chosen.http == http and chosen.grpc != http and len(_spread(chosen)) == 6
    chosen = choose_ports({"http": "x", "grpc": 0, "raft": 65535})
    assert len(_spread(chosen)) == 6 and chosen.raft != 65535
    assert ServerPorts.from_json("{}") is None
    assert ServerPorts.from_json("not json") is None
    assert ServerPorts.from_json('{"http": 1, "grpc": 1, "gossip": 3, "raft": 5}') is None
    assert ServerPorts.from_json('{"http": 1, "grpc": 2, "gossip": 3, "raft": 5}') == ServerPorts(1, 2, 3, 5)


def test_embedded_restart_after_stop_reuses_all_ports(tmp_path, weaviate_binary):
    home = tmp_path / "home"
    mgr = EmbeddedWeaviate(home, weaviate_binary)
    first = mgr.ensure()
    try:
        ports = mgr.last_ports()
        assert isinstance(ports, ServerPorts)
        assert (ports.http, ports.grpc) == (first.http_port, first.grpc_port)
    finally:
        assert mgr.stop() is True
    _wait_gone(first.pid)
    assert mgr.running() is None
    second = EmbeddedWeaviate(home, weaviate_binary).ensure()
    try:
        assert second.pid != first.pid
        assert (second.http_port, second.grpc_port) == (first.http_port, first.grpc_port)
        assert mgr.last_ports() == ports  # raft and memberlist ports too
        assert is_ready(first.url)
    finally:
        mgr.stop()
    _wait_gone(second.pid)


def test_embedded_restart_after_crash_reuses_ports(tmp_path, weaviate_binary):
    home = tmp_path / "home"
    mgr = EmbeddedWeaviate(home, weaviate_binary)
    first = mgr.ensure()
    os.kill(first.pid, 9)  # a crash: server.json stays behind with a dead pid
    _wait_gone(first.pid)
    assert (home / "weaviate" / "server.json").exists() and mgr.running() is None
    second = mgr.ensure()
    try:
        assert second.pid != first.pid
        assert (second.http_port, second.grpc_port) == (first.http_port, first.grpc_port)
    finally:
        mgr.stop()
    _wait_gone(second.pid)


def test_embedded_restart_moves_only_the_taken_port(tmp_path, weaviate_binary, caplog):
    home = tmp_path / "home"
    mgr = EmbeddedWeaviate(home, weaviate_binary)
    first = mgr.ensure()
    before = mgr.last_ports()
    mgr.stop()
    _wait_gone(first.pid)
    squatter = _listener(first.http_port)  # another program took the old HTTP port
    try:
        with caplog.at_level(logging.WARNING, logger="indexer.store.weaviate_server"):
            second = mgr.ensure()
        try:
            assert second.http_port != first.http_port
            assert second.grpc_port == first.grpc_port
            assert is_ready(second.url)
            after = mgr.last_ports()
            assert after == ServerPorts(http=second.http_port, grpc=before.grpc,
                                        gossip=before.gossip, raft=before.raft)
            assert f"http port {first.http_port} " in caplog.text
            state = ServerInfo(**json.loads((home / "weaviate" / "server.json").read_text()))
            assert state == second
        finally:
            mgr.stop()
        _wait_gone(second.pid)
    finally:
        squatter.close()


def _store_on_embedded(tmp_path, monkeypatch, weaviate_binary):
    """A ``ChunkStore.open`` on the embedded server of a fresh ``CODERAG_HOME`` (as a
    long-running ``coderag serve`` holds it), and the server's manager."""
    from common.settings import Settings
    from indexer import ChunkStore

    for name in ("WEAVIATE_URL", "WEAVIATE_GRPC_PORT", "WEAVIATE_GRPC_HOST", "CODERAG_REPLICATION_FACTOR"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("CODERAG_HOME", str(home))
    monkeypatch.setenv("WEAVIATE_BINARY", weaviate_binary)
    return EmbeddedWeaviate(home, weaviate_binary), ChunkStore.open(Settings.from_env())


def test_embedded_restart_open_client_recovers(tmp_path, monkeypatch, weaviate_binary):
    """A store opened before the stop (a running ``coderag serve``) works again after the
    restart, without reconnecting: the v4 client redials the same host and ports."""
    mgr, store = _store_on_embedded(tmp_path, monkeypatch, weaviate_binary)
    try:
        store.sources.save(SourceRecord(name="r", model="m"))
        assert store.schema.is_ready() and [s.name for s in store.sources.all()] == ["r"]
        first = mgr.running()
        assert mgr.stop() is True
        _wait_gone(first.pid)
        assert store.schema.is_ready() is False  # what /readyz sees while it is down
        second = mgr.ensure()  # the next CLI command restarts it
        assert second.pid != first.pid
        assert store.schema.is_ready() is True
        assert [s.name for s in store.sources.all()] == ["r"]  # gRPC, on the old channel
        assert store.query.count() == 0
    finally:
        store.close()
        mgr.stop()


def test_store_reconnects_when_the_embedded_server_moved_port(tmp_path, monkeypatch, weaviate_binary):
    """The freshness worker's recovery path: another program took the old HTTP port, the
    restart moved it, and a long-lived store redials the current ports on demand."""
    mgr, store = _store_on_embedded(tmp_path, monkeypatch, weaviate_binary)
    squatter = None
    try:
        store.sources.save(SourceRecord(name="r", model="m"))
        assert store.reconnect_if_down() is False  # healthy: nothing to do
        first = mgr.running()
        mgr.stop()
        _wait_gone(first.pid)
        squatter = _listener(first.http_port)
        second = mgr.ensure()
        assert second.http_port != first.http_port
        assert store.reconnect_if_down() is True
        assert store.schema.is_ready() and [s.name for s in store.sources.all()] == ["r"]
        assert store.reconnect_if_down() is False
    finally:
        store.close()
        if squatter is not None:
            squatter.close()
        mgr.stop()
