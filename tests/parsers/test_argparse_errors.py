"""argparse refusing vLLM's command line, in the formats CPython prints (Lib/argparse.py@v3.11.7): `usage: PROG ...`
then `PROG: error: MESSAGE`, the message either argparse's own or the ArgumentTypeError text of vLLM's type
function (its catalogue), and a JSON flag's value examined for what made json.loads refuse it."""

from __future__ import annotations

import argparse
import json

import pytest

from spec_doctor.parsers.argparse_errors import error_in, json_argument, read_message, usage_in
from spec_doctor.parsers.logparse import parse_text


def _argparse_output(argv: list[str], *, prog: str = "vllm serve", type_func=json.loads) -> tuple[str, str]:
    """What CPython's argparse itself prints for argv (usage line, error line), from a parser shaped like vLLM's."""
    import contextlib
    import io

    parser = argparse.ArgumentParser(prog=prog, usage=f"{prog} [model_tag] [options]")
    parser.add_argument("model_tag", nargs="?")
    parser.add_argument("--speculative-config", "-sc", type=type_func)
    parser.add_argument("--kv-cache-dtype", choices=["auto", "fp8", "fp8_e4m3"])
    parser.add_argument("--max-num-seqs", type=int)
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--speculative-disable-by-batch-size", type=int)
    parser.add_argument("--speculative-draft-tensor-parallel-size", type=int)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_:
        parser.parse_args(argv)
    assert exit_.value.code == 2
    usage, error = err.getvalue().strip().splitlines()[-2:]
    return usage, error


def _vllm_parse_type(val: str):
    """vLLM's parse_type(json.loads) (vllm/engine/arg_utils.py@v0.33.0:160-168): ValueError -> its own text."""
    try:
        return json.loads(val)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"Value {val} cannot be converted to {json.loads}.") from e


def test_usage_and_error_lines_as_argparse_prints_them():
    usage, error = _argparse_output(["m", "--bogus-flag", "1"])
    assert usage_in(usage) == "vllm serve"
    assert error_in(error) == ("vllm serve", "unrecognized arguments: --bogus-flag 1")
    assert usage_in("usage: api_server.py [-h] [--host HOST]") == "api_server.py"
    assert usage_in("vllm-1  | usage: vllm [-h] [-v] {chat,complete,serve}") == "vllm"
    # decorations before the line (a launcher's tag, docker compose) and a quote in prose
    assert error_in("[Error] (Process) api_server.py: error: argument --x: expected one argument")[0] == "api_server.py"
    assert error_in("saw `vllm serve: error: unrecognized arguments: --foo`.") == (
        "vllm serve", "unrecognized arguments: --foo")
    # any PROG counts after its usage line, none without it
    assert error_in("launcher: error: unrecognized arguments: --foo") is None
    assert error_in("launcher: error: unrecognized arguments: --foo", "launcher")[0] == "launcher"
    assert error_in("ERROR: something failed") is None


@pytest.mark.parametrize("argv,kind,flag", [
    (["m", "--speculative-disable-by-batch-size", "4", "--nope"], "unrecognized", None),
    (["m", "--kv-cache-dtype", "fp9"], "invalid-choice", "--kv-cache-dtype"),
    (["m", "--max-num-seqs", "abc"], "invalid-value", "--max-num-seqs"),
    (["m", "--speculative-config"], "expected-argument", "--speculative-config"),
    (["m", "--speculative"], "ambiguous", "--speculative"),
    (["m", "--enforce-eager=1"], "ignored-explicit", "--enforce-eager"),
])
def test_each_argparse_message_kind(argv, kind, flag):
    _, error = _argparse_output(argv)
    reading = read_message(error_in(error)[1])
    assert reading is not None and (reading.kind, reading.flag) == (kind, flag)
    assert reading.row["source"].startswith("Lib/argparse.py@v3.11.7:")


def test_a_python_dict_for_a_json_flag():
    """argparse's own `invalid loads value` (vLLM < 0.8.5 passes json.loads as the type): the repr is undone."""
    _, error = _argparse_output(["m", "--speculative-config", str({"method": "ngram", "num_speculative_tokens": 3,
                                                                    "enabled": True})])
    r = read_message(error_in(error)[1])
    assert (r.kind, r.flag, r.type_name, r.json_flag) == ("invalid-value", "--speculative-config", "loads", True)
    assert r.value.startswith("{'method'") and r.json_problems == ["python-repr"]
    assert json.loads(r.json_fixed) == {"method": "ngram", "num_speculative_tokens": 3, "enabled": True}


@pytest.mark.parametrize("value,problems,fixed", [
    ('{{"method": "mtp", "num_speculative_tokens": 1}}', ["doubled-braces"], {"method": "mtp", "num_speculative_tokens": 1}),
    ('{"model":', ["split"], None),
    ("'{\"model\":", ["literal-quotes", "split"], None),
    ("{method:ngram,num_speculative_tokens:3}", ["quotes-lost"], {"method": "ngram", "num_speculative_tokens": 3}),
    ('{"method": "ngram",}', [], {"method": "ngram"}),  # a trailing comma: json.loads's own error is said
])
def test_vllm_s_own_text_for_a_json_flag(value, problems, fixed):
    """vLLM 0.8.5+ wraps json.loads (parse_type): `Value V cannot be converted to <function loads at 0x..>.`, the
    catalogue's text; what is wrong with V is said, and V as JSON where it can be recovered."""
    _, error = _argparse_output(["m", "-sc", value], type_func=_vllm_parse_type)
    assert "cannot be converted to <function loads at 0x" in error and "--speculative-config/-sc" in error
    r = read_message(error_in(error)[1])
    assert r.kind == "type-error" and r.flag == "--speculative-config" and r.value == value
    assert r.template is not None and r.template.template == "Value {val} cannot be converted to {return_type}."
    assert r.template.category == "config-deprecated" and r.json_problems == problems
    assert (json.loads(r.json_fixed) if r.json_fixed else None) == fixed
    if not problems:
        assert "column" in (r.json_error or "")  # Expecting property name enclosed in double quotes at column 19


def test_json_argument_is_one_shell_word():
    import shlex

    cmd = json_argument("--speculative-config", json.dumps({"model": "it's/x"}))
    assert shlex.split(cmd) == ["--speculative-config", '{"model": "it\'s/x"}']
    assert json_argument("-sc", '{"a": 1}') == "-sc '{\"a\": 1}'"


def test_a_log_of_argparse_output_only_is_read():
    usage, error = _argparse_output(["m", "-sc", '{{"method": "mtp"}}'], type_func=_vllm_parse_type)
    lf = parse_text(f"{usage}\n{error}\n", "vllm.log")
    (e,) = lf.argparse
    assert (e.prog, e.line, e.usage_line) == ("vllm serve", 2, 1)
    assert lf.crashed_before_serving == "vllm.log:2"
    # inside a real log: the platform line before it has a header; the message is kept whole
    lf = parse_text("INFO 05-12 10:11:12 [__init__.py:239] Automatically detected platform cuda.\n"
                    f"{usage}\n{error}\n", "v.log")
    assert lf.argparse[0].message.startswith("argument --speculative-config/-sc: Value {{")
