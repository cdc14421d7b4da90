"""Validation of an object against a CRD's structural schema (``openAPIV3Schema``), the way
the API server does it for the keywords upstream CRDs use: type, format (int32, int64,
date-time), properties and unknown fields, required, minProperties, enum, pattern, length,
item and number bounds. CEL rules (``x-kubernetes-validations``) are not evaluated.

``errors`` lists what the API server would refuse (422 Invalid); ``unknown`` lists fields the
schema does not know, which it drops (or refuses with ``fieldValidation=Strict``). The
schemas come from upstream CRDs copied under tests/fixtures/upstream.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

UPSTREAM = Path(__file__).parent / "fixtures" / "upstream"
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def trainjob_status_schema() -> dict[str, Any]:
    """The TrainJob CRD's ``status`` schema (kubeflow/trainer, see the fixture's header)."""
    doc = yaml.safe_load((UPSTREAM / "trainjob_crd_status.yaml").read_text())
    return dict(doc["status"])


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def check(value: Any, schema: dict[str, Any], path: str = "") -> tuple[list[str], list[str]]:
    """(errors, unknown fields) of ``value`` under ``schema``; both empty when it is valid."""
    errors: list[str] = []
    unknown: list[str] = []
    _walk(value, schema, path or ".", errors, unknown)
    return errors, unknown


def _walk(
    value: Any, schema: dict[str, Any], path: str, errors: list[str], unknown: list[str]
) -> None:
    kind = schema.get("type")
    if value is None:
        if not schema.get("nullable"):
            errors.append(f"{path}: null is not allowed")
        return
    if kind and not _type_ok(value, kind):
        errors.append(f"{path}: {type(value).__name__} is not {kind}")
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if kind == "integer" and schema.get("format") in _INT_RANGES:
        low, high = _INT_RANGES[schema["format"]]
        if not low <= value <= high:
            errors.append(f"{path}: {value} overflows {schema['format']}")
    if kind in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} is below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} is above {schema['maximum']}")
    if kind == "string":
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
        if schema.get("format") == "date-time":
            try:
                ok = bool(_DATE_TIME.match(value)) and bool(
                    datetime.fromisoformat(value.replace("Z", "+00:00"))
                )
            except ValueError:
                ok = False
            if not ok:
                errors.append(f"{path}: {value!r} is not an RFC 3339 date-time")
    if kind == "array":
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        for i, item in enumerate(value):
            _walk(item, schema.get("items") or {}, f"{path}[{i}]", errors, unknown)
    if kind == "object":
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{path}: fewer than {schema['minProperties']} properties")
        for name in schema.get("required") or []:
            if name not in value:
                errors.append(f"{path}.{name}: required")
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            where = f"{path.rstrip('.')}.{name}"
            if props is not None and name in props:
                _walk(item, props[name], where, errors, unknown)
            elif isinstance(extra, dict):
                _walk(item, extra, where, errors, unknown)
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
                unknown.append(where)


def prune(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` without the fields ``schema`` does not know (what the API server stores)."""
    if isinstance(value, dict) and schema.get("type") == "object":
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if props is None or schema.get("x-kubernetes-preserve-unknown-fields"):
            if isinstance(extra, dict):
                return {k: prune(v, extra) for k, v in value.items()}
            return value
        return {k: prune(v, props[k]) for k, v in value.items() if k in props}
    if isinstance(value, list) and schema.get("type") == "array":
        return [prune(v, schema.get("items") or {}) for v in value]
    return value
