"""The deployment settings a complaint can name in prose (knowledge/data/settings.toml): per setting, vLLM's engine
argument it stands for, the value naming it sets, and the ways a complaint writes it. Pure data access; reading a
complaint is parsers/settings.py."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.symptoms import compile_pattern

SETTINGS_FILE = "settings.toml"


@dataclass(frozen=True)
class Setting:
    id: str
    arg: str | None  # vLLM's engine argument (Python name); None for a model family
    value: Any  # what naming it sets (a number the phrase captures wins when `number`)
    patterns: tuple[re.Pattern[str], ...]
    source: str
    number: bool = False

    @property
    def family(self) -> bool:
        """The phrase names a model family, not an engine argument (settings.toml `family = true`, no `arg`)."""
        return self.arg is None


@functools.cache
def settings() -> tuple[Setting, ...]:
    return tuple(Setting(id=r["id"], arg=r.get("arg"), value=r["value"],
                         patterns=tuple(compile_pattern(p) for p in r["patterns"]), source=r["source"],
                         number=bool(r.get("number", False)))
                 for r in load(SETTINGS_FILE)["setting"])


@functools.cache
def speculation_patterns() -> tuple[re.Pattern[str], ...]:
    """The words that name speculative decoding itself (settings.toml [speculation])."""
    return tuple(compile_pattern(p) for p in load(SETTINGS_FILE)["speculation"]["patterns"])
