"""Credentials are never printed: every URL or libpq conninfo shown to a person (a model server's --base-url, a
PostgreSQL store, a URL quoted from a server's reply) goes through `redact_url`, and a driver's message through `scrub`."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

# What a URL carries secrets in: its user part (user:password@) and these query parameters (libpq's, and the
# API-key parameters some OpenAI-compatible gateways take); a libpq conninfo (host=h password=p) in the same keys.
SECRET_PARAMS = ("password", "sslpassword", "api_key", "apikey", "key", "token", "access_token")
# The colon is optional: "postgresql//u:pw@h/d" is a typo that still carries a password.
_SCHEME = r"\b[A-Za-z][A-Za-z0-9+.-]*:?//"
# Up to the last @ before the path: a password may hold spaces and @ (psycopg and httpx quote it as given).
_USERINFO = re.compile(f"({_SCHEME})[^/?#\\n]*@")
_BARE_USERINFO = re.compile(r"(?<![\w.%+*-])[\w.%+-]+:[^\s/?#@]*@")  # u:pw@host/db with no scheme at all
_URL = re.compile(_SCHEME + r"[^\s'\"<>]*")
_PARAM = re.compile(r"([?&](?:" + "|".join(SECRET_PARAMS) + r")=)[^&#\s]*", re.IGNORECASE)
# libpq's key = value form; a value may be single-quoted with backslash escapes.
_KEYVALUE = re.compile(r"\b((?:" + "|".join(SECRET_PARAMS) + r")\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|[^\s&#'\"]+)", re.IGNORECASE)


def redact_url(text: str) -> str:
    """`text` with every URL's user part, its secret query parameters' values and conninfo passwords replaced by ***."""
    text = _BARE_USERINFO.sub("***@", _USERINFO.sub(r"\1***@", text))
    text = _URL.sub(lambda m: _PARAM.sub(r"\1***", m.group()), text)
    return _KEYVALUE.sub(r"\1***", text)


def _secrets(url: str) -> list[str]:
    """The secrets `url` itself carries (its password, secret parameters' and conninfo keys' values), to take out of
    messages, as written and percent-decoded."""
    found = [_unquoted(m.group()[len(m.group(1)):]) for m in _KEYVALUE.finditer(url)]
    try:
        parts = urlsplit(url)
        found += [parts.password] if parts.password else []
        found += [v for k, v in parse_qsl(parts.query) if k.lower() in SECRET_PARAMS and v]
    except ValueError:
        pass
    found += [unquote(s) for s in found]
    return sorted({s for s in found if s}, key=len, reverse=True)  # longest first: one secret may hold another


def _unquoted(value: str) -> str:
    if value.startswith("'"):
        return re.sub(r"\\(.)", r"\1", value.strip("'"))
    return value


def scrub(message: str, url: str) -> str:
    """The first line of a server or driver message, with every secret of `url` and every URL's user part out."""
    for secret in _secrets(url):
        message = message.replace(secret, "***")
    first = next((line for line in message.splitlines() if line.strip()), "")
    return redact_url(" ".join(first.split()))
