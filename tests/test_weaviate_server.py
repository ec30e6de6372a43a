"""The embedded-server manager and binary lookup, against the real weaviate-server binary."""
import json
import os
import time

import pytest

from indexer.errors import WeaviateUnavailable
from indexer.store.weaviate_server import (EmbeddedWeaviate, ServerInfo, _pid_alive, find_binary,
                                           free_ports, is_ready)

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
