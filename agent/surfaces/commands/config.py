"""`smoldocs config`: the effective settings and where each came from (flag, environment, config.toml, default)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from agent.settings import Settings

HELP = "print the effective settings and where each comes from (flags > environment > config.toml > defaults)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from agent.surfaces.commands.common import add_docs_option, add_embed_options, add_model_option, add_store_option

    add_docs_option(p)
    add_store_option(p)
    add_model_option(p)
    add_embed_options(p)


@dataclass(frozen=True)
class Options:
    """`smoldocs config` shows Settings: it has no options of its own."""


def run(settings: Settings, options: Options) -> int:
    from agent.config import KEYS, resolve
    from models.redaction import redact_url

    effective = settings.origin if settings.origin is not None else resolve({})  # built in code: what the file says
    state = "" if effective.file_found else " (not found: defaults apply; create it to keep settings)"
    print(f"settings file: {effective.path}{state}")
    width = max(len(k.name) for k in KEYS)
    for key in KEYS:
        value = effective.values[key.name]
        shown = "-" if value is None else redact_url(str(value))
        print(f"{key.name:<{width}}  {shown:<44}  {effective.sources[key.name]}")
    named = effective.values.get("collections") or {}
    shown = ", ".join(f"{name} = {source}" for name, source in named.items()) or "-"
    print(f"{'collections':<{width}}  {shown:<44}  {effective.sources.get('collections', 'default')}")
    key_note = "set, not shown" if effective.api_key else "-"
    print(f"{'api_key':<{width}}  {key_note:<44}  {effective.api_key_source}")
    return 0
