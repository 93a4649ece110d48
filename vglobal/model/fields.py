"""Strict field validation: the fields of a manifest that its kind does not define.

As kubectl's ``--validate=strict`` (the API server's ``fieldValidation=Strict``), a field the
kind's schema does not have is an error naming its path, so a typo (``replica`` for
``replicas``) is not dropped without a word. The schemas are our pydantic models, plus for each
the fields Kubernetes or Volcano define that we keep in the manifest without reading
(``Model.passthrough``) and the sub-trees we read from the raw manifest (``Model.shapes``).
Free maps (labels, annotations, a pod's ``nodeSelector``) and values typed ``Any`` are not
looked into.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from vglobal.model.errors import key_path
from vglobal.model.k8s import Model

__all__ = ["FieldValidation", "parse_validation", "unknown_fields"]


class FieldValidation(StrEnum):
    """What to do with unknown fields: refuse them (the default), accept them with a warning each,
    or accept them without a word. The names are the API server's ``fieldValidation`` values."""

    STRICT = "Strict"
    WARN = "Warn"
    IGNORE = "Ignore"


def parse_validation(text: str) -> FieldValidation:
    """``strict``/``warn``/``ignore`` in any case (``false`` as kubectl's ``--validate=false``);
    empty is Strict. Raises ValueError naming the choices."""
    value = text.strip().lower()
    if value in ("", "strict", "true"):
        return FieldValidation.STRICT
    if value == "warn":
        return FieldValidation.WARN
    if value in ("ignore", "false"):
        return FieldValidation.IGNORE
    raise ValueError(f'field validation "{text}": must be Strict, Warn or Ignore')


def _model_of(annotation: Any) -> tuple[type[Model] | None, bool]:
    """The model a field's values are checked against (None: not looked into), and whether the
    field holds a list of them."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_of(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            model, many = _model_of(arg)
            if model is not None:
                return model, many
        return None, False
    if origin is list:
        (item,) = typing.get_args(annotation) or (Any,)
        model, _ = _model_of(item)
        return model, model is not None
    if isinstance(annotation, type) and issubclass(annotation, Model):
        return annotation, False
    return None, False


@functools.cache
def _children(cls: type[Model]) -> dict[str, tuple[type[Model] | None, bool]]:
    out: dict[str, tuple[type[Model] | None, bool]] = {}
    for name, info in cls.model_fields.items():
        out[info.alias or name] = _model_of(info.annotation)
    for name, (shape, many) in cls.shapes.items():
        out[name] = (shape, many)
    return out


def unknown_fields(cls: type[Model], doc: Any, path: str = "") -> list[str]:
    """The paths of ``doc``'s fields that ``cls`` does not define, in document order."""
    if not isinstance(doc, Mapping):
        return []
    known = _children(cls)
    out: list[str] = []
    for key, value in doc.items():
        where = key_path(path, str(key))
        if key in known:
            model, many = known[key]
            if model is None:
                continue
            if many and isinstance(value, list):
                for i, item in enumerate(value):
                    out += unknown_fields(model, item, f"{where}[{i}]")
            elif not many:
                out += unknown_fields(model, value, where)
        elif key not in cls.passthrough:
            out.append(where)
    return out
