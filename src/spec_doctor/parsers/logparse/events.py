"""vLLM's own warnings, errors and tracebacks, read as events.

A traceback is one event: its frames (file, line, function) and the exception that ended it, so the module that
raised (V0 or V1 spec-decode code, the speculative config, KV-cache sizing, CUDA-graph code, a model runner) can
inform the diagnosis even when no hand-written signature knows the message. Tracebacks come in three shapes:
one record per line (`logger.exception`, each line with its own header), raw stderr lines after a header line,
and a whole traceback pasted onto one line (newlines lost); all three are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FRAME = re.compile(r'File "(?P<path>[^"]{1,400})", line (?P<line>\d+), in (?P<func>[\w<>.\-]{1,120})')
# `IndexError: list index out of range`, `torch.OutOfMemoryError: CUDA out of memory`, `vllm.v1.engine.exceptions.EngineDeadError`
EXC_TYPE = r"(?:[A-Za-z_]\w*\.){0,6}[A-Z]\w*?(?:Error|Exception|Exit|Interrupt|Dead\w*|Failure|Fault|Timeout\w*)"
EXC_LINE = re.compile(rf"^(?P<type>{EXC_TYPE})(?::\s*(?P<msg>.*))?$")
EXC_INLINE = re.compile(rf"(?<![\w.])(?P<type>{EXC_TYPE}): (?P<msg>.{{0,400}})")
TB_START = "Traceback (most recent call last)"
# pydantic puts a config validator's own error on the lines under `ValidationError: 1 validation error for X`:
# `  Value error, <the message vLLM raised> [type=value_error, input_value=..., input_type=...]`.
PYDANTIC_DETAIL = re.compile(r"^(?P<kind>Value error|Assertion failed), (?P<msg>.*?)(?:\s*\[type=\w+.*)?$")
# CUDA's device-side assertion report: `file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `cond` failed.`
# (the condition may be cut off when the line is). One event per distinct condition.
DEVICE_ASSERT = re.compile(r"(?P<path>[^\s:]{1,400}):(?P<line>\d+): [^:]{0,200}: block: \[[\d,\s]+\], "
                           r"thread: \[[\d,\s]+\] Assertion `(?P<cond>[^`]{0,400})(?:` failed)?")
DEVICE_ASSERT_TYPE = "DeviceSideAssertion"
LEVELS = ("WARNING", "ERROR", "CRITICAL")
MAX_EVENTS = 400  # distinct warning/error texts kept per file
MAX_TRACEBACKS = 50
MAX_FRAMES = 80
# vLLM's top-level sub-packages (stable across releases): an elided path such as '.../model_executor/models/x.py'
# in a pasted traceback is inside vLLM when its first segment is one of them.
VLLM_PACKAGES = ("v1", "spec_decode", "engine", "entrypoints", "model_executor", "worker", "executor", "core",
                 "config", "compilation", "attention", "distributed", "platforms", "transformers_utils",
                 "multimodal", "lora", "inputs", "sequence", "sampling_params", "outputs", "forward_context")
_NUM = re.compile(r"\d+(?:\.\d+)?")
PLUGIN_PACKAGE = "vllm_ascend"  # vLLM's Ascend NPU plugin (github.com/vllm-project/vllm-ascend)


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    func: str

    @property
    def module(self) -> str:
        """The path from the package root vLLM lives in: '.../site-packages/vllm/v1/spec_decode/eagle.py' ->
        'vllm/v1/spec_decode/eagle.py'; paths outside vLLM stay as they are."""
        p = "/" + self.path.replace("\\", "/").lstrip("/")
        # A platform plugin's package (vllm-ascend installs vllm_ascend/ next to vllm/): its own module path.
        j = p.rfind(f"/{PLUGIN_PACKAGE}/")
        if j >= 0 and "site-packages/" not in p[j:] and "dist-packages/" not in p[j:]:
            return p[j + 1:]
        # The last '/vllm/' that is the package, not a venv or checkout named vllm ('envs/vllm/lib/...').
        i = p.rfind("/vllm/")
        while i >= 0:
            rest = p[i + 6:]
            head = rest.split("/", 1)[0]
            # The package itself: its sub-packages or top-level modules, not a directory named vllm that holds
            # something else (a venv, a checkout's lib/, vLLM's own ~/.cache/vllm/torch_compile_cache/).
            if "site-packages/" not in rest and "dist-packages/" not in rest and not rest.startswith(("lib/", "bin/")) \
                    and (head.removesuffix(".py") in VLLM_PACKAGES or ("/" not in rest and head.endswith(".py"))
                         or "/" in rest and head.isidentifier() and not head.endswith("_cache")):
                return p[i + 1:]
            i = p.rfind("/vllm/", 0, i)
        for elided in (".../", "…/"):
            if self.path.startswith(elided) and self.path[len(elided):].split("/", 1)[0].removesuffix(".py") \
                    in VLLM_PACKAGES:
                return "vllm/" + self.path[len(elided):]
        return self.path

    @property
    def in_vllm(self) -> bool:
        """Inside vLLM or its platform plugin (vllm_ascend/): the code a traceback's raise site is read from."""
        return self.module.startswith(("vllm/", PLUGIN_PACKAGE + "/"))

    @property
    def in_plugin(self) -> bool:
        return self.module.startswith(PLUGIN_PACKAGE + "/")


