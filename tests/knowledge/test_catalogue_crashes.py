"""Every exception vLLM raises from its speculation code, shown as a user's log shows it (a traceback whose last
vLLM frame is the raising module, the message with its holes filled), is a crash finding whose category is the
one vLLM's message catalogue gives that message: never silence, never healthy. The same text in prose is not a
crash, and an exception that has nothing to do with speculation is not called a speculation bug."""

from __future__ import annotations

import re
from functools import lru_cache

from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import diagnose
from spec_doctor.knowledge.catalogue import Template, identify, templates

# vLLM's speculation code across releases: V0 spec_decode/, V1 v1/spec_decode/ and the V2 runner's speculators,
# the speculative config, the rejection samplers and the draft model classes.
SPEC_CODE = re.compile(
    r"^vllm/(?:spec_decode/|v1/spec_decode/|v1/worker/gpu/spec_decode/|config/speculative\.py$"
    r"|v1/sample/rejection_sampler\.py$"
    r"|model_executor/layers/(?:rejection_sampler|spec_decode_base_sampler|typical_acceptance_sampler)\.py$"
    r"|model_executor/models/\w*(?:eagle|mtp|medusa|mlp_speculator|dflash)\w*\.py$)")
_EXC = re.compile(r"^[A-Z]\w*(?:Error|Exception)$")
_HOLE = re.compile(r"\{[^{}]*\}")
_FILLS = ("7", "x")  # a hole is a number or a name; one of the two renders every spec-code message


def _module(t: Template) -> str:
    return t.source.split("@", 1)[0]


def render(t: Template) -> str | None:
    """The message as vLLM prints it: the template's first line, each hole filled, braces undoubled; None when no
    filling makes a line the template's own regex accepts."""
    first = t.template.split("\n", 1)[0].rstrip("…")
    for fill in _FILLS:
        text = _HOLE.sub(fill, first.replace("{{", "\x00").replace("}}", "\x01")).replace("\x00", "{")
        text = text.replace("\x01", "}")
        if text.strip() and t.regex.search(text):
            return text
    return None


@lru_cache(maxsize=1)
def spec_exceptions() -> tuple[tuple[Template, str], ...]:
    """(entry, rendered message) for every catalogue exception raised from speculation code, identified as itself
    (a shorter message that a longer one contains is identified as the longer one and left to it)."""
    out = []
    for t in templates():
        if not _EXC.match(t.kind) or not SPEC_CODE.search(_module(t)) or t.category in ("none", "healthy"):
            continue
        text = render(t)
        if text is not None and identify(text) == t:
            out.append((t, text))
    return tuple(out)


def traceback_log(t: Template, message: str) -> str:
    """A server log that ends in this exception: vLLM's frames, the raising module last."""
    return ("INFO 08-01 10:00:00 [api_server.py:1] vLLM API server version 0.0.0\n"
            "Traceback (most recent call last):\n"
            '  File "/opt/app/serve.py", line 12, in <module>\n'
            "    main()\n"
            f'  File "/usr/local/lib/python3.12/site-packages/{_module(t)}", line 321, in raising_function\n'
            "    raise\n"
            f"{t.kind}: {message}\n")


def run(tmp_path, text: str, *draft: str):
    log = tmp_path / "vllm.log"
    log.write_text(text)
    return diagnose(Inputs(logs=[str(log)], draft=draft[0] if draft else None))


def crashes(diag) -> list:
    return [f for f in diag.findings if f.id == "logs.crash.traceback"]


def test_the_catalogue_has_speculation_exceptions_to_test():
    got = spec_exceptions()
    assert len(got) >= 150, len(got)
    cats = {t.category for t, _ in got}
    assert {"engine-bug", "config-unsupported-combo", "env-version"} <= cats, cats


def explaining(diag, log_lines: range) -> list:
    """The findings that cite the traceback's own lines, best first: the crash finding, or the hand-written log
    signature that explains the traceback (the crash check leaves a traceback a signature explains to it)."""
    def line(source: str) -> int:
        tail = source.rsplit(":", 1)[-1].split("-", 1)[0]
        return int(tail) if tail.isdigit() else -1
    return [f for f in diag.findings if any(line(e.source) in log_lines for e in f.evidence)]


def test_every_speculation_exception_is_a_finding_of_its_category(tmp_path):
    wrong, silent = [], []
    for n, (t, message) in enumerate(spec_exceptions()):
        case = tmp_path / str(n)
        case.mkdir()
        text = traceback_log(t, message)
        diag = run(case, text)
        found = explaining(diag, range(2, text.count("\n") + 1))
        if not found or diag.verdict == "healthy":
            silent.append((t.source, message))
        elif found[0].category.value != t.category:
            wrong.append((t.source, message, t.category, found[0].id, found[0].category.value))
    assert not silent, silent
    assert not wrong, wrong


def test_the_same_text_in_prose_is_not_a_crash(tmp_path):
    t, message = next((t, m) for t, m in spec_exceptions() if t.category == "engine-bug")
    prose = (f"I read the vLLM source and saw that it can raise \"{message}\" in {_module(t)}, so I wondered whether "
             "that could ever happen with my setup; it has not happened so far.\n")
    assert crashes(run(tmp_path, prose)) == []


def test_an_exception_unrelated_to_speculation_is_not_a_speculation_bug(tmp_path):
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/site-packages/vllm/entrypoints/openai/api_server.py", line 99, in '
            "run_server\n"
            "    sock.bind(addr)\n"
            "OSError: [Errno 98] Address already in use\n")
    diag = run(tmp_path, text)
    found = crashes(diag)
    assert found, "a crash is never silence"
    for f in found:
        assert not f.data.get("speculation_on")
        said = f"{f.title} {f.fix.summary if f.fix else ''}".lower()
        assert "specul" not in said and "draft" not in said, said
