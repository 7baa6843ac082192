"""The same vLLM log as users paste it from where it was shipped -- `docker compose logs` (service prefix),
`kubectl logs --timestamps` (RFC 3339 time stamps), journald / syslog, a markdown quote, colours, CRLF, indentation,
a code fence -- is diagnosed the same as the plain log: the decoration is neither part of the server's identity
(a time stamp that changes on every line would make every line its own server) nor hides a traceback's frames
and exception line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.session import diagnose
from spec_doctor.parsers.logparse import lines as L

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ["removed-spec-key", "kv-pressure", "k-too-large", "healthy", "spec-inactive"]
_TS = re.compile(r"(\d\d)-(\d\d) (\d\d:\d\d:\d\d)")


def _kubectl(lines: list[str]) -> list[str]:
    out, ts = [], "2026-11-30T10:00:00"
    for line in lines:
        m = _TS.search(line)
        if m:
            ts = f"2026-{m.group(1)}-{m.group(2)}T{m.group(3)}"
        out.append(f"{ts}.123456789Z {line}")
    return out


def _journald(lines: list[str]) -> list[str]:
    out, clock = [], "10:00:00"
    for line in lines:
        m = _TS.search(line)
        clock = m.group(3) if m else clock
        out.append(f"Nov 30 {clock} gpu-node-7 vllm[48213]: {line}")
    return out


DECORATIONS = {
    "docker-compose": lambda ls: [f"vllm-openai-1  | {x}" for x in ls],
    "kubectl-timestamps": _kubectl,
    "journald": _journald,
    "markdown-quote": lambda ls: [f"> {x}" for x in ls],
    "ansi-colour": lambda ls: [re.sub(r"^(INFO|WARNING|ERROR)", "\x1b[32m\\1\x1b[0m", x) for x in ls],
    "indented": lambda ls: [f"    {x}" for x in ls],
    "code-fence": lambda ls: ["```text", *ls, "```"],
}


def _diagnosis(path: Path) -> tuple[str, list[tuple[str, str]]]:
    diag = diagnose(Inputs(logs=[str(path)]))
    return diag.verdict, sorted({(f.category.value, f.id) for f in diag.findings})


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_decorated_log_is_diagnosed_like_the_plain_one(scenario, tmp_path):
    plain = ROOT / "fixtures" / "vllm-cpu" / "scenarios" / scenario / "log.txt"
    lines = plain.read_text(errors="replace").splitlines()
    want = _diagnosis(plain)
    for name, decorate in DECORATIONS.items():
        path = tmp_path / f"{name}.log"
        path.write_text("\n".join(decorate(lines)) + "\n")
        assert _diagnosis(path) == want, name
    crlf = tmp_path / "crlf.log"
    crlf.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    assert _diagnosis(crlf) == want


def test_the_prefix_that_names_a_server_drops_time_stamps_and_quote_marks():
    assert L.prefix_identity("vllm-1  | ") == "vllm-1"
    assert L.prefix_identity("2026-11-30T10:00:01.123456789Z ") == ""
    assert L.prefix_identity("Nov 30 10:00:01 node-7 vllm[42]: ") == "node-7 vllm[42]"
    assert L.prefix_identity("> ") == ""
    assert L.prefix_identity("[replica-a] ") == "[replica-a]"


def test_a_decoration_matches_the_same_shape_with_other_digits_only():
    rx = L.decoration("2026-11-30T10:00:01.123Z ")
    assert rx is not None and rx.match("2026-11-30T10:07:59.981Z   File \"x.py\", line 3")
    assert not rx.match("  File \"x.py\", line 3")
    assert L.decoration("") is None and L.decoration("   ") is None
