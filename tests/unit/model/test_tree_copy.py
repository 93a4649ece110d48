"""copy_tree: a parsed document's copy shares nothing mutable with it."""

from __future__ import annotations

from vglobal.model.tree_copy import copy_tree


def test_a_copy_equals_the_document_and_changing_one_leaves_the_other() -> None:
    doc = {"metadata": {"labels": {"a": "b"}}, "spec": {"tasks": [{"replicas": 2, "x": [1.5, None, True]}]}}
    copied = copy_tree(doc)
    assert copied == doc
    copied["metadata"]["labels"]["a"] = "c"
    copied["spec"]["tasks"][0]["x"].append(3)
    assert doc == {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"tasks": [{"replicas": 2, "x": [1.5, None, True]}]},
    }


def test_what_json_does_not_make_is_deep_copied_too() -> None:
    doc = {"binary": bytearray(b"ab"), "set": {1, 2}}  # YAML's !!binary and !!set
    copied = copy_tree(doc)
    assert copied == doc and copied["binary"] is not doc["binary"] and copied["set"] is not doc["set"]
