"""The embedded default: a real ``weaviate-server`` process that coderag starts and manages.

With no ``WEAVIATE_URL`` set, the CLI needs a Weaviate of its own. It runs the
``weaviate-server`` binary (``WEAVIATE_BINARY``, else PATH, else ``~/go/bin``) on free
loopback ports with data under ``CODERAG_HOME/weaviate``. The process is left running
after the command so that the next command reuses it (its pid and ports are kept in
``CODERAG_HOME/weaviate/server.json``); ``coderag weaviate stop`` ends it. A file lock
stops two commands from starting two servers on one data folder.

The ports of the last start are also kept in ``CODERAG_HOME/weaviate/ports.json``, which
outlives ``stop`` and crashes: a restart takes the same ports again when they are still
free, so a long-running client (``coderag serve``) that still dials them recovers on its
own. Only a port that is taken by then is replaced by a new free one (logged).
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from common.errors import WeaviateUnavailable
from common.notices import notice
from common.settings import Settings

log = logging.getLogger(__name__)

# The version `.ci/run` installs with `go install .../weaviate-server@<this>`.
WEAVIATE_VERSION = "v1.39.0"
INSTALL_HINT = (
    f"go install github.com/weaviate/weaviate/cmd/weaviate-server@{WEAVIATE_VERSION}"
)
READY_TIMEOUT_S = 90.0
#: ``WEAVIATE_LOG_LEVEL``'s declared default: the server's log level when a caller passes none.
DEFAULT_LOG_LEVEL: str = Settings.model_fields["weaviate_log_level"].default


@dataclass
class ServerInfo:
    """Where a running server listens. Ports are TCP ports on 127.0.0.1."""

    pid: int
    http_port: int
    grpc_port: int
    data_path: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"


@dataclass(frozen=True)
class ServerPorts:
    """All loopback TCP ports one server uses. Two come as pairs: the memberlist data
    port is ``gossip + 1`` and the raft internal RPC port is ``raft + 1``."""

    http: int
    grpc: int
    gossip: int
    raft: int

    @property
    def data(self) -> int:
        """The memberlist data port (``CLUSTER_DATA_BIND_PORT``)."""
        return self.gossip + 1

    @property
    def raft_rpc(self) -> int:
        """The raft internal RPC port (``RAFT_INTERNAL_RPC_PORT``)."""
        return self.raft + 1

    @classmethod
    def fresh(cls) -> "ServerPorts":
        """A new set of free ports."""
        gossip, _data, raft, _rpc, http, grpc = free_ports(6, consecutive_pairs=2)
        return cls(http=http, grpc=grpc, gossip=gossip, raft=raft)

    @classmethod
    def from_json(cls, text: str) -> "ServerPorts | None":
        """Parse a record written by :meth:`to_json`; ``None`` if it is not a valid one."""
        try:
            raw = json.loads(text)
            ports = cls(**{f.name: raw[f.name] for f in fields(cls)})
        except (ValueError, TypeError, KeyError):
            return None
        every = [ports.http, ports.grpc, ports.gossip, ports.data, ports.raft, ports.raft_rpc]
        ok = all(type(p) is int and 0 < p < 65536 for p in every) and len(set(every)) == 6
        return ports if ok else None

    def to_json(self) -> str:
        """The record kept in ``ports.json``."""
        return json.dumps(asdict(self))


def find_binary(explicit: str | None = None) -> str:
    """Path of the weaviate-server binary.

    Looks at ``explicit`` (``WEAVIATE_BINARY``), then PATH, then ``$GOPATH/bin`` and
    ``~/go/bin``. Raises :class:`WeaviateUnavailable` with the install command if absent.
    """
    if explicit:  # an explicit choice is never silently replaced by another binary
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise WeaviateUnavailable(f"WEAVIATE_BINARY={explicit} is not an executable file")
    candidates: list[str] = []
    on_path = shutil.which("weaviate-server")
    if on_path:
        candidates.append(on_path)
    gopath = os.environ.get("GOPATH")
    if gopath:
        candidates.append(str(Path(gopath) / "bin" / "weaviate-server"))
    candidates.append(str(Path.home() / "go" / "bin" / "weaviate-server"))
    for cand in candidates:
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise WeaviateUnavailable(
        "weaviate-server not found (set WEAVIATE_BINARY, or install it: " + INSTALL_HINT + ")"
    )


def free_ports(count: int, consecutive_pairs: int = 0) -> list[int]:
    """``count`` distinct free loopback ports; the first ``consecutive_pairs`` come as p, p+1.

    Weaviate's memberlist wants its data port right after its gossip port.
    """
    ports: list[int] = []
    socks: list[socket.socket] = []
    try:
        while len(ports) < count:
            got, held = _bind_fresh(len(ports) < consecutive_pairs * 2)
            socks += held
            ports += got
    finally:
        for s in socks:
            s.close()
    return ports


_GROUPS = (("http", False), ("grpc", False), ("gossip", True), ("raft", True))


def _bind_reserved(port: int, *, udp: bool = False) -> list[socket.socket]:
    """Sockets bound to ``port`` on 127.0.0.1 (TCP, and UDP too if ``udp``) while it is
    free, else ``[]``. SO_REUSEADDR, as the server's own listeners use, so that a port
    whose last connections are in TIME_WAIT counts as free; a listener makes it taken."""
    socks: list[socket.socket] = []
    kinds = [socket.SOCK_STREAM] + ([socket.SOCK_DGRAM] if udp else [])
    try:
        for kind in kinds:
            s = socket.socket(socket.AF_INET, kind)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
    except OSError:
        for s in socks:
            s.close()
        return []
    return socks


def choose_ports(previous: "ServerPorts | dict[str, int] | None") -> ServerPorts:
    """The ports for a (re)start: each port of ``previous`` that is still free, and new
    free ports for the others (a gossip or raft pair is kept or replaced as a whole).

    ``previous`` may be partial (a dict of some of ``http``, ``grpc``, ``gossip``,
    ``raft``); a recorded port that has to change is logged as a warning.
    """
    wanted = asdict(previous) if isinstance(previous, ServerPorts) else dict(previous or {})
    held: list[socket.socket] = []
    chosen: dict[str, int] = {}
    taken: set[int] = set()
    try:
        for name, pair in _GROUPS:  # reserve each recorded port that is still free
            port = wanted.get(name)
            if type(port) is not int or not (0 < port and port + pair <= 65535):
                continue
            span = {port, port + 1} if pair else {port}
            if taken & span:  # a broken record naming one port twice
                continue
            socks = _bind_reserved(port, udp=name == "gossip")
            if socks and pair:
                more = _bind_reserved(port + 1)
                if not more:
                    for s in socks:
                        s.close()
                socks = socks + more if more else []
            if socks:
                held += socks
                chosen[name] = port
                taken |= span
        for name, pair in _GROUPS:  # new ports, while the kept ones are still held
            if name in chosen:
                continue
            while True:
                ports, socks = _bind_fresh(pair)
                held += socks  # also when rejected, so that it is not offered again
                if not taken.intersection(ports):
                    break
            taken.update(ports)
            chosen[name] = ports[0]
            if name in wanted:
                log.warning("embedded Weaviate: the %s port %s of its last start is not free, "
                            "using %d (clients still using the old port must reconnect)",
                            name, wanted[name], ports[0])
    finally:
        for s in held:
            s.close()
    return ServerPorts(**chosen)


def _bind_fresh(pair: bool) -> tuple[list[int], list[socket.socket]]:
    """One free port (or a free ``p, p+1`` pair) and the sockets holding it."""
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        if not pair:
            return [port], [s]
        s2 = socket.socket()
        try:
            s2.bind(("127.0.0.1", port + 1))
        except OSError:
            s.close()
            s2.close()
            continue
        return [port, port + 1], [s, s2]


def is_ready(url: str, timeout_s: float = 2.0) -> bool:
    """True when ``GET {url}/v1/.well-known/ready`` answers 200."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/v1/.well-known/ready", timeout=timeout_s) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def server_env(data_path: Path, http_port: int, grpc_port: int, gossip_port: int,
               raft_port: int, raft_rpc_port: int, node: str = "node1",
               join: str | None = None, bootstrap_expect: int = 1,
               log_level: str | None = None) -> dict[str, str]:
    """Environment for one weaviate-server process on loopback, anonymous, no vectorizer.
    ``log_level``: ``WEAVIATE_LOG_LEVEL`` of the caller's settings (``None``: the
    variable's declared default, :data:`DEFAULT_LOG_LEVEL`)."""
    env = dict(os.environ)
    env.update({
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "true",
        "PERSISTENCE_DATA_PATH": str(data_path),
        "DEFAULT_VECTORIZER_MODULE": "none",
        "ENABLE_MODULES": "",
        "DISABLE_TELEMETRY": "true",
        "GO_PROFILING_DISABLE": "true",
        "PROMETHEUS_MONITORING_ENABLED": "false",
        "CLUSTER_HOSTNAME": node,
        "CLUSTER_IN_LOCALHOST": "true",
        "CLUSTER_BIND_ADDR": "127.0.0.1",
        "CLUSTER_ADVERTISE_ADDR": "127.0.0.1",
        "CLUSTER_GOSSIP_BIND_PORT": str(gossip_port),
        "CLUSTER_DATA_BIND_PORT": str(gossip_port + 1),
        "GRPC_PORT": str(grpc_port),
        "RAFT_PORT": str(raft_port),
        "RAFT_INTERNAL_RPC_PORT": str(raft_rpc_port),
        "RAFT_BOOTSTRAP_EXPECT": str(bootstrap_expect),
        "RAFT_JOIN": join or f"{node}:{raft_rpc_port}",
        "LOG_LEVEL": log_level or DEFAULT_LOG_LEVEL,
        "QUERY_DEFAULTS_LIMIT": "25",
    })
    return env


