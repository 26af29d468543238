"""Real object-store endpoints on loopback for the tests: moto's S3 server, Azurite.

``moto_s3`` (session scope) starts ``moto_server`` from the ``moto[server]`` package on
127.0.0.1 with a free port and stops it at the end; tests take a fresh bucket each with
``new_bucket``. ``start_moto`` starts further servers (e.g. one that checks credentials).
``CuttableProxy`` sits between the kernel and a server and can cut the connection at a
chosen moment: a store outage that keeps the server's state, so the table can be read
again once the "network" is back. ``azurite`` starts Azurite's blob service through
``scripts/start_azurite.sh`` (installed with npm under ``~/.cache/sparkdelta``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
REGION = "us-east-1"


def shutdown_quietly(*sockets: socket.socket) -> None:
    """Shut both directions of each socket; one the peer already closed is fine."""
    for s in sockets:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, process: subprocess.Popen, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args} exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{process.args} did not answer on {url} within {timeout}s: {log.read_text()[-2000:]}")


@dataclass
class MotoServer:
    """One ``moto_server`` process; ``options``/``env`` reach it as delta-rs users would."""

    process: subprocess.Popen
    endpoint: str
    access_key: str = "testing"
    secret_key: str = "testing"
    buckets: list[str] = field(default_factory=list)

    @property
    def options(self) -> dict[str, str]:
        """Storage options in delta-rs's spelling (kernel and ``deltalake`` alike)."""
        return {
            "aws_access_key_id": self.access_key,
            "aws_secret_access_key": self.secret_key,
            "aws_endpoint_url": self.endpoint,
            "aws_region": REGION,
            "aws_allow_http": "true",
        }

    @property
    def env(self) -> dict[str, str]:
        """The same settings as the standard environment variables."""
        return {key.upper(): value for key, value in self.options.items()}

    def client(self, **overrides: str):  # boto3: an independent S3 client
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=overrides.get("access_key", self.access_key),
            aws_secret_access_key=overrides.get("secret_key", self.secret_key),
            region_name=REGION,
        )

    def new_bucket(self, hint: str = "t") -> str:
        name = f"{hint[:20].lower().replace('_', '-')}-{uuid.uuid4().hex[:10]}"
        self.client().create_bucket(Bucket=name)
        self.buckets.append(name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        paginator = self.client().get_paginator("list_objects_v2")
        return sorted(o["Key"] for page in paginator.paginate(Bucket=bucket, Prefix=prefix) for o in page.get("Contents", []))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_moto(log_dir: Path, env: dict[str, str] | None = None) -> MotoServer:
    """``moto_server`` on 127.0.0.1 and a free port, answering once this returns; its
    DynamoDB requests in turn, for DynamoDB's atomic conditional writes (``moto_server.py``)."""
    port = free_port()
    log = log_dir / f"moto-{port}.log"
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("moto_server.py")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{endpoint}/moto-api/", process, log)
    except BaseException:
        process.kill()
        raise
    return MotoServer(process, endpoint)


@pytest.fixture(scope="session")
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    server = start_moto(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()


class _Relay:
    """A TCP listener on 127.0.0.1 relaying each connection to ``upstream_port``; subclasses
    set their state, then call this ``__init__``, which starts accepting."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self._relay(client)

    def _relay(self, client: socket.socket) -> None:
        raise NotImplementedError

    def _upstream(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.upstream_port))

    def close(self) -> None:
        self.listener.close()


class CuttableProxy(_Relay):
    """A TCP relay to ``upstream`` that can be cut (every connection dropped, new ones
    closed at once) and restored: an outage of the store, whose state survives it."""

    def __init__(self, upstream_port: int) -> None:
        self.cut_event = threading.Event()
        self.connections: list[socket.socket] = []
        self.lock = threading.Lock()
        super().__init__(upstream_port)

    def _relay(self, client: socket.socket) -> None:
        if self.cut_event.is_set():
            client.close()
            return
        upstream = self._upstream()
        with self.lock:
            self.connections += [client, upstream]
        threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            shutdown_quietly(source, target)

    def cut(self) -> None:
        self.cut_event.set()
        with self.lock:
            shutdown_quietly(*self.connections)
            for s in self.connections:
                s.close()
            self.connections.clear()

    def restore(self) -> None:
        self.cut_event.clear()

    def close(self) -> None:
        self.cut()
        super().close()


@dataclass(frozen=True)
class HttpRequest:
    """One request a ``RecordingProxy`` forwarded: its method and target (path?query)."""

    method: str
    target: str
    headers: dict[str, str]


class RecordingProxy(_Relay):
    """An HTTP/1.1 relay to ``upstream`` that parses each request (headers, then a
    ``Content-Length`` or chunked body), records it, and can drop named request headers.

    It counts requests exactly, keep-alive or not, where a byte-level relay could not,
    and dropping ``If-None-Match`` turns moto into a store that ignores conditional
    writes. Responses are relayed untouched. ``answer`` may return raw response bytes
    for a request, sent instead of forwarding it (a server that refuses a feature).
    """

    def __init__(
        self,
        upstream_port: int,
        drop_headers: Iterable[str] = (),
        answer: Callable[[HttpRequest], bytes | None] | None = None,
    ) -> None:
        self.drop_headers = frozenset(h.lower() for h in drop_headers)
        self.answer = answer
        self.requests: list[HttpRequest] = []
        self.lock = threading.Lock()
        super().__init__(upstream_port)

    def take(self) -> list[HttpRequest]:
        """The requests recorded since the last ``take``."""
        with self.lock:
            taken, self.requests = self.requests, []
        return taken

    def _relay(self, client: socket.socket) -> None:
        upstream = self._upstream()
        threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
        threading.Thread(target=CuttableProxy._pump, args=(upstream, client), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        reader = client.makefile("rb")
        try:
            while head := reader.readline():
                method, target, _ = head.decode("latin-1").split(" ", 2)
                lines = []
                while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
                    lines.append(line)
                headers = {}
                for line in lines:
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                request = HttpRequest(method, target, headers)
                with self.lock:
                    self.requests.append(request)
                canned = self.answer(request) if self.answer else None
                if canned is not None:
                    self._body(reader, headers)  # read off the connection, not forwarded
                    client.sendall(canned)
                    continue
                kept = [
                    line for line in lines if line.split(b":", 1)[0].strip().lower().decode("latin-1") not in self.drop_headers
                ]
                # The head goes first: a client that sent "Expect: 100-continue" (S3A does) holds
                # its body back until upstream answers it, or for 3 s.
                upstream.sendall(head + b"".join(kept) + b"\r\n")
                upstream.sendall(self._body(reader, headers))
        except (OSError, ValueError):
            pass
        finally:
            shutdown_quietly(client, upstream)

    @staticmethod
    def _body(reader: Any, headers: dict[str, str]) -> bytes:
        """The raw body bytes (chunk framing kept) that follow the headers."""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            raw = b""
            while True:
                size_line = reader.readline()
                raw += size_line
                size = int(size_line.split(b";", 1)[0].strip(), 16)
                if size == 0:
                    while (trailer := reader.readline()) not in (b"\r\n", b"\n", b""):
                        raw += trailer
                    return raw + b"\r\n"
                raw += reader.read(size + 2)
        return reader.read(int(headers.get("content-length", "0") or 0))


# --------------------------------------------------------------------------- Azurite

AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's documented well-known development key (public, not a secret).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass
class Azurite:
    process: subprocess.Popen
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}"

    @property
    def options(self) -> dict[str, str]:
        return {
            "azure_storage_account_name": AZURITE_ACCOUNT,
            "azure_storage_account_key": AZURITE_KEY,
            "azure_storage_endpoint": self.endpoint,
            "azure_allow_http": "true",
        }

    def _request(self, method: str, path: str, query: dict[str, str]) -> int:
        """A Shared Key signed request to the blob API (only what container creation and
        listing need; the tests' independent client)."""
        date = formatdate(usegmt=True)
        headers = {"x-ms-date": date, "x-ms-version": "2021-08-06"}
        canonical_headers = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
        canonical_resource = f"/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{path}" + "".join(
            f"\n{k}:{v}" for k, v in sorted(query.items())
        )
        to_sign = f"{method}\n\n\n\n\n\n\n\n\n\n\n\n{canonical_headers}{canonical_resource}"  # no body: empty length
        signature = base64.b64encode(hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256).digest()).decode()
        url = f"{self.endpoint}/{path}?" + "&".join(f"{k}={v}" for k, v in query.items())
        request = urllib.request.Request(url, method=method)
        for key, value in {**headers, "Content-Length": "0", "Authorization": f"SharedKey {AZURITE_ACCOUNT}:{signature}"}.items():
            request.add_header(key, value)
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status

    def new_container(self, hint: str = "t") -> str:
        name = f"{hint[:20].lower()}-{uuid.uuid4().hex[:10]}"
        assert self._request("PUT", name, {"restype": "container"}) == 201
        return name

    def stop(self) -> None:
        """SIGTERM, then SIGKILL: Azurite waits for idle keep-alive connections, and its
        state is in memory anyway. The signal goes to the group the script started."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.process.poll() is not None:
                return
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                continue


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("Azurite needs node and npm, which are not installed")
    port = free_port()
    log = tmp_path_factory.mktemp("azurite") / "azurite.log"
    process = subprocess.Popen(
        ["bash", str(REPO / "scripts" / "start_azurite.sh"), str(port)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the script execs node; one group to stop
    )
    try:
        _wait_http(f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}?comp=list", process, log, timeout=300)
    except BaseException:
        process.kill()
        raise
    server = Azurite(process, port)
    yield server
    server.stop()
