"""GBNF grammars from JSON schemas, via llama.cpp's own converter."""

from __future__ import annotations

import json
from typing import Any, Mapping


def json_schema_grammar(schema: Mapping[str, Any]) -> str:
    """GBNF text that only admits JSON documents of `schema`'s shape."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(json.dumps(schema))
