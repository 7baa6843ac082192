"""Python argparse refusing vLLM's command line: `usage: PROG ...` then `PROG: error: MESSAGE` (exit status 2).

`error_in(text)` finds the error line in a log line or a quoted complaint; `read_message(message)` says what it is:
the kind of argparse message (knowledge/data/argparse.toml, from CPython's Lib/argparse.py), the flag, the value,
vLLM's own message where the catalogue knows it (an ArgumentTypeError text such as "Value {val} cannot be
converted to {return_type}."), the flags it did not recognise, and for a JSON flag what is wrong with the value and
the value as JSON when it can be recovered. Text only: nothing is judged here.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# PROG as vLLM's parsers name themselves: `vllm serve`, `vllm bench serve`, `vllm`, `api_server.py` (or another
# script), `python -m vllm.entrypoints.openai.api_server` (Python >= 3.14). Any other PROG counts only after a
# `usage: PROG` line (`prog` argument of error_in).
_PROG = r"vllm(?: [a-z][\w-]{1,20}){0,2}|[\w.\-]{1,80}\.py|python[\d.]{0,5} -m [\w.]{1,120}"
_ERROR = re.compile(r"(?:^|(?<=[\s|>\]\)`\"']))(?P<prog>" + _PROG + r"): error: (?P<msg>\S.*?)\s*$")
_USAGE = re.compile(r"(?:^|(?<=[\s|>\]\)`]))usage: (?P<prog>[\w.\-/]{1,80}(?: (?![\[<{(-])[\w.\-/]{1,80}){0,4})"
                    r"(?: |$)")
MAX_KEPT = 20  # argparse errors kept per log (a restart loop repeats the same one)
USAGE_WINDOW = 400  # lines: a long usage text (every option of api_server.py) comes between usage: and the error


@dataclass(frozen=True)
class ArgparseError:
    """One `PROG: error: MESSAGE` line (in a log: `line`; `usage_line` the `usage:` line before it, if seen)."""

    prog: str
    message: str
    line: int = 0
    usage_line: int | None = None


def usage_in(text: str) -> str | None:
    """The PROG of a `usage: PROG [options]` line, else None."""
    if "usage: " not in text:
        return None
    m = _USAGE.search(text)
    return m.group("prog") if m else None


def error_in(text: str, prog: str | None = None) -> tuple[str, str] | None:
    """(PROG, MESSAGE) of an argparse error line in text, else None. `prog`: the PROG of a `usage:` line seen just
    before, which makes any PROG name count (`my_launcher: error: ...`)."""
    if ": error: " not in text:
        return None
    m = _ERROR.search(text)
    if m is not None:
        return m.group("prog"), _unquote_tail(m.group("msg"))
    if prog:
        at = text.find(f"{prog}: error: ")
        if at >= 0 and (at == 0 or not text[at - 1].isalnum()):
            return prog, _unquote_tail(text[at + len(prog) + 9:].strip())
    return None


def _unquote_tail(msg: str) -> str:
    """A message quoted in prose ends with the closing backtick or quote and punctuation of the sentence."""
    out = msg.rstrip()
    if out.endswith(("`", "`.", "`,", "`;")):
        out = out[:out.rfind("`")]
    return out.strip()


# -- what the message says ------------------------------------------------------------------------------------

@dataclass
class Reading:
    """What one argparse message says (see read_message)."""

    kind: str  # a row id of knowledge/data/argparse.toml ("unrecognized", "invalid-value", ...)
    row: dict[str, Any]
    flag: str | None = None  # the first long option of `argument --speculative-config/-sc`
    value: str | None = None  # the value as vLLM got it (argparse's repr undone)
    type_name: str | None = None  # the type function (`loads`, `int`, `<function loads at 0x..>`)
    words: list[str] = field(default_factory=list)  # unrecognized / required arguments
    template: Any = None  # the vLLM catalogue Template of an ArgumentTypeError text
    json_flag: bool = False
    json_problems: list[str] = field(default_factory=list)  # [json] keys of argparse.toml: what is wrong
    json_fixed: str | None = None  # the value as JSON, when it can be recovered
    json_error: str | None = None  # json.loads's own complaint, when nothing more specific is seen


@lru_cache(maxsize=1)
def _rows() -> tuple[tuple[dict[str, Any], re.Pattern[str]], ...]:
    from spec_doctor.knowledge.data import load

    return tuple((row, re.compile(row["pattern"])) for row in load("argparse.toml")["message"])


def json_notes() -> dict[str, Any]:
    from spec_doctor.knowledge.data import load

    return dict(load("argparse.toml")["json"])


def _first_long(flag: str) -> str:
    names = flag.split("/")
    return next((n for n in names if n.startswith("--")), names[0])


def _repr_value(text: str) -> str:
    """argparse prints the value with %r: undo it ("'x'" -> x); a value without repr quotes stays as it is."""
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        try:
            value = ast.literal_eval(t)
            if isinstance(value, str):
                return value
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return t


_FIELD = re.compile(r"\{([A-Za-z_][\w.()\[\]'\"]*)\}")


def template_fields(template: str, text: str) -> dict[str, str]:
    """The values a catalogue template's holes took in text: "Value {val} cannot be converted to {return_type}."
    over "Value {x} cannot be converted to <function loads>." -> {"val": "{x}", "return_type": "<function loads>"}."""
    names: list[str] = []
    pattern = ""
    pos = 0
    for m in _FIELD.finditer(template):
        pattern += re.escape(template[pos:m.start()])
        name = re.sub(r"\W", "_", m.group(1))
        pattern += f"(?P<{name}>.*?)" if name not in names else ".*?"
        names.append(name)
        pos = m.end()
    tail = template[pos:].rstrip(". ")
    pattern += re.escape(tail) + r"\.?\s*$"
    try:
        found = re.match(pattern, text.strip(), re.S)
    except re.error:
        return {}
    return {k: v for k, v in found.groupdict().items() if v is not None} if found else {}


def read_message(message: str) -> Reading | None:
    """What an argparse MESSAGE says (knowledge/data/argparse.toml), with vLLM's own text identified against the
    message catalogue and a JSON flag's value examined. None for text no row reads."""
    from spec_doctor.knowledge.specdata import json_flags

    msg = message.strip()
    for row, rx in _rows():
        m = rx.match(msg)
        if m is None:
            continue
        g = {k: v for k, v in m.groupdict().items() if v is not None}
        r = Reading(kind=row["id"], row=row, flag=_first_long(g["flag"]) if "flag" in g else None)
        if "args" in g:
            r.words = g["args"].split(", ") if row["id"] == "required" else g["args"].split()
        if "value" in g:
            r.value = _repr_value(g["value"])
        r.type_name = g.get("type")
        if row["id"] == "type-error":
            from spec_doctor.knowledge.catalogue import identify

            r.template = identify(g["detail"])
            if r.template is not None:
                fields = template_fields(r.template.template, g["detail"])
                r.value = fields.get("val", fields.get("value"))
                r.type_name = fields.get("return_type", r.type_name)
        r.json_flag = bool(r.flag in json_flags() or "loads" in (r.type_name or ""))
        if r.json_flag and r.value is not None:
            r.json_problems, r.json_fixed, r.json_error = json_value_problem(r.value)
        return r
    return None


