"""How a client reaches the hub: its address, TLS files and bearer token, turned into a gRPC channel.

Shared by the SDK, the CLI and the agent. A token is sent only over TLS, or in plaintext to a
loopback address (a hub started without TLS listens nowhere else).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import grpc

DEFAULT_HUB = "127.0.0.1:50051"
ENV_HUB = "VGLOBAL_HUB"
ENV_TOKEN = "VGLOBAL_TOKEN"
ENV_TOKEN_FILE = "VGLOBAL_TOKEN_FILE"
ENV_CA_FILE = "VGLOBAL_CA_FILE"
ENV_CERT = "VGLOBAL_CERT"
ENV_KEY = "VGLOBAL_KEY"

# What the SDK's clients accept from the hub: a page of jobs with their manifests can be large.
CLIENT_OPTIONS = [("grpc.max_receive_message_length", 64 * 1024 * 1024)]


class DialError(ValueError):
    """The dial settings cannot work (a missing file, a token that would go out in plaintext)."""


def split_host(target: str) -> str:
    """The host of HOST:PORT, [V6]:PORT or a dns:/// target."""
    target = target.removeprefix("dns:///").removeprefix("ipv4:").removeprefix("ipv6:")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        host = target
    return host.strip("[]")


def is_loopback(target: str) -> bool:
    host = split_host(target)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _read(path: Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DialError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value) if value else None


def read_token_file(path: Path) -> str:
    data = _read(path, "--token-file")
    token = (data or b"").decode("utf-8", errors="replace").strip()
    if not token:
        raise DialError(f"--token-file: {path} is empty")
    return token


class _Details(NamedTuple):
    method: str
    timeout: float | None
    metadata: tuple[tuple[str, str | bytes], ...] | None
    credentials: grpc.CallCredentials | None
    wait_for_ready: bool | None
    compression: grpc.Compression | None


class _CallDetails(_Details, grpc.ClientCallDetails):
    """The call details with one more metadata entry (grpc's own type is private)."""


class _BearerInterceptor(
    grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor, grpc.StreamStreamClientInterceptor
):
    """Adds ``authorization: Bearer`` on a plaintext loopback channel (call credentials need TLS)."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _details(self, d: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = (*(d.metadata or ()), self._header)
        return _CallDetails(d.method, d.timeout, metadata, d.credentials, d.wait_for_ready, d.compression)

    def intercept_unary_unary(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Callable[..., Any], details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_stream(self, continuation: Callable[..., Any], details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


class _AioBearerInterceptor(grpc.aio.UnaryUnaryClientInterceptor):
    """``_BearerInterceptor`` for asyncio channels (the async client's calls are all unary)."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        metadata = grpc.aio.Metadata(*(details.metadata or ()), self._header)
        new = grpc.aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )
        return await continuation(new, request)


@dataclass(frozen=True)
class Dial:
    """Where the hub is and how to prove who we are. ``from_env`` fills what is not given."""

    target: str = DEFAULT_HUB
    ca_file: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    token: str | None = None
    server_name: str | None = None

    @classmethod
    def from_env(
        cls,
        target: str | None = None,
        *,
        ca_file: Path | None = None,
        cert: Path | None = None,
        key: Path | None = None,
        token: str | None = None,
    ) -> Dial:
        if token is None and os.environ.get(ENV_TOKEN_FILE):
            token = read_token_file(Path(os.environ[ENV_TOKEN_FILE]))
        return cls(
            target=target or os.environ.get(ENV_HUB) or DEFAULT_HUB,
            ca_file=ca_file or _env_path(ENV_CA_FILE),
            cert=cert or _env_path(ENV_CERT),
            key=key or _env_path(ENV_KEY),
            token=token or os.environ.get(ENV_TOKEN) or None,
        )

    @classmethod
    def for_client(
        cls,
        hub: str | None,
        *,
        dial: Dial | None = None,
        ca_file: str | Path | None = None,
        cert: str | Path | None = None,
        key: str | Path | None = None,
        token: str | None = None,
    ) -> Dial:
        """The SDK clients' arguments: ``dial`` as given, else ``from_env`` with the rest."""
        if dial is not None:
            return dial

        def path(p: str | Path | None) -> Path | None:
            return Path(p) if p is not None else None

        return cls.from_env(hub, ca_file=path(ca_file), cert=path(cert), key=path(key), token=token)

    @property
    def tls(self) -> bool:
        return self.ca_file is not None or self.cert is not None

    def check(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise DialError("--cert and --key go together: a client certificate needs its key")
        if self.token and not self.tls and not is_loopback(self.target):
            raise DialError(
                f"refusing to send the token in plaintext to {self.target}: give --ca-file "
                "(VGLOBAL_CA_FILE) to reach the hub over TLS"
            )

    def channel(self, options: Sequence[tuple[str, Any]] = ()) -> grpc.Channel:
        self.check()
        opts = list(options)
        if not self.tls:
            channel = grpc.insecure_channel(self.target, options=opts)
            return grpc.intercept_channel(channel, _BearerInterceptor(self.token)) if self.token else channel
        return grpc.secure_channel(self.target, self._credentials(opts), options=opts)

    def _credentials(self, opts: list[tuple[str, Any]]) -> grpc.ChannelCredentials:
        """TLS (and the token as call credentials); a server name override goes into ``opts``."""
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read(self.ca_file, "--ca-file"),
            private_key=_read(self.key, "--key"),
            certificate_chain=_read(self.cert, "--cert"),
        )
        if self.token:
            credentials = grpc.composite_channel_credentials(
                credentials, grpc.access_token_call_credentials(self.token)
            )
        if self.server_name:
            opts.append(("grpc.ssl_target_name_override", self.server_name))
        return credentials

    def aio_channel(self, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
        """The same way in as ``channel``, for asyncio (grpc.aio)."""
        self.check()
        opts = list(options)
        if not self.tls:
            interceptors = [_AioBearerInterceptor(self.token)] if self.token else None
            return grpc.aio.insecure_channel(self.target, options=opts, interceptors=interceptors)
        return grpc.aio.secure_channel(self.target, self._credentials(opts), options=opts)
