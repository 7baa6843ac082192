"""Secret redaction, on by default for every output.

Covers Hugging Face tokens, OpenAI-style and generic API keys, bearer/authorization headers,
``--api-key VALUE`` / ``api_key: VALUE`` pairs, and credentials inside URLs.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "[REDACTED]"

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # --api-key VALUE, --api-key=VALUE, --hf-token X, "api_key": "X", api_key=X, token: X
    (re.compile(r"(?i)(--(?:api[-_]key|hf[-_]token|token|password|secret)(?:=|\s+)['\"]?)([^\s'\"]+)"), r"\1" + MASK),
    (re.compile(r"(?i)([\"']?(?:api[-_]?key|hf[-_]token|access[-_]token|auth[-_]token|secret|password|"
                r"HF_TOKEN|HUGGING_FACE_HUB_TOKEN|OPENAI_API_KEY|VLLM_API_KEY)[\"']?\s*[:=]\s*[\"']?)"
                r"([^\s'\",}]+)"), r"\1" + MASK),
    # Authorization: Bearer xxx / Basic xxx
    (re.compile(r"(?i)(authorization\s*[:=]\s*(?:bearer|basic|token)\s+)([A-Za-z0-9._~+/=-]+)"), r"\1" + MASK),
    (re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/=-]{8,})"), r"\1" + MASK),
    # Hugging Face user access tokens and OpenAI-style keys anywhere.
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"), MASK),
    (re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{16,}\b"), MASK),
    # GitHub tokens, AWS access key ids
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), MASK),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), MASK),
    # scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s:@]+):([^/\s@]+)@"), r"\1" + MASK + "@"),
]


# Personal data, redacted in support bundles (they leave the machine): e-mail addresses, the user name in
# home-directory paths, this machine's host names and the host part of non-loopback URLs.
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_HOME = re.compile(r"(/home/|/Users/|\\Users\\|/var/home/)([^/\\\s'\"]+)")
_URL_HOST = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(\[REDACTED\]@)?([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\])")
_LOOPBACK = {"localhost", "127.0.0.1", "[::1]", "0.0.0.0", "[REDACTED]", "[HOST]"}


def _local_host_names() -> set[str]:
    import socket

    names = set()
    try:
        names.add(socket.gethostname())
        names.add(socket.getfqdn())
    except OSError:
        pass
    return {n for n in names if n and n not in _LOOPBACK and n != "localhost.localdomain"}


def redact_text(text: str, *, personal: bool = False) -> str:
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    if personal:
        text = _EMAIL.sub("[EMAIL]", text)
        text = _HOME.sub(lambda m: m.group(1) + "[USER]", text)

        def url_host(m: re.Match[str]) -> str:
            host = m.group(3)
            if host in _LOOPBACK or host.startswith("127."):
                return m.group(0)
            return m.group(1) + (m.group(2) or "") + "[HOST]"

        text = _URL_HOST.sub(url_host, text)
        for name in sorted(_local_host_names(), key=len, reverse=True):
            text = re.sub(r"(?<![A-Za-z0-9-])" + re.escape(name) + r"(?![A-Za-z0-9-])", "[HOST]", text)
    return text


def redact(obj: Any, *, personal: bool = False) -> Any:
    """Redact every string inside a JSON-like structure (dict keys are kept)."""
    if isinstance(obj, str):
        return redact_text(obj, personal=personal)
    if isinstance(obj, dict):
        return {k: redact(v, personal=personal) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v, personal=personal) for v in obj]
    return obj