def json_value_problem(value: str) -> tuple[list[str], str | None, str | None]:
    """(what is wrong: [json] keys of argparse.toml, the value as JSON when it can be recovered, json.loads's own
    error when nothing more specific is seen) for a value json.loads refused."""
    from spec_doctor.parsers.cmdline import salvage_mapping

    v = value.strip()
    problems: list[str] = []
    if v[:1] in "'\"" and v[1:2] in "{[":
        problems.append("literal-quotes")  # a quote character reached vLLM as part of the value
        v = v[1:-1] if len(v) >= 3 and v[-1] == v[0] else v[1:]
    try:
        json.loads(v)
        return problems, (v if problems else None), None
    except json.JSONDecodeError as exc:
        error = f"{exc.msg} at column {exc.colno}"
    if v.startswith("{{") and v.endswith("}}"):
        try:
            return [*problems, "doubled-braces"], json.dumps(json.loads(v[1:-1])), None
        except json.JSONDecodeError:
            pass
    try:
        py = ast.literal_eval(v)
        if isinstance(py, (dict, list)):
            # Python's spelling (single quotes, True/False/None), or JSON with a slip Python forgives (a trailing
            # comma): json.loads's own error says which
            python = "'" in v or bool(re.search(r"\b(?:True|False|None)\b", v))
            return ([*problems, "python-repr"] if python else problems), json.dumps(py), None if python else error
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        pass
    if not _balanced(v):
        return [*problems, "split"], None, None
    if v.startswith(("{", "[")) and '"' not in v:
        # (the shell keeps `{method:ngram,k:3}` as one word with no spaces after the colons: YAML needs them)
        salvaged = salvage_mapping(re.sub(r"\s*([:,])\s*", r"\1 ", v))
        if isinstance(salvaged, dict) and all(v is not None for v in salvaged.values()):
            return [*problems, "quotes-lost"], json.dumps(salvaged), None
    return problems, None, error


def _balanced(text: str) -> bool:
    """More closing than opening brackets is not a cut-off value; fewer is."""
    depth = 0
    quote = False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "{[":
            depth += 1
        elif not quote and ch in "}]":
            depth -= 1
    return depth <= 0 and not quote


def json_argument(flag: str, value_json: str) -> str:
    """`--speculative-config '{"method": "mtp"}'`: the flag with its JSON value as one shell word."""
    import shlex

    return f"{flag} {shlex.quote(value_json)}" if "'" in value_json else f"{flag} '{value_json}'"
