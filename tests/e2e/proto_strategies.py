"""Hypothesis strategies for any protobuf message of the API, read from its descriptor, and for the
manifests its string fields carry: near-valid Volcano documents with values pushed to extremes."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import descriptor as d
from google.protobuf import message_factory
from google.protobuf.message import Message
from hypothesis import strategies as st

INT32 = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([-1, 0, 1, 2**31 - 1, -(2**31)]))
INT64 = st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([-1, 0, 1, 2**63 - 1]))
UINT = st.integers(0, 2**32 - 1)
NAMES = st.sampled_from(["", "default", "j", "team-a", "gpu-east", "x" * 300, "Bad_Name", "a/b", "../x", "é"])
TEXT = st.one_of(NAMES, st.text(max_size=40))
QUANTITIES = st.sampled_from(["1", "500m", "1e30", "-1", "1Ei", "0.0000001", "abc", "", "9" * 40])
INTS = st.one_of(INT64, st.sampled_from([2**31, 2**63, -(2**31) - 1]))

json_values = st.recursive(
    st.none() | st.booleans() | INTS | st.floats(allow_nan=True) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


@st.composite
def job_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A Volcano Job with some fields replaced by extreme or ill-typed values."""
    task = {
        "name": draw(NAMES),
        "replicas": draw(st.one_of(INTS, st.just(1))),
        "template": {
            "spec": {
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": draw(QUANTITIES)}}}
                ]
            }
        },
    }
    doc: dict[str, Any] = {
        "apiVersion": draw(st.sampled_from(["batch.volcano.sh/v1alpha1", "v1", ""])),
        "kind": draw(st.sampled_from(["Job", "Queue", "PriorityClass", "List", "Pod"])),
        "metadata": {"name": draw(NAMES), "namespace": draw(NAMES)},
        "spec": {
            "queue": draw(NAMES),
            "minAvailable": draw(st.one_of(INTS, st.just(1))),
            "tasks": [task] * draw(st.integers(0, 3)),
            "weight": draw(INTS),
            "capability": {"cpu": draw(QUANTITIES)},
        },
        "value": draw(INTS),
    }
    for _ in range(draw(st.integers(0, 3))):  # replace a few values with anything at all
        key = draw(st.sampled_from(["metadata", "spec", "kind", "value", "apiVersion"]))
        doc[key] = draw(json_values)
    return doc


@st.composite
def manifests(draw: st.DrawFn) -> str:
    doc = draw(job_documents())
    form = draw(st.sampled_from(["json", "yaml-ish", "raw"]))
    if form == "json":
        return json.dumps(doc, allow_nan=True)
    if form == "raw":
        return draw(st.text(max_size=200))
    return "\n".join(f"{k}: {json.dumps(v, allow_nan=True)}" for k, v in doc.items())


def _scalar(field: d.FieldDescriptor) -> st.SearchStrategy[Any]:
    t = field.type
    if t == d.FieldDescriptor.TYPE_STRING:
        return manifests() if field.name == "manifest" else TEXT
    if t == d.FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=40)
    if t == d.FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t in (d.FieldDescriptor.TYPE_DOUBLE, d.FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=True, width=32 if t == d.FieldDescriptor.TYPE_FLOAT else 64)
    if t == d.FieldDescriptor.TYPE_ENUM:
        return st.sampled_from([v.number for v in field.enum_type.values])
    if t in (d.FieldDescriptor.TYPE_INT32, d.FieldDescriptor.TYPE_SINT32, d.FieldDescriptor.TYPE_SFIXED32):
        return INT32
    if t in (d.FieldDescriptor.TYPE_UINT32, d.FieldDescriptor.TYPE_FIXED32):
        return UINT
    if t in (d.FieldDescriptor.TYPE_UINT64, d.FieldDescriptor.TYPE_FIXED64):
        return st.integers(0, 2**64 - 1)
    return INT64


@st.composite
def messages(draw: st.DrawFn, descriptor: d.Descriptor, depth: int = 0) -> Message:
    """A message of ``descriptor``'s type with a random subset of its fields set to random values."""
    msg = message_factory.GetMessageClass(descriptor)()
    for field in descriptor.fields:
        if not draw(st.booleans()):
            continue
        target = getattr(msg, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key_f, value_f = (
                field.message_type.fields_by_name["key"],
                field.message_type.fields_by_name["value"],
            )
            for _ in range(draw(st.integers(0, 3))):
                if value_f.message_type is None:
                    target[draw(_scalar(key_f))] = draw(_scalar(value_f))
        elif field.message_type is not None:
            if depth < 3 and field.is_repeated:
                for _ in range(draw(st.integers(0, 3))):
                    target.add().CopyFrom(draw(messages(field.message_type, depth + 1)))
            elif depth < 3:
                target.CopyFrom(draw(messages(field.message_type, depth + 1)))
        elif field.is_repeated:
            target.extend(draw(st.lists(_scalar(field), max_size=3)))
        else:
            setattr(msg, field.name, draw(_scalar(field)))
    return msg
