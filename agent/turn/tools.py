"""The tool registry: named tools with a JSON schema, validated calls, and failures returned as results."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import jsonschema

from rag.excerpts.document_tool import DocumentResult
from rag.excerpts.packing import PackedContext
from rag.excerpts.search_tool import SearchResult


@dataclass(frozen=True)
class ToolResult:
    """What the model sees (`text`) and what the loop keeps (`payload`: the tool's result; None for an error
    the registry caught or a tool that returned plain text)."""

    name: str
    arguments: Any
    text: str
    error: str | None = None
    payload: SearchResult | None = None  # get_document's DocumentResult is one too

    @property
    def packed(self) -> PackedContext | None:
        """The excerpts the call packed, if any."""
        return self.payload.packed if self.payload is not None else None

    @property
    def found(self) -> bool:
        """An answer the model can use: no error, and not get_document's `source_not_found`."""
        return self.ok and not (isinstance(self.payload, DocumentResult) and self.payload.not_found)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    schema: Mapping[str, Any]
    fn: Callable[[dict], SearchResult | str]
    validator: jsonschema.protocols.Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        schema = dict(self.schema)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        object.__setattr__(self, "validator", cls(schema))

    def spec(self) -> dict:
        """The tool as the model is told about it."""
        return {"name": self.name, "description": self.description, "parameters": dict(self.schema)}


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    return f"{where}: {error.message}"


class ToolRegistry:
    """Tools by name. `call` never raises for the model's mistakes or a tool's failure: it returns an error result."""

    def __init__(self, tools: Mapping[str, Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = dict(tools or {})

    def names(self) -> list[str]:
        return sorted(self._tools)

    def specs(self) -> list[dict]:
        return [self._tools[name].spec() for name in self.names()]

    def call(self, name: str, arguments: Any) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self.names()) or "none"
            return self._error(name, arguments, f"unknown tool {name!r}; the tools are: {known}")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                return self._error(name, arguments, f"arguments are not valid JSON ({exc.msg})")
        problems = sorted(tool.validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if problems:
            detail = "; ".join(_describe(e) for e in problems[:3])
            return self._error(name, arguments, f"invalid arguments for {name}: {detail}")
        try:
            out = tool.fn(arguments)
        except Exception as exc:  # a tool's failure is a result the model can act on, never a crash
            return self._error(name, arguments, f"{name} failed: {type(exc).__name__}: {exc}")
        if isinstance(out, str):
            return ToolResult(name, arguments, out)
        return ToolResult(name, arguments, out.text, error=out.error, payload=out)

    @staticmethod
    def _error(name: str, arguments: Any, message: str) -> ToolResult:
        return ToolResult(name, arguments, f"Error: {message}", error=message)
