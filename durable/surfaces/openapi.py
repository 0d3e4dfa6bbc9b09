"""Corrections to the OpenAPI schema drf-spectacular writes for the engine's API."""

import re


def _accepts_empty(option: dict) -> bool:
    return (
        option.get("type") == "string"
        and option.get("minLength", 0) == 0
        and re.search(option.get("pattern", ""), "") is not None
    )


def blank_text_is_one_alternative(result, generator, request, public):
    """drf-spectacular hook: a text that may be blank is written ``oneOf: [<the text, with
    its no-NUL pattern>, <an empty string>]``; "" matches both, which ``oneOf`` forbids, so a
    client (schemathesis did) reads "" as invalid although the API takes it. When the text's
    own rule already takes "", the empty alternative goes."""
    for schema in result.get("components", {}).get("schemas", {}).values():
        for name, field in schema.get("properties", {}).items():
            options = field.get("oneOf", [])
            empty = [option for option in options if option == {"type": "string", "maxLength": 0}]
            rest = [option for option in options if option not in empty]
            if empty and len(rest) == 1 and _accepts_empty(rest[0]):
                field.pop("oneOf")
                schema["properties"][name] = {**rest[0], **field}
    return result
