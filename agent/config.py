"""The settings file, config.toml in the platform's config folder, and where each effective setting came from.

Precedence: command-line flags over environment variables over the file over defaults. An API key never lives in
the file: it comes from a flag, $SMOLDOCS_API_KEY, or a file only the user can read (`api_key_file`).
"""

from __future__ import annotations

import math
import os
import stat
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import platformdirs

from agent.errors import UsageError
from agent.settings import DECODINGS, POLICIES, RERANK_DEFAULT, AgentSettings, Effective, Settings

CONFIG_ENV = "SMOLDOCS_CONFIG"  # another settings file: tests, or several setups
API_KEY_ENV = "SMOLDOCS_API_KEY"


class ConfigError(UsageError):
    """The settings file, or an environment setting, cannot be used as written."""


@dataclass(frozen=True)
class Key:
    name: str  # in config.toml, and the argparse dest
    kind: type  # str | int | float | Path
    flag: str | None
    env: str | None
    default: object = None
    choices: tuple[str, ...] = ()
    example: str = ""
    seconds: bool = False  # a timeout: finite, above 0, at most MAX_SECONDS


KEYS = (
    Key("docs", Path, "--docs", "SMOLDOCS_DOCS", example='"~/notes"'),
    Key("store", str, "--store", "SMOLDOCS_STORE", example='"postgresql://smoldocs@db.example.org/docs"'),
    Key("embed_url", str, "--embed-url", "SMOLDOCS_EMBED_URL", example='"http://127.0.0.1:8081/v1"'),
    Key("embed_model", str, "--embed-model", "SMOLDOCS_EMBED_MODEL", example='"all-MiniLM-L6-v2"'),
    Key("model", Path, "--model", "SMOLDOCS_MODEL", example='"~/models/SmolLM2-1.7B-Instruct-Q4_K_M.gguf"'),
    Key("base_url", str, "--base-url", "SMOLDOCS_BASE_URL", example='"http://127.0.0.1:8080/v1"'),
    Key("model_name", str, "--model-name", "SMOLDOCS_MODEL_NAME", example='"smollm2-1.7b"'),
    Key("tokenizer", Path, "--tokenizer", "SMOLDOCS_TOKENIZER", example='"~/models/SmolLM2-1.7B-Instruct-Q4_K_M.gguf"'),
    Key("n_ctx", int, "--n-ctx", "SMOLDOCS_N_CTX", example="8192"),
    Key("tools", str, "--tools", "SMOLDOCS_TOOLS", "auto", POLICIES, '"auto"'),
    Key("decoding", str, "--decoding", "SMOLDOCS_DECODING", "auto", DECODINGS, '"auto"'),
    Key("queries", str, "--queries", "SMOLDOCS_QUERIES", "tuned", ("tuned", "base"), '"base"'),
    Key("rerank", str, "--rerank", "SMOLDOCS_RERANK", "on" if RERANK_DEFAULT else "off", ("on", "off"), '"on"'),
    Key("temperature", float, "--temperature", None, example="0.2"),
    Key("max_tokens", int, "--max-tokens", None, example="256"),
    Key("connect_timeout", float, "--connect-timeout", "SMOLDOCS_CONNECT_TIMEOUT", 5.0, example="5", seconds=True),
    Key("first_token_timeout", float, "--first-token-timeout", "SMOLDOCS_FIRST_TOKEN_TIMEOUT", 120.0, example="120",
        seconds=True),
    Key("token_timeout", float, "--token-timeout", "SMOLDOCS_TOKEN_TIMEOUT", 60.0, example="60", seconds=True),
    Key("answer_timeout", float, "--answer-timeout", "SMOLDOCS_ANSWER_TIMEOUT", 600.0, example="600", seconds=True),
    Key("api_key_file", Path, None, "SMOLDOCS_API_KEY_FILE", example='"~/.config/smoldocs/api_key"'),
    # The chat app's Copy: a local tool (auto) or the terminal's OSC 52 (agent.surfaces.tui.clipboard.CLIPBOARDS).
    Key("clipboard", str, "--clipboard", "SMOLDOCS_CLIPBOARD", "auto", ("auto", "osc52"), '"osc52"'),
)
BY_NAME = {k.name: k for k in KEYS}
COLLECTIONS = "collections"  # the settings file's table of named docs sources: notes = "~/notes", man = "man:1,8"
# A day: longer is no timeout at all, and the socket layer overflows on values near 1e10.
MAX_SECONDS = 86400.0


def config_path(environ: Mapping[str, str] = os.environ) -> Path:
    root = environ.get(CONFIG_ENV)
    return Path(root).expanduser() if root else Path(platformdirs.user_config_dir("smoldocs")) / "config.toml"


