"""Facts: everything checks reason about, collected once, lazily, and shared.

A fact provider is a function ``provider(store) -> value`` decorated with ``@provides("name")``.
Provider modules are discovered through the ``spec_doctor.engine.facts`` entry-point group (the same way a
third-party plugin adds its own facts). The store calls a provider the first time a check needs the
fact and caches the value -- or the reason it could not be collected -- for every later check.

Values should carry their own source (file:line, metric name, NVML call) so that checks can cite
evidence without doing I/O.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from spec_doctor.engine.inputs import Inputs

Provider = Callable[["FactStore"], Any]

FACT_ENTRY_POINT_GROUP = "spec_doctor.facts"

# Facts no provider collects: a command presets them in the store (`FactStore(..., preset=...)`).
PRESET_FACTS = {"probe.settings": "the options of `spec-doctor probe` (max tokens, K, device, ...)"}


class FactUnavailable(Exception):
    """Raised by a provider when the fact cannot be known here (no log given, no GPU, no NVML...).

    The message is the one-line reason shown to the user when a check that needs it is skipped.
    """


class InputError(Exception):
    """Raised for bad user input (unreadable file, malformed argument). The CLI exits 2 with the message."""


@dataclass(frozen=True)
class Sourced:
    """A value together with where it came from."""

    value: Any
    source: str


def provides(name: str, *, reads: str | None = None) -> Callable[[Provider], Provider]:
    """Mark a function as the provider of fact ``name``. ``reads`` names the user input it parses (e.g.
    "--cmd / --config"): when such a provider fails unexpectedly (deep nesting, a huge number, out of memory),
    the input is at fault, not the tool, and the failure is a one-line input error rather than a skipped check."""

    def mark(fn: Provider) -> Provider:
        fn.__spec_doctor_fact__ = name  # type: ignore[attr-defined]
        fn.__spec_doctor_reads__ = reads  # type: ignore[attr-defined]
        return fn

    return mark


def providers_in(obj: Any) -> dict[str, Provider]:
    """Collect the @provides functions of a module (or any object with attributes)."""
    found: dict[str, Provider] = {}
    for attr in dir(obj):
        fn = getattr(obj, attr, None)
        name = getattr(fn, "__spec_doctor_fact__", None)
        if name and callable(fn):
            found[name] = fn
    return found


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: bool = False
    value: Any = None
    error: str | None = None
    input_error: Exception | None = None
    duration_s: float = 0.0


class FactStore:
    """Lazily collected, cached facts. Thread-safe: checks may run in parallel."""

    def __init__(self, inputs: Inputs, providers: dict[str, Provider] | None = None,
                 preset: dict[str, Any] | None = None) -> None:
        self.inputs = inputs
        self._providers: dict[str, Provider] = dict(providers or {})
        self._slots: dict[str, _Slot] = {}
        self._guard = threading.Lock()
        for name, value in (preset or {}).items():
            self.set(name, value)

    # -- registry ---------------------------------------------------------------------------
    def register(self, name: str, provider: Provider) -> None:
        self._providers[name] = provider

    def known(self) -> list[str]:
        return sorted(set(self._providers) | set(self._slots))

    def set(self, name: str, value: Any) -> None:
        """Preset a fact (tests, or a value the CLI already knows)."""
        slot = self._slot(name)
        with slot.lock:
            slot.done, slot.value, slot.error = True, value, None

    # -- access -----------------------------------------------------------------------------
    def _slot(self, name: str) -> _Slot:
        with self._guard:
            return self._slots.setdefault(name, _Slot())

    def get(self, name: str) -> Any:
        """Return the fact, collecting it on first use. Raises FactUnavailable with the reason."""
        slot = self._slot(name)
        with slot.lock:
            if not slot.done:
                provider = self._providers.get(name)
                start = time.perf_counter()
                if provider is None:
                    slot.error = f"no provider for fact '{name}'"
                else:
                    try:
                        slot.value = provider(self)
                    except FactUnavailable as exc:
                        slot.error = str(exc) or f"fact '{name}' is not available"
                    except InputError as exc:
                        slot.input_error = exc
                    except (Exception, MemoryError, RecursionError) as exc:  # must not stop other checks
                        reads = getattr(provider, "__spec_doctor_reads__", None)
                        if reads:
                            slot.input_error = InputError(f"{reads}: cannot be read ({_input_fault(exc)})")
                        else:
                            slot.error = f"collecting '{name}' failed: {type(exc).__name__}: {_one_line(exc)}"
                slot.duration_s = time.perf_counter() - start
                slot.done = True
            if slot.input_error is not None:
                raise slot.input_error
            if slot.error is not None:
                raise FactUnavailable(slot.error)
            return slot.value

    def maybe(self, name: str, default: Any = None) -> Any:
        """The fact, or ``default`` when it is unavailable."""
        try:
            return self.get(name)
        except FactUnavailable:
            return default

    def collected(self) -> dict[str, dict[str, Any]]:
        """What was collected so far (for the report's `facts` section)."""
        out: dict[str, dict[str, Any]] = {}
        for name, slot in sorted(self._slots.items()):
            if slot.done:
                reason = str(slot.input_error) if slot.input_error else slot.error
                out[name] = {"available": reason is None, "reason": reason,
                             "duration_s": round(slot.duration_s, 4)}
        return out


def _input_fault(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, MemoryError):
        return "too large to hold in memory"
    if isinstance(exc, ValueError) and "digits" in str(exc):
        return "a number with thousands of digits"
    return f"{type(exc).__name__}: {_one_line(exc)[:160]}"


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def load_providers(entry_points: Iterable[Any] | None = None) -> tuple[dict[str, Provider], list[str]]:
    """Load fact providers from the entry-point group. Returns (providers, load errors)."""
    from spec_doctor.engine.entrypoints import group_entry_points

    eps = entry_points if entry_points is not None else group_entry_points(FACT_ENTRY_POINT_GROUP)
    providers: dict[str, Provider] = {}
    errors: list[str] = []
    for ep in eps:
        try:
            obj = ep.load()
        except Exception as exc:
            errors.append(f"fact plugin '{ep.name}' failed to load: {type(exc).__name__}: {_one_line(exc)}")
            continue
        providers.update(providers_in(obj))
    return providers, errors