def start_server(binary: str, data_path: Path, log_path: Path, *, detach: bool = True,
                 node: str = "node1", ports: ServerPorts | None = None, log_level: str | None = None,
                 ) -> tuple["subprocess.Popen | _Detached", ServerInfo]:
    """Start weaviate-server on loopback and wait until it is ready.

    ``ports``: the ports to use (see :func:`choose_ports`); new free ones if ``None``.
    ``log_level``: see :func:`server_env`.
    Returns the process and its :class:`ServerInfo`. Raises :class:`WeaviateUnavailable`
    (with the tail of the server log) if it exits or is not ready in ``READY_TIMEOUT_S``.
    """
    data_path.mkdir(parents=True, exist_ok=True)
    # Pairs: memberlist gossip/data ports, and raft/raft-RPC ports (with
    # CLUSTER_IN_LOCALHOST Weaviate dials a peer's RPC at its raft port + 1).
    ports = ports or ServerPorts.fresh()
    http_port, grpc_port = ports.http, ports.grpc
    env = server_env(data_path, http_port, grpc_port, ports.gossip, ports.raft, ports.raft_rpc,
                     node=node, log_level=log_level)
    argv = [binary, "--host", "127.0.0.1", "--port", str(http_port), "--scheme", "http"]
    proc = _spawn(argv, env, log_path, detach)
    info = ServerInfo(pid=proc.pid, http_port=http_port, grpc_port=grpc_port, data_path=str(data_path))
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            proc.wait()
            raise WeaviateUnavailable(
                f"weaviate-server exited with code {proc.returncode}: {_tail(log_path)}")
        if is_ready(info.url, timeout_s=1.0):
            return proc, info
        time.sleep(0.25)
    proc.kill()
    proc.wait()
    raise WeaviateUnavailable(f"weaviate-server was not ready after {READY_TIMEOUT_S:.0f}s: {_tail(log_path)}")


