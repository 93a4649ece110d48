"""The hub's auth config file: valid files give principals with their grants; bad ones name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from vglobal.hub.auth.authenticator import Authenticator, Unauthenticated
from vglobal.hub.auth.config import dump_auth_config, load_auth_config, parse_auth_config
from vglobal.hub.auth.policy import Grant, Role
from vglobal.hub.auth.tokens import hash_token
from vglobal.model.errors import ManifestError

ALICE, OPS = "alice-token", "ops-token"


def config_text(*, users: str | None = None, bindings: str | None = None) -> str:
    users = (
        users
        or f"""
- {{name: alice, tokenSHA256: "{hash_token(ALICE)}", groups: [team-a]}}
- {{name: olga, tokenSHA256: "{hash_token(OPS)}", groups: [ops]}}"""
    )
    bindings = (
        bindings
        or """
- {subject: alice, role: submitter, queues: ["team-a*"]}
- {subject: group:ops, role: operator}
- {subject: group:team-a, role: viewer}"""
    )
    return f"apiVersion: vglobal.io/v1alpha1\nkind: AuthConfig\nusers:{users}\nroleBindings:{bindings}\n"


def test_a_user_gets_the_grants_of_its_name_and_its_groups() -> None:
    config = parse_auth_config(config_text())
    alice = config.principal(config.users[0])
    assert alice.name == "alice"
    assert alice.grants == (Grant(Role.submitter, queues=("team-a*",)), Grant(Role.viewer))
    olga = config.principal(config.users[1])
    assert olga.grants == (Grant(Role.operator),)


def test_the_file_survives_a_dump_and_a_load() -> None:
    config = parse_auth_config(config_text())
    assert parse_auth_config(dump_auth_config(config)) == config


@pytest.mark.parametrize(
    ("users", "bindings", "field", "says"),
    [
        ('\n- {name: a, tokenSHA256: "abc"}', "\n- {subject: a, role: admin}", "users[0].tokenSHA256", "64"),
        (None, "\n- {subject: bob, role: admin}", "roleBindings[0].subject", 'no user "bob"'),
        (None, "\n- {subject: alice, role: root}", "roleBindings[0].role", "'admin'"),
        (None, "\n- {subject: alice, role: agent}", "roleBindings[0].clusters", "required for role agent"),
        (
            None,
            "\n- {subject: alice, role: agent, clusters: [a], queues: [x]}",
            "roleBindings[0].queues",
            "clusters",
        ),
        (
            None,
            "\n- {subject: alice, role: viewer, clusters: [a]}",
            "roleBindings[0].clusters",
            "only role agent",
        ),
        (None, "\n- {subject: alice, role: operator, queues: [a]}", "roleBindings[0].queues", "every queue"),
        (None, "\n- {subject: alice, role: viewer, queues: []}", "roleBindings[0].queues", "grants nothing"),
        (
            None,
            "\n- {subject: alice, role: agent, clusters: [Bad_Name]}",
            "roleBindings[0].clusters[0]",
            "DNS-1123",
        ),
        (None, "\n- {subject: alice, role: viewer, queus: [a]}", "roleBindings[0].queus", "unknown field"),
        (
            f'\n- {{name: a, tokenSHA256: "{hash_token("x")}"}}\n- {{name: a, tokenSHA256: "{hash_token("y")}"}}',
            "\n- {subject: a, role: admin}",
            "users[1].name",
            "listed twice",
        ),
        (
            f'\n- {{name: a, tokenSHA256: "{hash_token("x")}"}}\n- {{name: b, tokenSHA256: "{hash_token("x")}"}}',
            "\n- {subject: a, role: admin}",
            "users[1].tokenSHA256",
            "another user",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_the_field(
    users: str | None, bindings: str, field: str, says: str
) -> None:
    with pytest.raises(ManifestError) as err:
        parse_auth_config(config_text(users=users, bindings=bindings))
    assert f"{field}: " in str(err.value) and says in str(err.value)


def test_wrong_kind_and_several_documents_are_refused() -> None:
    with pytest.raises(ManifestError, match="kind"):
        parse_auth_config(config_text().replace("kind: AuthConfig", "kind: Config"))
    with pytest.raises(ManifestError, match="expected one AuthConfig document, found 2"):
        parse_auth_config(config_text() + "---\n" + config_text())


def test_load_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "auth.yaml"
    path.write_text(config_text(bindings="\n- {subject: zed, role: admin}"))
    with pytest.raises(ManifestError) as err:
        load_auth_config(path)
    assert str(err.value).startswith(f"{path}: roleBindings[0].subject")


def test_reload_keeps_the_old_config_when_the_new_file_is_bad(tmp_path: Path) -> None:
    path = tmp_path / "auth.yaml"
    path.write_text(config_text())
    auth = Authenticator(path)
    assert auth.authenticate(token=ALICE, cluster_uris=[], agent_call=False).name == "alice"
    path.write_text(config_text(bindings="\n- {subject: alice, role: superuser}"))
    with pytest.raises(ManifestError, match=r"roleBindings\[0\].role"):
        auth.reload()
    assert auth.authenticate(token=ALICE, cluster_uris=[], agent_call=False).name == "alice"
    # A good file takes effect: alice is gone, so her token is no longer known.
    path.write_text(config_text(users=f'\n- {{name: olga, tokenSHA256: "{hash_token(OPS)}"}}',
                                bindings="\n- {subject: olga, role: admin}"))  # fmt: skip
    auth.reload()
    with pytest.raises(Unauthenticated, match="not known"):
        auth.authenticate(token=ALICE, cluster_uris=[], agent_call=False)
    assert auth.authenticate(token=OPS, cluster_uris=[], agent_call=False).grants == (Grant(Role.admin),)
