"""The wire protocol's JSON Schemas (the repository's schemas/*.json, the one definition the daemon
validates against and its TypeScript types are inferred from), and a checker for the subset of
JSON Schema draft-07 they use. Messages are checked before they are written, so a malformed one
fails here with the path of the problem instead of landing on the daemon's rejected stream.

The files are found in $PIPEMORPH_SCHEMA_DIR, else in the repository this package sits in, else in
pipemorph/wire_schemas/ (where an installed package carries the copy setup.py made at build time).
"""
import json
import math
import os
import re
from typing import Any, Dict, List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
_CANDIDATES = [os.environ.get("PIPEMORPH_SCHEMA_DIR", ""), os.path.join(_HERE, "..", "..", "..", "schemas"),
               os.path.join(_HERE, "wire_schemas")]
_cache: Dict[str, Dict[str, Any]] = {}


def schema_dir() -> str:
    for path in _CANDIDATES:
        if path and os.path.isfile(os.path.join(path, "registration.v1.schema.json")):
            return os.path.normpath(path)
    raise FileNotFoundError("pipemorph schemas not found: set PIPEMORPH_SCHEMA_DIR to the repository's schemas/ folder")


def load(name: str) -> Dict[str, Any]:
    """schemas/<name>.schema.json, e.g. load("rank-report.v1")."""
    if name not in _cache:
        with open(os.path.join(schema_dir(), name + ".schema.json"), encoding="utf-8") as f:
            _cache[name] = json.load(f)
    return _cache[name]


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool)
    or (isinstance(v, float) and math.isfinite(v) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
}


def problems(value: Any, schema: Dict[str, Any], root: Optional[Dict[str, Any]] = None, path: str = "") -> List[str]:
    """Every way `value` breaks `schema`, one line each naming the path ("" when it conforms: [])."""
    root = root or schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        merged = dict(target, **{k: v for k, v in schema.items() if k != "$ref"})
        return problems(value, merged, root, path)
    where = path or "/"
    if "const" in schema and value != schema["const"]:
        return ["%s must be %s" % (where, json.dumps(schema["const"]))]
    if "enum" in schema and value not in schema["enum"]:
        return ["%s must be one of %s" % (where, json.dumps(schema["enum"]))]
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if not any(_TYPES[k](value) for k in kinds):
            return ["%s must be %s" % (where, " or ".join(kinds))]
    found: List[str] = []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for key, ok in (("minimum", lambda b: value >= b), ("maximum", lambda b: value <= b),
                        ("exclusiveMinimum", lambda b: value > b), ("exclusiveMaximum", lambda b: value < b)):
            if key in schema and not ok(schema[key]):
                found.append("%s must be %s %s" % (where, key, schema[key]))
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", math.inf):
            found.append("%s has a length out of bounds" % where)
        if "pattern" in schema and not re.search(schema["pattern"], value):
            found.append("%s must match %s" % (where, schema["pattern"]))
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", math.inf):
            found.append("%s has a number of items out of bounds" % where)
        if "items" in schema:
            for i, item in enumerate(value):
                found += problems(item, schema["items"], root, "%s/%d" % (path, i))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        found += ["%s/%s is required" % (path, k) for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            if key in props:
                found += problems(item, props[key], root, "%s/%s" % (path, key))
            elif schema.get("additionalProperties") is False:
                found.append("%s/%s is not allowed" % (path, key))
    return found


def check(message: Dict[str, Any], name: str) -> None:
    """Raises ValueError naming every problem when `message` breaks schemas/<name>.schema.json."""
    found = problems(message, load(name))
    if found:
        raise ValueError("%s message does not conform to schemas/%s.schema.json: %s" % (message.get("type", "?"), name, "; ".join(found[:8])))
