"""Building a ChatSession from command-line options (--docs, --model, --index, --tools)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from agent.session import ChatSession
from agent.settings import AgentSettings


def open_cli_session(args: argparse.Namespace, tools: str = "auto", decoding: str = "auto") -> ChatSession:
    """Load the chat model named by --model, the embedder, and the index of --docs (with a progress bar)."""
    from agent.commands.common import load_embedder_from_args, open_chat_model, open_index_from_args

    model = open_chat_model(args)
    embedder = load_embedder_from_args(args)
    index = open_index_from_args(
        args, tokenizer=model.tokenizer, embedder=embedder,
        embed_budget=getattr(args, "embed_budget", None), embed_first=getattr(args, "question", None),
    )
    from agent.commands.common import rerank_from_args

    settings = AgentSettings(policy=tools, decoding=decoding, rerank=rerank_from_args(args))
    given = {name: getattr(args, name, None) for name in ("temperature", "max_tokens")}
    changes: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
    if changes:  # from config.toml or the environment: `ask` has no such flags
        settings = settings.with_(generation=replace(settings.generation, **changes))
    return ChatSession(model, index, embedder=embedder, settings=settings, docs_dir=index.docs_dir)