def read_file(path: Path) -> dict:
    """The settings file's values, checked; {} when there is none."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read the settings file {path}: {exc.strerror or exc}: fix its permissions") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    # ValueError: also int() refusing a 5,000-digit number; RecursionError: nesting thousands deep.
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ConfigError(
            f"the settings file {path} is not valid TOML ({exc}): fix it, e.g. base_url = \"http://127.0.0.1:8080/v1\""
        ) from None
    values = {}
    for name, value in data.items():
        if name == COLLECTIONS:
            values[name] = _collections(value, path)
            continue
        if name in ("api_key", "key", "openai_api_key"):
            raise ConfigError(
                f"{path}: {name}: an API key does not belong in the settings file; put it in a file only you can "
                f"read and set api_key_file = \"PATH\", or set {API_KEY_ENV}"
            )
        key = BY_NAME.get(name)
        if key is None:
            known = ", ".join([*BY_NAME, f"[{COLLECTIONS}]"])
            raise ConfigError(f"{path}: unknown key {name!r}: remove it; known keys are {known}")
        values[name] = _convert(key, value, f"{path}: {name}")
    return values


def _collections(table, path: Path) -> dict[str, str]:
    """`[collections]`: each a name and its source, a folder or `man:SECTIONS`, checked to be text."""
    example = f'[{COLLECTIONS}] then notes = "~/notes" or man = "man:1,8"'
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {COLLECTIONS} must be a table of names and folders: write it like {example}")
    for name, source in table.items():
        if not isinstance(source, str) or not source.strip():
            raise ConfigError(f"{path}: {COLLECTIONS}.{name} = {source!r} is not a folder in quotes: "
                              f"write it like {example}")
    return dict(table)


def _convert(key: Key, value, where: str, flag: bool = False):
    """`value` as `key` takes it, checked; `where` names its source in the one-line error (a flag: `--x VALUE`)."""
    example = f"{key.flag} {key.example}" if flag else (f"{key.name} = {key.example}" if key.example else key.name)
    converted: Path | str | int | float
    try:
        if key.kind is Path:
            if not isinstance(value, (str, Path)) or not str(value):
                raise ValueError
            converted = Path(value).expanduser()
        elif key.kind is str:
            if not isinstance(value, str) or not value:
                raise ValueError
            converted = value
        elif key.kind is int:
            whole = int(value) if not isinstance(value, (bool, float)) else None
            if whole is None or whole < 1:
                raise ValueError
            converted = whole
        else:
            number = float(value) if not isinstance(value, bool) else None
            if number is None or not math.isfinite(number) or number < 0:
                raise ValueError
            if key.seconds and not 0 < number <= MAX_SECONDS:
                raise ValueError
            converted = number
    except (TypeError, ValueError, OverflowError):
        kinds = {Path: "a path in quotes", str: "text in quotes", int: "a whole number >= 1", float: "a number >= 0"}
        kind = f"a number of seconds above 0 (at most {MAX_SECONDS:g})" if key.seconds else kinds[key.kind]
        shown = f"{where} {value}" if flag else f"{where} = {value!r}"
        raise ConfigError(f"{shown} is not {kind}: write it like {example}") from None
    if key.choices and converted not in key.choices:
        shown = f"{where} {value}" if flag else f"{where} = {value!r}"
        raise ConfigError(f"{shown} is not one of {', '.join(key.choices)}: write it like {example}")
    return converted


def resolve(flags: Mapping[str, object], environ: Mapping[str, str] = os.environ) -> Effective:
    """Flags (None: not given) over environment over file over defaults, with the source of each value."""
    path = config_path(environ)
    file_values = read_file(path)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key in KEYS:
        flag_value = flags.get(key.name)
        if flag_value is not None:
            if key.kind is Path and not str(flag_value).strip():  # Path("") is the current folder, silently
                raise ConfigError(f"{key.flag} is empty: give a path, or leave {key.flag} out for the default")
            # Numbers are checked here too, so a bad timeout is one line wherever it comes from.
            checked = _convert(key, flag_value, key.flag or key.name, flag=True) if key.kind in (int, float) else flag_value
            values[key.name], sources[key.name] = checked, f"flag {key.flag}"
        elif key.env and environ.get(key.env, "").strip():
            values[key.name] = _convert(key, environ[key.env].strip(), key.env)
            sources[key.name] = f"env {key.env}"
        elif key.name in file_values:
            values[key.name], sources[key.name] = file_values[key.name], "file"
        else:
            values[key.name], sources[key.name] = key.default, "default"
    # Named sources come from the file only; a --docs flag (rag.indexing.collections) takes their place.
    values[COLLECTIONS] = file_values.get(COLLECTIONS, {})
    sources[COLLECTIONS] = "file" if COLLECTIONS in file_values else "default"
    api_key, api_source = _api_key(flags.get("api_key"), environ, values["api_key_file"], sources["api_key_file"])
    return Effective(values, sources, path, path.is_file(), api_key, api_source)


def _api_key(flag, environ, key_file: Path | None, key_file_source: str) -> tuple[str | None, str]:
    if flag:
        return str(flag), "flag --api-key"
    if environ.get(API_KEY_ENV, "").strip():
        return environ[API_KEY_ENV].strip(), f"env {API_KEY_ENV}"
    if key_file is None:
        return None, "none"
    try:
        info = key_file.stat()
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"api_key_file {key_file} can be read by other users: run `chmod 600 {key_file}` (the key stays unread)"
            )
        text = key_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"api_key_file {key_file}: {exc.strerror or exc}: fix the path ({key_file_source})") from None
    if not text:
        raise ConfigError(f"api_key_file {key_file} is empty: write the key in it, alone on one line")
    return text, f"api_key_file ({key_file_source})"


def settings_from(given: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> Settings:
    """The one Settings of a run: the command line's values (`given`, by argparse dest; absent or None: not given)
    over the environment over the file over defaults, with each value's source kept in `origin`."""
    effective = resolve({**{k.name: given.get(k.name) for k in KEYS}, "api_key": given.get("api_key")}, environ)
    v = effective.values
    return Settings(
        docs=_docs(v["docs"]), index=_path(given.get("index")) or _man_index(_docs(v["docs"])),
        sources=_sources(given, effective), collections=tuple(given.get("collections") or ()),
        store=v["store"], quiet=bool(given.get("quiet")),
        current_only=bool(given.get("current_only")), embed_budget=given.get("embed_budget"),
        model=_path(v["model"]), base_url=v["base_url"], api_key=effective.api_key, model_name=v["model_name"],
        tokenizer=_path(v["tokenizer"]), n_ctx=v["n_ctx"], connect_timeout=v["connect_timeout"],
        first_token_timeout=v["first_token_timeout"], token_timeout=v["token_timeout"],
        answer_timeout=v["answer_timeout"], embed_url=v["embed_url"], embed_model=v["embed_model"], queries=v["queries"],
        agent=_agent_settings(v), origin=effective,
    )


