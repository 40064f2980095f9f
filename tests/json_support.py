"""Reading a command's --json output the way a consumer would: parsed, then validated against its schema file."""

from __future__ import annotations

import json

import jsonschema

from agent.json_output import SCHEMA_VERSION, schema


def read_output(command: str, text: str) -> dict:
    """The parsed output of `smoldocs <command> --json`; fails the test when it does not match the schema."""
    data = json.loads(text)
    jsonschema.validate(data, schema(command), cls=jsonschema.Draft202012Validator)
    assert data["schema_version"] == SCHEMA_VERSION
    return data
