"""Status bodies exactly as kube-apiserver writes them, and the exception that carries one."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An API answer other than success: an HTTP code and the Status body the apiserver sends."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.body: dict[str, Any] = failure(code, reason, message, details)
        self.headers: dict[str, str] = {}


def failure(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def success(code: int, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def _details(resource: str, name: str, group: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if group:
        out["group"] = group
    out["kind"] = resource
    return out


def qualified(resource: str, group: str) -> str:
    """``pods`` for the core group, ``leases.coordination.k8s.io`` otherwise, as messages name them."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        404, "NotFound", f'{qualified(resource, group)} "{name}" not found', _details(resource, name, group)
    )


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        _details(resource, name, group),
    )


def conflict(resource: str, name: str, why: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        _details(resource, name, group),
    )


MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(kind: str, name: str, causes: list[tuple[str, str, str]], group: str = "") -> ApiError:
    """422 Invalid; causes are (field, reason such as FieldValueRequired, message)."""
    text = "; ".join(f"{field}: {message}" for field, _, message in causes)
    gk = f"{kind}.{group}" if group else kind
    details = {
        "name": name,
        **({"group": group} if group else {}),
        "kind": kind,
        "causes": [{"reason": r, "message": m, "field": f} for f, r, m in causes],
    }
    prefix = f'{gk} "{name}" is invalid: ' if len(causes) == 1 else f'{gk} "{name}" is invalid: ['
    return ApiError(422, "Invalid", prefix + text + ("" if len(causes) == 1 else "]"), details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(resource: str, name: str, why: str, group: str = "") -> ApiError:
    target = f'{qualified(resource, group)} "{name}"' if name else qualified(resource, group)
    return ApiError(403, "Forbidden", f"{target} is forbidden: {why}", _details(resource, name, group))


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_many_requests(retry_after: int) -> ApiError:
    err = ApiError(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        {"retryAfterSeconds": retry_after},
    )
    err.headers["Retry-After"] = str(retry_after)
    return err


def internal(message: str) -> ApiError:
    return ApiError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def method_not_allowed(method: str) -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({method})"
    )


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {content_type})",
    )


def too_large_resource_version(asked: int, current: int) -> ApiError:
    return ApiError(
        504,
        "Timeout",
        f"Too large resource version: {asked}, current: {current}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )
