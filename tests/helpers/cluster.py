"""A real 3-node Weaviate cluster on one machine: three ``weaviate-server`` processes on
loopback forming one Raft cluster (used by tests/faults/test_cluster.py and ``make cluster-test``).

Ports per node (all distinct, on 127.0.0.1): HTTP, gRPC, memberlist gossip G and data G+1,
Raft R and Raft RPC R+1. With ``CLUSTER_IN_LOCALHOST=true`` Weaviate dials a peer's Raft RPC
at the peer's Raft port + 1 and its data port at gossip + 1, so both come in pairs.
``RAFT_JOIN=node1:R1,node2:R2,node3:R3`` (Raft ports, by node name), ``CLUSTER_JOIN`` is
node1's gossip address, ``RAFT_BOOTSTRAP_EXPECT=3``.
"""
from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from indexer.store.weaviate_server import free_ports, is_ready, server_env

READY_TIMEOUT_S = 120.0


@dataclass
class Node:
    name: str
    http: int
    grpc: int
    gossip: int
    raft: int
    data_path: Path
    log_path: Path
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class LocalCluster:
    """``size`` weaviate-server processes as one cluster. Use as a context manager."""

    def __init__(self, binary: str, root: Path, size: int = 3, extra_env: dict | None = None):
        self.binary = binary
        self.root = Path(root)
        self.extra_env = dict(extra_env or {})
        self.nodes: list[Node] = []
        for i in range(size):
            gossip, _data, raft, _rpc, http, grpc = free_ports(6, consecutive_pairs=2)
            name = f"node{i + 1}"
            self.nodes.append(Node(name, http, grpc, gossip, raft, self.root / name / "data",
                                   self.root / f"{name}.log"))
        self.raft_join = ",".join(f"{n.name}:{n.raft}" for n in self.nodes)

    def __enter__(self) -> "LocalCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def env(self, node: Node) -> dict[str, str]:
        env = server_env(node.data_path, node.http, node.grpc, node.gossip, node.raft, node.raft + 1,
                         node=node.name, join=self.raft_join, bootstrap_expect=len(self.nodes))
        env["CLUSTER_JOIN"] = f"127.0.0.1:{self.nodes[0].gossip}"
        env.update(self.extra_env)
        return env

    def start_node(self, node: Node) -> None:
        """Start (or restart, same ports and data) one node; does not wait."""
        node.data_path.mkdir(parents=True, exist_ok=True)
        with open(node.log_path, "ab") as logf:
            node.proc = subprocess.Popen(
                [self.binary, "--host", "127.0.0.1", "--port", str(node.http), "--scheme", "http"],
                env=self.env(node), stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def start(self) -> None:
        for n in self.nodes:
            self.start_node(n)
        self.wait_healthy(len(self.nodes))

    def wait_ready(self, node: Node, timeout_s: float = READY_TIMEOUT_S) -> float:
        """Seconds until ``node`` answers its readiness probe; raises if it exits or times out."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if node.proc is not None and node.proc.poll() is not None:
                raise RuntimeError(f"{node.name} exited with {node.proc.returncode}: {self.tail(node)}")
            if is_ready(node.url, timeout_s=1.0):
                return time.monotonic() - t0
            time.sleep(0.25)
        raise TimeoutError(f"{node.name} not ready after {timeout_s:.0f}s: {self.tail(node)}")

    def wait_healthy(self, count: int, via: Node | None = None, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Wait until every live node is ready and ``count`` nodes report HEALTHY."""
        for n in self.nodes:
            if n.alive:
                self.wait_ready(n, timeout_s)
        via = via or next(n for n in self.nodes if n.alive)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if sum(1 for s in self.node_status(via) if s["status"] == "HEALTHY") >= count:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"fewer than {count} healthy nodes: {self.node_status(via)}")

    def node_status(self, via: Node, verbose: bool = False) -> list[dict]:
        """``GET /v1/nodes`` through ``via``: one dict per node (name, status, shards...)."""
        url = f"{via.url}/v1/nodes" + ("?output=verbose" if verbose else "")
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())["nodes"]

    def kill(self, node: Node) -> None:
        """SIGKILL ``node`` (no clean shutdown) and reap it."""
        if node.alive:
            node.proc.send_signal(signal.SIGKILL)
            node.proc.wait(timeout=30)

    def stop(self) -> None:
        for n in self.nodes:
            if n.alive:
                n.proc.send_signal(signal.SIGTERM)
        for n in self.nodes:
            if n.proc is not None:
                try:
                    n.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    n.proc.kill()
                    n.proc.wait(timeout=30)

    @staticmethod
    def tail(node: Node, lines: int = 3) -> str:
        try:
            return " | ".join(node.log_path.read_text(errors="replace").strip().splitlines()[-lines:])[-800:]
        except OSError:
            return "(no log)"
