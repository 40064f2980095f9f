"""Credentials are never printed: every URL shown to a person (a model server's --base-url, a PostgreSQL store, a
URL quoted from a server's reply) goes through `redact_url`, and a driver's message through `scrub`."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

# What a URL carries secrets in: its user part (user:password@) and these query parameters (libpq's, and the
# API-key parameters some OpenAI-compatible gateways take).
SECRET_PARAMS = ("password", "sslpassword", "api_key", "apikey", "key", "token", "access_token")
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]*@")
_PARAM = re.compile(r"([?&](?:" + "|".join(SECRET_PARAMS) + r")=)[^&#\s]*", re.IGNORECASE)


def redact_url(text: str) -> str:
    """`text` with every URL's user part replaced by *** and its secret query parameters' values by ***."""
    return _URL.sub(lambda m: _PARAM.sub(r"\1***", _USERINFO.sub(r"\1***@", m.group())), text)


def _secrets(url: str) -> list[str]:
    """The secrets `url` itself carries (its password, secret parameters' values), to take out of messages."""
    try:
        parts = urlsplit(url)
        found = [parts.password] if parts.password else []
        found += [v for k, v in parse_qsl(parts.query) if k.lower() in SECRET_PARAMS and v]
    except ValueError:
        found = []
    return [s for s in found if s]


def scrub(message: str, url: str) -> str:
    """The first line of a server or driver message, with every secret of `url` and every URL's user part out."""
    for secret in _secrets(url):
        message = message.replace(secret, "***")
    first = next((line for line in message.splitlines() if line.strip()), "")
    return redact_url(" ".join(first.split()))
