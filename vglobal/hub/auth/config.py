"""The hub's auth config file (kind AuthConfig): users with hashed tokens, and role bindings.

    apiVersion: vglobal.io/v1alpha1
    kind: AuthConfig
    users:
    - {name: alice, tokenSHA256: "<hex>", groups: [team-a]}
    roleBindings:
    - {subject: alice, role: submitter, queues: ["team-a*"]}
    - {subject: group:ops, role: operator}
    - {subject: east-agent, role: agent, clusters: [gpu-east]}
    - {subject: bob, role: viewer, logs: false}    # reads jobs, not their pods' output

A bad file is refused with every problem named by its field path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import ConfigDict, Field, StrictBool, StrictStr

from vglobal.hub.auth.policy import Action, Grant, Principal, Role
from vglobal.model.errors import ManifestError, Problems
from vglobal.model.k8s import Model, check_name, validate_model
from vglobal.model.manifests import load_documents

API_VERSION = "vglobal.io/v1alpha1"
KIND = "AuthConfig"
GROUP_PREFIX = "group:"
NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._@-]{0,251}[A-Za-z0-9])?$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
MAX_FILE_BYTES = 4 * 1024 * 1024


class Strict(Model):
    """Unknown keys are refused: a misspelt ``roleBinding`` must not silently grant nothing."""

    model_config = ConfigDict(extra="forbid")


class User(Strict):
    name: StrictStr
    token_sha256: StrictStr = Field(alias="tokenSHA256")
    groups: tuple[StrictStr, ...] = ()


class RoleBinding(Strict):
    subject: StrictStr
    role: Role
    queues: tuple[StrictStr, ...] | None = None
    clusters: tuple[StrictStr, ...] | None = None
    logs: StrictBool = True  # false: the role's reading of jobs does not include their logs

    def grant(self) -> Grant:
        without = frozenset() if self.logs else frozenset({Action.read_logs})
        return Grant(self.role, queues=self.queues, clusters=self.clusters or (), without=without)


class AuthConfig(Strict):
    api_version: Literal["vglobal.io/v1alpha1"]
    kind: Literal["AuthConfig"]
    users: tuple[User, ...] = ()
    role_bindings: tuple[RoleBinding, ...] = ()

    def principal(self, user: User) -> Principal:
        """The user with every grant bound to its name or to one of its groups."""
        subjects = {user.name, *(GROUP_PREFIX + g for g in user.groups)}
        grants = tuple(b.grant() for b in self.role_bindings if b.subject in subjects)
        return Principal(user.name, grants)


def _check_users(config: AuthConfig, p: Problems) -> None:
    names: set[str] = set()
    digests: set[str] = set()
    for i, user in enumerate(config.users):
        where = f"users[{i}]"
        if not NAME.match(user.name):
            p.add(f"{where}.name", f'invalid user name "{user.name}": letters, digits, ".", "_", "@", "-"')
        elif user.name in names:
            p.add(f"{where}.name", f'user "{user.name}" is listed twice')
        names.add(user.name)
        if not HEX64.match(user.token_sha256):
            p.add(f"{where}.tokenSHA256", "must be the 64 lowercase hex digits of the token's SHA-256")
        elif user.token_sha256 in digests:
            p.add(f"{where}.tokenSHA256", "the same token is given to another user")
        digests.add(user.token_sha256)
        for j, group in enumerate(user.groups):
            if not NAME.match(group):
                p.add(f"{where}.groups[{j}]", f'invalid group name "{group}"')


def _check_binding(i: int, b: RoleBinding, users: set[str], p: Problems) -> None:
    where = f"roleBindings[{i}]"
    if b.subject.startswith(GROUP_PREFIX):
        if not NAME.match(b.subject[len(GROUP_PREFIX) :]):
            p.add(f"{where}.subject", f'invalid group name in "{b.subject}"')
    elif b.subject not in users:
        p.add(f"{where}.subject", f'no user "{b.subject}" in users (a group is written "group:NAME")')
    if b.role is Role.agent:
        if b.queues is not None:
            p.add(f"{where}.queues", "an agent binding names clusters, not queues")
        if not b.clusters:
            p.add(f"{where}.clusters", "required for role agent: the clusters it may speak for")
        for j, cluster in enumerate(b.clusters or ()):
            check_name(p, f"{where}.clusters[{j}]", cluster, label=False)
        return
    if b.clusters is not None:
        p.add(f"{where}.clusters", f"only role agent is bound to clusters, not {b.role.value}")
    if b.queues is not None and b.role in (Role.admin, Role.operator):
        p.add(
            f"{where}.queues",
            f"role {b.role.value} covers every queue; only submitter, tenant and viewer take queues",
        )
    if b.role is Role.tenant and b.queues is None:
        p.add(f"{where}.queues", "required for role tenant: the queues under which it manages sub-queues")
    if b.queues is not None and not b.queues:
        p.add(f"{where}.queues", "an empty list grants nothing; leave queues out for every queue")
    for j, glob in enumerate(b.queues or ()):
        if not glob.strip():
            p.add(f"{where}.queues[{j}]", "an empty queue pattern")


def parse_auth_config(text: str) -> AuthConfig:
    """The config in ``text``; raises ManifestError naming each bad field."""
    docs = load_documents(text, max_bytes=MAX_FILE_BYTES)
    if len(docs) != 1:
        raise ManifestError.one("", f"expected one {KIND} document, found {len(docs)}")
    config = validate_model(AuthConfig, docs[0])
    p = Problems()
    _check_users(config, p)
    users = {u.name for u in config.users}
    for i, binding in enumerate(config.role_bindings):
        _check_binding(i, binding, users, p)
    p.raise_if_any()
    return config


def load_auth_config(path: Path) -> AuthConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError.one("", f"cannot read {path}: {exc}") from None
    try:
        return parse_auth_config(text)
    except ManifestError as exc:
        exc.document = str(path)
        raise


def dump_auth_config(config: AuthConfig) -> str:
    data = config.model_dump(by_alias=True, exclude_none=True, mode="json")
    return yaml.safe_dump(data, sort_keys=False)