def _sources(given: Mapping[str, Any], effective: Effective):
    """Every source the command reads, named (rag.indexing.collections): the --docs flags (and --man, --info) in
    order; without them the settings file's `docs` and `[collections]`; without those the bundled docs. With
    --store they are what `smoldocs index --store` fills it from."""
    from rag.indexing.collections import collections_of
    from rag.ingest.corpus import default_docs_dir

    more = list(given.get("more_docs") or ())
    docs = effective.values["docs"]
    from_flag = str(effective.sources.get("docs", "flag")).startswith("flag") or bool(more)
    named: list[tuple[str | None, Any]] = [(None, docs)] if docs is not None else []
    named += [(None, d) for d in more]
    if not from_flag or docs is None:
        named += list(dict(effective.values.get(COLLECTIONS) or {}).items())
    if not named:
        named = [(None, default_docs_dir())]
    from rag.errors import DocsNotFound

    try:  # --index as the user gave it: one source's index there, several sources' in index/<name>
        return collections_of(named, index_dir=given.get("index"))
    except DocsNotFound:
        if len(named) > 1:
            raise
        return None  # one source that cannot be read: the command that opens it says why (agent.opening)


def _docs(value):
    """--docs as a source: `man:1,8` is --man's pages (rag.indexing.collections.source_of), else a path."""
    text = str(value) if isinstance(value, (str, Path)) else ""
    if text == "man" or text.startswith("man:"):
        from rag.errors import DocsNotFound
        from rag.indexing.collections import source_of

        try:
            return source_of(text)
        except DocsNotFound:
            pass  # no man pages here: opening the docs says so
    return _path(value)


def _path(value):
    """A path as given (a flag's text becomes a Path; --man's pages stay a ManSource)."""
    return Path(value) if isinstance(value, str) else value


def _man_index(docs) -> Path | None:
    """--man's pages get an index of their own, named by their trees and sections."""
    from rag.indexing.store import cache_dir
    from rag.ingest.man_pages import ManSource

    return cache_dir() / "indexes" / docs.index_key if isinstance(docs, ManSource) else None


def _agent_settings(values: Mapping[str, Any]) -> AgentSettings:
    """How a turn runs: --tools, --decoding, --rerank, and the answer's temperature and length when set."""
    agent = AgentSettings(policy=values["tools"], decoding=values["decoding"], rerank=values["rerank"] == "on")
    changes = {name: values[name] for name in ("temperature", "max_tokens") if values[name] is not None}
    return agent.with_(generation=replace(agent.generation, **changes)) if changes else agent
