"""vLLM exiting at argument parsing is a first-class event: argparse's `PROG: error: MESSAGE` in a log or quoted in
--symptom is one error finding (config-deprecated, the taxonomy's home of argparse errors) that says which flag and
what is wrong with its value, with the value as JSON in single quotes where it can be recovered; the server never ran,
so no metrics are missed (no spec-inactive) and the verdict is never healthy."""

from __future__ import annotations

import json
import shlex

from conftest import check_log, run_cli

USAGE = "usage: vllm serve [model_tag] [options]\n"
DOUBLED = ('vllm serve: error: argument --speculative-config/-sc: Value {{"method": "mtp", "num_speculative_tokens": 1}}'
           " cannot be converted to <function loads at 0x7f3a2c1e8d60>.\n")
PY_REPR = ("api_server.py: error: argument --speculative-config: invalid loads value: \"{'method': 'ngram', "
           "'num_speculative_tokens': 3, 'enabled': True}\"\n")


def _one(report: dict, fid: str = "logs.argparse.rejected") -> dict:
    (f,) = [f for f in report["findings"] if f["id"] == fid]
    return f


def _json_of_fix(f: dict) -> dict:
    words = shlex.split(f["fix"]["commands"][0])
    assert words[0] == "--speculative-config" and len(words) == 2
    return json.loads(words[1])


def test_a_log_of_argparse_output_alone(tmp_path):
    r = check_log(tmp_path, USAGE + DOUBLED, "--draft", "mtp", "--fail-on", "never")
    f = _one(r)
    assert f["category"] == "config-deprecated" and f["severity"] == "error" and "not JSON" in f["title"]
    assert "doubled braces" in json.dumps(f["evidence"])
    assert any(e["source"].startswith("vllm/engine/arg_utils.py@") for e in f["evidence"])  # vLLM's own text
    assert any(e["source"].startswith("Lib/argparse.py@v3.11.7") for e in f["evidence"])  # argparse's
    assert _json_of_fix(f) == {"method": "mtp", "num_speculative_tokens": 1}
    assert r["verdict"] == "broken"
    cats = {g["category"] for g in r["findings"]}
    assert "spec-inactive" not in cats and "measurement" not in cats  # not "no vLLM line", not "no metrics"


def test_argparse_s_own_message_and_a_python_dict(tmp_path):
    r = check_log(tmp_path, "usage: api_server.py [-h] [--host HOST] [--port PORT]\n" + PY_REPR, "--fail-on", "never")
    f = _one(r)
    assert "Python dict" in json.dumps(f["evidence"]) and f["data"]["kind"] == "invalid-value"
    assert _json_of_fix(f) == {"method": "ngram", "num_speculative_tokens": 3, "enabled": True}


def test_an_unknown_flag_names_its_history(tmp_path):
    r = check_log(tmp_path, USAGE + "vllm serve: error: unrecognized arguments: --num-lookahead-slots 4 --spec-tokns 3\n",
                  "--fail-on", "never")
    f = _one(r)
    assert "--num-lookahead-slots" in f["title"] and f["category"] == "config-deprecated"
    text = json.dumps(f["evidence"])
    assert "removed after 0.11.2" in text  # knowledge/data/flags.toml
    assert "--spec-tokns: not a flag of any vLLM release" in text


def test_removed_speculative_flags_stay_with_their_signature(tmp_path):
    r = check_log(tmp_path, USAGE + "vllm serve: error: unrecognized arguments: --speculative-model [ngram]\n",
                  "--fail-on", "never")
    ids = [f["id"] for f in r["findings"]]
    assert "logs.errors.legacy-flags-removed" in ids and "logs.argparse.rejected" not in ids


def test_a_quoted_argparse_error_in_the_complaint():
    proc = run_cli("check", "--symptom", "the server does not start: `" + PY_REPR.strip() + "`.", "--format", "json")
    r = json.loads(proc.stdout)
    f = _one(r, "symptom.errors.quoted")
    assert f["category"] == "config-deprecated" and f["severity"] == "warning" and "not JSON" in f["title"]
    assert _json_of_fix(f)["enabled"] is True


def test_the_log_and_the_complaint_are_one_diagnosis(tmp_path):
    r = check_log(tmp_path, USAGE + DOUBLED, "--symptom", "vLLM exits: `" + DOUBLED.strip() + "`", "--fail-on", "never")
    f = _one(r)
    assert [g["category"] for g in r["findings"]].count("config-deprecated") == 1
    assert set(f["data"]["seen_in"]) >= {"log", "your complaint"}
