"""Building a ChatSession from command-line options (--docs, --model, --index, --tools)."""

from __future__ import annotations

import argparse

from agent.session import ChatSession
from agent.settings import AgentSettings


def open_cli_session(args: argparse.Namespace, tools: str = "auto", decoding: str = "free") -> ChatSession:
    """Load the chat model named by --model, the embedder, and the index of --docs (with a progress bar)."""
    from agent.commands.common import load_embedder_from_args, open_index_from_args
    from models.chat import load_chat_model

    model = load_chat_model(getattr(args, "model", None))
    embedder = load_embedder_from_args(args)
    index = open_index_from_args(args, tokenizer=model.tokenizer, embedder=embedder)
    settings = AgentSettings(policy=tools, decoding=decoding)
    return ChatSession(model, index, embedder=embedder, settings=settings, docs_dir=getattr(index, "docs_dir", None))
