"""The deployment settings a complaint names in prose ("MTP with dp 4 tp 2 hangs", "with prefix caching on",
"fp8 kv cache + eagle3", "on MI300X", "num_speculative_tokens=7"): each with vLLM's engine argument it stands for,
its value, and the phrase that named it (knowledge/data/settings.toml); plus the speculative method, K and the
model names the complaint states.

What the user says about their setup is a weaker fact than a command line: the fact (``symptom.settings``) keeps
the phrase so that a finding resting on it can quote it. A setting negated in its clause ("without prefix caching",
"not using TP") is not named (parsers/symptom.is_negated, the complaint classifier's negation); the negated phrases
are kept apart, never used. Two phrases giving one argument different values leave it unnamed (the text is unclear).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from spec_doctor.knowledge.settings import settings, speculation_patterns
from spec_doctor.knowledge.symptoms import method_in_text
from spec_doctor.parsers.symptom import is_negated, stated_k

# A model name as a complaint writes it: a word with its joined parts ("Qwen3-VL-8B", "deepseek_v3",
# "meta-llama/Llama-4-Scout"), and two adjacent words as one ("Qwen3 Next", "DeepSeek V3").
_WORD = re.compile(r"[A-Za-z0-9](?:[\w.\-/]*\w)?")


@dataclass(frozen=True)
class NamedSetting:
    id: str
    arg: str | None
    value: object
    phrase: str  # as written


@dataclass(frozen=True)
class NamedSettings:
    settings: tuple[NamedSetting, ...]  # one per argument (and one per family word)
    negated: tuple[str, ...]  # phrases naming a setting that the text negates
    method: str | None  # the one speculative method the text names
    k: int | None  # the one K the text states (parsers/symptom.stated_k)
    k_phrase: str | None
    models: tuple[str, ...]  # words that can name the target model, lower-case, not negated
    speculation: str | None = None  # the phrase that names speculative decoding (or its method), not negated

    def args(self) -> dict[str, object]:
        return {s.arg: s.value for s in self.settings if s.arg}

    def phrase_of(self, arg: str) -> str | None:
        return next((s.phrase for s in self.settings if s.arg == arg), None)


def _value(setting_value: object, number: bool, m: re.Match[str]) -> object:
    if number:
        got = next((g for g in m.groups() if g and g.isdigit()), None)
        if got is not None:
            return int(got)
    return setting_value


# vLLM's boolean flags written off ("--no-async-scheduling", "--no-enable-prefix-caching"): what the flag names is
# negated, and its "no" negates nothing after it.
_NO_FLAG = re.compile(r"--no-[\w-]+")


def _negation(text: str) -> Callable[[int], bool]:
    """Whether a phrase starting at a position is negated: inside a `--no-` flag (past its start), or by a negation
    word of its clause (parsers/symptom.is_negated) other than a `--no-` flag's."""
    flags = [m.span() for m in _NO_FLAG.finditer(text)]
    blanked = _NO_FLAG.sub(lambda m: " " * len(m.group(0)), text)
    return lambda start: any(a < start < b for a, b in flags) or is_negated(blanked, start)


def named_settings(text: str) -> NamedSettings:
    """The settings ``text`` names (case-insensitive, negations honoured; the first phrase per argument wins)."""
    negated_at = _negation(text)
    found: dict[str, NamedSetting] = {}
    conflicting: set[str] = set()
    negated: list[str] = []
    taken: list[tuple[int, int]] = []  # spans already read: "--no-enable-prefix-caching" is not also "prefix caching"
    for s in settings():
        for p in s.patterns:
            for m in p.finditer(text):
                if any(a < m.end() and m.start() < b for a, b in taken):
                    continue
                if negated_at(m.start()):
                    negated.append(m.group(0))
                    continue
                taken.append(m.span())
                key = s.arg or f"family:{s.id}"
                value = _value(s.value, s.number, m)
                if key in found and found[key].value != value:
                    conflicting.add(key)
                found.setdefault(key, NamedSetting(s.id, s.arg, value, m.group(0)))
    kept = tuple(v for k, v in found.items() if k not in conflicting)
    k, k_phrase = stated_k(text)
    method = method_in_text(text)
    spoken = next((m.group(0) for p in speculation_patterns() for m in p.finditer(text)
                   if not negated_at(m.start())), None)
    return NamedSettings(kept, tuple(dict.fromkeys(negated)), method, k, k_phrase, _models(text),
                         spoken or (f"method {method}" if method else None))


def _models(text: str) -> tuple[str, ...]:
    words = [m for m in _WORD.finditer(text) if not is_negated(text, m.start())]
    out = [m.group(0).lower() for m in words]
    out += [f"{a.group(0)} {b.group(0)}".lower() for a, b in zip(words, words[1:], strict=False)
            if text[a.end():b.start()] == " "]
    return tuple(dict.fromkeys(out))
