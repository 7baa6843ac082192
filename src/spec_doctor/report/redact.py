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
    # user:password@host without a scheme (a server's display name, a pasted host:port)
    (re.compile(r"(?<![\w/:@.\[-])([A-Za-z0-9._%+-]+):([^\s/@'\"]+)@(?=[A-Za-z0-9.-]+(?::\d+)?(?:[/\s'\",)]|$))"),
     MASK + "@"),
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


# Keys (config keys, flags, environment variables, headers) whose value is a secret whatever it looks like:
# `--api-key abc` or `VLLM_API_KEY=changeme` carry no token shape the patterns above could recognise.
_SECRET_KEY = re.compile(r"(?i)^(?:--?)?(?:[a-z0-9]+[-_.])*(?:api[-_]?key|token|password|passwd|secret|"
                         r"authorization|credentials?|private[-_]?key|cookie)$")
# ... except the names of a tokenizer's special tokens and token counts, which are evidence, not secrets.
_NOT_SECRET = re.compile(r"(?i)^(?:--?)?(?:bos|eos|pad|unk|sep|cls|mask|start|end|special|added|chat|"
                         r"num|max|min|image|video|audio|decoder[-_]start)[-_]")


def secret_key(key: str) -> bool:
    """True for a key whose value must be masked: api_key, --hf-token, VLLM_API_KEY, Authorization, ..."""
    return bool(_SECRET_KEY.match(key)) and not _NOT_SECRET.match(key)


def _mask(value: Any) -> Any:
    return MASK if isinstance(value, (str, int, float)) and not isinstance(value, bool) and value != "" else value


def redact(obj: Any, *, personal: bool = False) -> Any:
    """Redact every string inside a JSON-like structure: by shape everywhere, and by key name (a dict key, or
    a flag followed by its value in a list of arguments) whatever the value looks like. Keys are redacted by
    shape too (a URL with credentials can be a key of a per-server table)."""
    if isinstance(obj, str):
        return redact_text(obj, personal=personal)
    if isinstance(obj, dict):
        return {(redact_text(k, personal=personal) if isinstance(k, str) else k):
                (_mask(v) if isinstance(k, str) and secret_key(k) else redact(v, personal=personal))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        out = []
        masked_next = False
        for v in obj:
            if masked_next and isinstance(v, str) and not v.startswith("--"):
                out.append(MASK)
                masked_next = False
                continue
            masked_next = isinstance(v, str) and v.startswith("-") and "=" not in v and secret_key(v)
            out.append(redact(v, personal=personal))
        return out
    return obj


def neutralise(obj: Any) -> Any:
    """Every string inside a JSON-like structure with its control characters escaped (engine.limits.clean)."""
    from spec_doctor.engine.limits import clean

    if isinstance(obj, str):
        return clean(obj)
    if isinstance(obj, dict):
        return {(clean(k) if isinstance(k, str) else k): neutralise(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [neutralise(v) for v in obj]
    return obj