class _Detached:
    """Handle on a daemonised server: poll() reports exit, like ``Popen`` for our needs."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and not _pid_alive(self.pid):
            self.returncode = -1
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        return self.poll()

    def kill(self) -> None:
        if _pid_alive(self.pid):
            os.kill(self.pid, signal.SIGKILL)


def _spawn(argv: list[str], env: dict, log_path: Path, detach: bool):
    """Start the server. Detached: through ``sh -c 'cmd &'``, so that it is re-parented to
    init and outlives this process without being our zombie; else a plain child."""
    if not detach:
        with open(log_path, "ab") as logf:
            return subprocess.Popen(argv, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
    script = 'log="$1"; shift; "$@" >>"$log" 2>&1 </dev/null & echo $!'
    out = subprocess.run(["sh", "-c", script, "sh", str(log_path), *argv], env=env,
                         capture_output=True, text=True, check=True, start_new_session=True)
    return _Detached(int(out.stdout.strip()))


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:])[-600:] or "(empty log)"


class EmbeddedWeaviate:
    """Reuse-or-start manager for the server under ``home/weaviate``."""

    def __init__(self, home: Path, binary: str | None = None, log_level: str | None = None):
        """``home``, ``binary`` and ``log_level``: ``CODERAG_HOME``, ``WEAVIATE_BINARY`` and
        ``WEAVIATE_LOG_LEVEL`` of the caller's settings (``log_level`` matters only to
        :meth:`ensure` when it starts a server; ``None``: :data:`DEFAULT_LOG_LEVEL`)."""
        self.log_level = log_level
        self.root = Path(home) / "weaviate"
        self.state_path = self.root / "server.json"
        self.ports_path = self.root / "ports.json"
        self.log_path = self.root / "server.log"
        self.binary = binary

    def running(self) -> ServerInfo | None:
        """The live server recorded in ``server.json``, or ``None``."""
        try:
            info = ServerInfo(**json.loads(self.state_path.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        if _pid_alive(info.pid) and is_ready(info.url):
            return info
        return None

    def last_ports(self) -> ServerPorts | dict[str, int] | None:
        """The ports of the last start: ``ports.json`` (kept after ``stop``); else the
        HTTP and gRPC ports of a ``server.json`` written before ``ports.json`` existed;
        else ``None``."""
        try:
            ports = ServerPorts.from_json(self.ports_path.read_text())
            if ports is not None:
                return ports
        except OSError:
            pass
        try:
            state = json.loads(self.state_path.read_text())
            return {"http": state["http_port"], "grpc": state["grpc_port"]}
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def ensure(self) -> ServerInfo:
        """The running server, starting one first if needed (under a file lock).

        A start reuses the ports of the last one where they are still free (see
        :func:`choose_ports`), so clients that still dial them reconnect by themselves.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "start.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            info = self.running()
            if info:
                return info
            binary = find_binary(self.binary)
            notice("starting the embedded Weaviate (data in CODERAG_HOME; ~10 s)…")
            log.info("starting local Weaviate (%s) with data in %s", binary, self.root / "data")
            ports = choose_ports(self.last_ports())
            _proc, info = start_server(binary, self.root / "data", self.log_path, detach=True,
                                       ports=ports, log_level=self.log_level)
            _write_atomic(self.ports_path, ports.to_json())
            _write_atomic(self.state_path, json.dumps(asdict(info)))
            return info

    def stop(self, timeout_s: float = 20.0) -> bool:
        """Stop the recorded server (SIGTERM, then SIGKILL). True if one was running.

        Removes ``server.json``; ``ports.json`` stays, for the next start to reuse.
        """
        try:
            info = ServerInfo(**json.loads(self.state_path.read_text()))
        except (OSError, ValueError, TypeError):
            return False
        stopped = False
        if _pid_alive(info.pid):
            os.kill(info.pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while _pid_alive(info.pid) and time.monotonic() < deadline:
                _reap(info.pid)
                time.sleep(0.1)
            if _pid_alive(info.pid):
                os.kill(info.pid, signal.SIGKILL)
            stopped = True
        self.state_path.unlink(missing_ok=True)
        return stopped


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
