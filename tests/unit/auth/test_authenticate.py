"""Who a call comes from: token, client certificate, or nobody."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.auth.test_auth_config import ALICE, config_text
from vglobal.hub.auth.authenticator import OPEN, Authenticator, Unauthenticated, bearer_token
from vglobal.hub.auth.identity import cluster_uri
from vglobal.hub.auth.tokens import TokenTable, hash_token, new_token


@pytest.fixture
def auth(tmp_path: Path) -> Authenticator:
    path = tmp_path / "auth.yaml"
    path.write_text(config_text())
    return Authenticator(path)


def test_no_credentials_is_unauthenticated(auth: Authenticator) -> None:
    with pytest.raises(Unauthenticated, match="Bearer"):
        auth.authenticate(token=None, cluster_uris=[], agent_call=False)
    with pytest.raises(Unauthenticated, match="client certificate"):
        auth.authenticate(token=None, cluster_uris=[], agent_call=True)


def test_an_unknown_token_is_unauthenticated(auth: Authenticator) -> None:
    with pytest.raises(Unauthenticated, match="not known"):
        auth.authenticate(token="guess", cluster_uris=[], agent_call=False)


def test_a_certificate_names_its_cluster(auth: Authenticator) -> None:
    p = auth.authenticate(token=None, cluster_uris=[cluster_uri("gpu-east")], agent_call=True)
    assert (p.kind, p.name, p.agent_clusters()) == ("cluster", "gpu-east", ("gpu-east",))
    # Other URIs and a cluster URI with a path are not identities.
    with pytest.raises(Unauthenticated):
        auth.authenticate(token=None, cluster_uris=["spiffe://other/x", cluster_uri("a/b")], agent_call=True)
    with pytest.raises(Unauthenticated, match="more than one cluster"):
        auth.authenticate(token=None, cluster_uris=[cluster_uri("a"), cluster_uri("b")], agent_call=True)


def test_agent_calls_prefer_the_certificate_user_calls_the_token(auth: Authenticator) -> None:
    uris = [cluster_uri("gpu-east")]
    assert auth.authenticate(token=ALICE, cluster_uris=uris, agent_call=True).kind == "cluster"
    assert auth.authenticate(token=ALICE, cluster_uris=uris, agent_call=False).name == "alice"


def test_an_open_hub_lets_everyone_in() -> None:
    assert Authenticator(None).authenticate(token=None, cluster_uris=[], agent_call=True) is OPEN


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer   ", "token abc"])
def test_a_malformed_authorization_header_is_refused(header: str) -> None:
    with pytest.raises(Unauthenticated, match="Bearer TOKEN"):
        bearer_token(header)


def test_bearer_scheme_is_case_insensitive() -> None:
    assert bearer_token("bearer abc") == bearer_token("Bearer abc") == "abc"
    assert bearer_token(None) is None


def test_tokens_are_random_and_found_by_their_digest_only() -> None:
    tokens = [new_token() for _ in range(3)]
    assert len(set(tokens)) == 3 and all(len(t) >= 43 for t in tokens)
    table = TokenTable((hash_token(t), i) for i, t in enumerate(tokens))
    assert [table.find(t) for t in tokens] == [0, 1, 2]
    assert table.find(hash_token(tokens[0])) is None  # the digest itself is not a token
    assert table.find(tokens[0][:-1]) is None
