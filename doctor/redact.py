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


def redact_text(text: str) -> str:
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact(obj: Any) -> Any:
    """Redact every string inside a JSON-like structure (dict keys are kept)."""
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        return {k: redact(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    return obj
