"""JSON Schema documents (the repository's own) shown in the OpenAPI schema."""

from __future__ import annotations

from typing import Any


def openapi_from_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) document rewritten in the OpenAPI 3.0 dialect.

    Local `$ref`s into `$defs` are inlined; `const` becomes a one-value `enum`;
    `[T, "null"]` types and `oneOf [X, null]` become `nullable`; `$schema`, `$id`
    and `$defs` are dropped. Enough for the repository's schemas, not a general converter.
    """
    definitions = schema.get("$defs", {})

    def convert(node: Any) -> Any:
        if isinstance(node, list):
            return [convert(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return convert(definitions[node["$ref"].removeprefix("#/$defs/")])
        options = node.get("oneOf")
        if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
            (other,) = [option for option in options if option != {"type": "null"}]
            rest = {k: v for k, v in node.items() if k != "oneOf"}
            return {**convert(other), **convert(rest), "nullable": True}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$schema", "$id", "$defs"):
                continue
            if key == "const":
                out["enum"] = [value]
            elif key == "type" and isinstance(value, list):
                types = [t for t in value if t != "null"]
                out["type"] = types[0] if len(types) == 1 else types
                if "null" in value:
                    out["nullable"] = True
            elif key == "properties":
                out[key] = {name: convert(sub) for name, sub in value.items()}
            else:
                out[key] = convert(value)
        if "enum" in out and "type" not in out:
            kinds = {_JSON_TYPES.get(type(value)) for value in out["enum"]}
            if len(kinds) == 1 and None not in kinds:
                out["type"] = kinds.pop()
        return out

    return convert(schema)


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