@dataclass
class Traceback:
    line: int  # where "Traceback (most recent call last)" was
    end_line: int
    frames: list[Frame] = field(default_factory=list)
    exc_type: str | None = None
    exc_msg: str | None = None
    pid: int | None = None
    one_line: bool = False  # pasted with its newlines lost

    @property
    def short_type(self) -> str:
        return (self.exc_type or "unknown exception").rsplit(".", 1)[-1]

    @property
    def raise_site(self) -> Frame | None:
        """The innermost frame inside vLLM (where vLLM code raised, or called what raised)."""
        for f in reversed(self.frames):
            if f.in_vllm:
                return f
        return self.frames[-1] if self.frames else None

    def vllm_frames(self, n: int = 3) -> list[Frame]:
        return [f for f in self.frames if f.in_vllm][-n:]

    def key(self) -> tuple[str, str, str]:
        site = self.raise_site
        return (self.short_type, site.module if site else "", site.func if site else "")


@dataclass
class LogEvent:
    """A WARNING/ERROR/CRITICAL record; identical texts (numbers aside) are counted once."""

    line: int
    level: str
    text: str
    count: int = 1
    pid: int | None = None


@dataclass
class EventReader:
    """Fed every selected record of one file in order; keeps events and tracebacks."""

    events: list[LogEvent] = field(default_factory=list)
    tracebacks: list[Traceback] = field(default_factory=list)
    dropped: int = 0
    _seen: dict[str, LogEvent] = field(default_factory=dict, repr=False, compare=False)
    _tb: Traceback | None = field(default=None, repr=False, compare=False)
    _exc_line: int = field(default=-1, repr=False, compare=False)  # the line that ended the last traceback

    def feed(self, lineno: int, level: str | None, msg: str, pid: int | None) -> None:
        text = msg.strip()
        if "Assertion `" in text and self._device_assert(lineno, text, pid):
            return
        if self._pydantic_detail(lineno, text):
            return
        tb = self._tb
        if tb is not None:
            if pid is not None and tb.pid is not None and pid != tb.pid and TB_START not in text:
                pass  # another process interleaved: the traceback goes on after it
            elif self._continue(lineno, text):
                return
        if TB_START in text:
            self._start(lineno, text, pid)
            return
        if level in (None, "ERROR", "CRITICAL") and FRAME.search(text):
            last = self.tracebacks[-1] if self.tracebacks else None
            if last is not None and not last.frames and last.exc_type and 0 < lineno - last.end_line <= 3:
                # The exception pasted first and its frames under it (a reversed or reordered paste): one event.
                self._tb = self.tracebacks.pop()
            else:
                self._tb = Traceback(line=lineno, end_line=lineno, pid=pid)  # a traceback pasted without its header
            self._continue(lineno, text)
            return
        if level in (None, "ERROR", "CRITICAL"):
            m = EXC_LINE.match(text) if lineno != self._exc_line else None
            if m:  # an exception line alone (the frames were not pasted)
                self.tracebacks.append(Traceback(line=lineno, end_line=lineno, pid=pid, exc_type=m["type"],
                                                 exc_msg=(m["msg"] or "").strip()[:500])) \
                    if len(self.tracebacks) < MAX_TRACEBACKS else None
        if level in LEVELS and text:
            self._event(lineno, level, text, pid)

    @property
    def active(self) -> bool:
        return self._tb is not None

    def close(self) -> None:
        if self._tb is not None:
            self._finish()

    # -- internals ---------------------------------------------------------------------------------
    def _pydantic_detail(self, lineno: int, text: str) -> bool:
        """The validator's message under a pydantic ValidationError joins that traceback's message (the message
        vLLM raised is there, not on the exception line)."""
        m = PYDANTIC_DETAIL.match(text) if self._tb is None and self.tracebacks else None
        last = self.tracebacks[-1] if m else None
        if last is None or not (last.exc_type or "").endswith("ValidationError") or not 0 < lineno - last.end_line <= 3:
            return False
        last.exc_msg = f"{last.exc_msg or ''}: {m['kind']}, {m['msg']}"[:500]  # type: ignore[index]
        last.end_line = lineno
        return True

    def _device_assert(self, lineno: int, text: str, pid: int | None) -> bool:
        m = DEVICE_ASSERT.search(text)
        if m is None:
            return False
        cond = m["cond"].strip()
        for tb in self.tracebacks:
            # The same assertion from thousands of GPU threads is one event (a cut-off copy included).
            if tb.exc_type == DEVICE_ASSERT_TYPE and tb.exc_msg and (tb.exc_msg.startswith(cond) or
                                                                      cond.startswith(tb.exc_msg)):
                tb.end_line = lineno
                if len(cond) > len(tb.exc_msg):
                    tb.exc_msg = cond[:500]
                return True
        if len(self.tracebacks) < MAX_TRACEBACKS:
            self.tracebacks.append(Traceback(line=lineno, end_line=lineno, pid=pid, exc_type=DEVICE_ASSERT_TYPE,
                                             exc_msg=cond[:500], frames=[Frame(m["path"], int(m["line"]), "kernel")]))
        return True


    def _event(self, lineno: int, level: str, text: str, pid: int | None) -> None:
        key = level + " " + _NUM.sub("#", text[:300])
        ev = self._seen.get(key)
        if ev is not None:
            ev.count += 1
            return
        if len(self.events) >= MAX_EVENTS:
            self.dropped += 1
            return
        ev = self._seen[key] = LogEvent(lineno, level, text[:2000], pid=pid)
        self.events.append(ev)

    def _start(self, lineno: int, text: str, pid: int | None) -> None:
        if self._tb is not None:
            self._finish()
        tb = Traceback(line=lineno, end_line=lineno, pid=pid)
        rest = text.split(TB_START, 1)[1]
        frames = list(FRAME.finditer(rest))
        if frames:  # a whole traceback on one line
            tb.one_line = True
            tb.frames = [Frame(m["path"], int(m["line"]), m["func"]) for m in frames[:MAX_FRAMES]]
            m = EXC_INLINE.search(rest, frames[-1].end())
            if m:
                tb.exc_type, tb.exc_msg = m["type"], m["msg"].strip()[:500]
            self._tb = tb
            self._finish()
            return
        self._tb = tb

    def _continue(self, lineno: int, text: str) -> bool:
        tb = self._tb
        assert tb is not None
        frames = list(FRAME.finditer(text))
        if frames:
            for m in frames:  # several frames on one line when the paste lost some newlines
                if len(tb.frames) < MAX_FRAMES:
                    tb.frames.append(Frame(m["path"], int(m["line"]), m["func"]))
            tb.end_line = lineno
            tail = EXC_INLINE.search(text, frames[-1].end())
            if tail and not text[frames[-1].end():tail.start()].strip().startswith("raise"):
                tb.exc_type, tb.exc_msg = tail["type"], tail["msg"].strip()[:500]
                self._finish()
            return True
        exc = EXC_LINE.match(text)
        if exc and tb.frames:
            tb.exc_type, tb.exc_msg = exc["type"], (exc["msg"] or "").strip()[:500]
            tb.end_line = lineno
            self._finish()
            self._exc_line = lineno
            return False  # the exception line is also an ERROR record worth keeping as an event
        if text.startswith(("^", "~")) or not text:
            return True  # caret markers under a frame
        if TB_START in text or "The above exception" in text or "During handling of the above" in text:
            self._finish()
            return False
        if tb.frames and lineno - tb.end_line > 3:
            self._finish()  # nothing traceback-like for a while: it was cut off
            return False
        return True  # source lines under a frame, or text the prefilter let through

    def _finish(self) -> None:
        tb, self._tb = self._tb, None
        if tb is None or not (tb.frames or tb.exc_type):
            return
        if len(self.tracebacks) < MAX_TRACEBACKS:
            self.tracebacks.append(tb)
