"""Secrets out of error text: nothing a provider echoes back reaches a topic, a log or a report.

A provider's 401 may quote the API key it was sent, an ``Authorization`` header or the
URL with its credentials (``http://user:password@host``). ``redact_secrets`` replaces:

- the values it is given (the configured API key, a URL's password), wherever they appear;
- URL credentials: ``scheme://user:password@`` and ``scheme://token@`` become ``scheme://***@``;
- bearer and basic tokens: ``Bearer xxx`` becomes ``Bearer ***``;
- header and field values named like a key: ``Authorization: ...``, ``x-api-key: ...``,
  ``api_key=...``, ``"api_key": "..."``;
- key-shaped words: ``sk-...`` (OpenAI, Anthropic, DeepSeek...), ``AIza...`` (Google),
  ``gsk_...``, ``hf_...``, ``xai-...``, ``ghp_...``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

__all__ = ["MASK", "redact_secrets", "redact_url", "url_secrets"]

MASK = "***"
_MIN_SECRET = 4
"""Given values shorter than this are not replaced (they would mask ordinary words)."""
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@?#'\"<>]+)@")
_BEARER = re.compile(r"\b(?P<kind>Bearer|Basic|Token)(?P<gap>\s+)[A-Za-z0-9._~+/=:-]+", re.IGNORECASE)
_KEY_FIELD = re.compile(
    r"(?P<name>\b(?:authorization|proxy-authorization|x-api-key|api[-_]?key|x-goog-api-key|access[-_]?token|"
    r"secret|password|passwd)['\"]?\s*[:=]\s*['\"]?)"
    r"(?P<value>(?!\*\*\*)(?!(?:Bearer|Basic|Token)\s)[^\s'\",;}&]+)",
    re.IGNORECASE,
)
_KEY_SHAPED = re.compile(
    r"\b(?:(?:sk|rk|pk|xai)-[A-Za-z0-9_-]{8,}|AIza[0-9A-Za-z_-]{20,}|(?:gsk|hf|ghp|gho|glpat)[_-][A-Za-z0-9_-]{12,})"
)


def _given(secrets: Iterable[str | None]) -> list[str]:
    values = {value for value in secrets if value and len(value) >= _MIN_SECRET}
    # the decoded form too: a password in a URL is percent-encoded there, plain in an echo
    values |= {unquote(value) for value in values if len(unquote(value)) >= _MIN_SECRET}
    return sorted(values, key=len, reverse=True)  # longest first: a key that holds another


def url_secrets(url: str | None) -> list[str]:
    """The user name and password a URL carries (``http://user:password@host``), if any."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    return [value for value in (parts.username, parts.password) if value]


def redact_url(url: str) -> str:
    """``url`` with its credentials replaced: ``http://user:pw@host/v1`` -> ``http://***@host/v1``."""
    return _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", url)


def redact_secrets(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with the given values, URL credentials, tokens and key-shaped words masked."""
    for value in _given(secrets):
        text = text.replace(value, MASK)
    text = redact_url(text)
    text = _BEARER.sub(lambda m: f"{m.group('kind')}{m.group('gap')}{MASK}", text)
    text = _KEY_FIELD.sub(lambda m: f"{m.group('name')}{MASK}", text)
    return _KEY_SHAPED.sub(MASK, text)
