"""One-line messages for pydantic validation errors: the file, the field path and what is allowed."""
from __future__ import annotations

import types
import typing
from pathlib import Path

from pydantic import BaseModel, ValidationError


def format_error(path: Path, exc: ValidationError, root: type[BaseModel], prefix: str = "") -> str:
    errs = exc.errors(include_url=False)
    e = errs[0]
    loc = [str(x) for x in e["loc"]]
    field = ".".join(([prefix] if prefix else []) + loc) or "(top level)"
    kind, msg = e["type"], e["msg"]
    if kind == "extra_forbidden":
        allowed = _fields_at(root, e["loc"][:-1])
        what = f"unknown field {loc[-1]!r}" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
    elif kind == "missing":
        what = "required field is missing"
    elif kind.startswith("value_error") or kind == "assertion_error":
        what = msg.removeprefix("Value error, ")
    else:
        what = f"{msg} (got {e.get('input')!r})"
    more = f" (and {len(errs) - 1} more error{'s' if len(errs) > 2 else ''})" if len(errs) > 1 else ""
    return f"{path}: {field}: {what}{more}"


def _fields_at(model: type[BaseModel], loc: tuple) -> list[str]:
    """Names (aliases where set) of the model found by walking `loc` from `model`."""
    cur: object = model
    for part in loc:
        cur = _unwrap(cur)
        if isinstance(cur, type) and issubclass(cur, BaseModel):
            f = next((f for n, f in cur.model_fields.items() if part in (n, f.alias)), None)
            if f is None:
                return []
            cur = f.annotation
        elif typing.get_origin(cur) in (dict, list, tuple):
            cur = typing.get_args(cur)[-1]
        else:
            return []
    cur = _unwrap(cur)
    if isinstance(cur, type) and issubclass(cur, BaseModel):
        return [f.alias or n for n, f in cur.model_fields.items()]
    return []


def _unwrap(t: object) -> object:
    """Optional[X] -> X."""
    args = [a for a in typing.get_args(t) if a is not type(None)]
    if typing.get_origin(t) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return t
