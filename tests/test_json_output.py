"""Every --json output carries schema_version and validates against its schema file (real model, index and files)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from agent.cli import main
from agent.json_output import COMMANDS, SCHEMA_VERSION, schema
from json_support import read_output


@pytest.mark.parametrize("command", COMMANDS)
def test_each_schema_is_a_valid_schema_that_requires_the_version(command):
    jsonschema.Draft202012Validator.check_schema(schema(command))
    assert "schema_version" in schema(command)["required"]
    assert schema(command)["properties"]["schema_version"]["const"] == SCHEMA_VERSION


def test_an_unknown_command_has_no_schema():
    with pytest.raises(ValueError, match="choose one of ask, search, check, pack, eval"):
        schema("index")


def test_a_renamed_key_fails_validation():
    good = {"schema_version": SCHEMA_VERSION, "query": "q", "mode": "hybrid", "k": 5, "dense_coverage": 1.0, "hits": []}
    jsonschema.validate(good, schema("search"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({k if k != "hits" else "rows": v for k, v in good.items()}, schema("search"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(good | {"schema_version": 1}, schema("search"))


@pytest.mark.real
def test_ask_json_validates_and_keeps_the_old_answer_key_for_one_version(real_index, capsys):
    assert main(["ask", "What does the KV cache store?", "--json"]) == 0
    data = read_output("ask", capsys.readouterr().out)
    assert data["answer"] == data["text"] and data["text"].strip()
    assert data["status"] in ("answered", "insufficient_evidence")


@pytest.mark.real
def test_eval_without_the_model_validates(real_index, capsys):
    assert main(["eval", "--no-model", "--limit", "4", "--json", "--no-progress"]) == 0
    report = read_output("eval", capsys.readouterr().out)
    assert report["questions"]["n"] == 4 and len(report["rows"]) == 4


def test_control_characters_in_json_are_escaped():
    from agent.json_output import dumps

    text = dumps({"text": "a\x1b]52;c;aGk=\x07b\x9bc"})
    assert "\x1b" not in text and "\x07" not in text and "\\u001b" in text and json.loads(text)["text"].startswith("a\x1b")
    assert "\x9b" not in text and "\\u009b" in text and json.loads(text)["text"].endswith("b\x9bc")  # C1 too


def test_bidi_overrides_in_json_are_escaped():
    from agent.json_output import dumps

    text = dumps({"doc_id": "invoice\u202egpj.exe", "text": "\u2066x\u2069"})
    assert not any(c in text for c in "\u202e\u2066\u2069") and "\\u202e" in text
    assert json.loads(text)["doc_id"] == "invoice\u202egpj.exe"
