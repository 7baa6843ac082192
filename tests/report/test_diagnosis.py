"""One coherent, honest report on every bundled input.

* one diagnosis per root cause: no two warning/error findings share a category unless the root-cause table
  (knowledge/data/rootcause.toml) makes them different causes;
* every fix command that is a vLLM command line or a flag set parses as one (parsers/cmdline.py), keeps the
  user's settings (the command's other flags; K unless the finding is about K), and no Markdown shell block
  holds a bare flag line;
* the console at 80 columns never breaks a command: its lines are ``\\``-continued and give the same words.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import re
import tomllib
from pathlib import Path

import pytest

from conftest import CASES, FIXTURES, run_cli
from evaluation import case_args
from spec_doctor.knowledge.data import load
from spec_doctor.parsers.cmdline import parse_command, tokenize
from spec_doctor.report.fix_text import fit_command, shell_words
from spec_doctor.report.merge import is_template

SCEN = FIXTURES / "vllm-cpu" / "scenarios"


def _scenario_args(d: Path) -> list[str]:
    meta = json.loads((d / "manifest.json").read_text())
    args = ["--log", str(d / "log.txt")]
    t = (meta.get("load") or {}).get("temperature")
    if t is not None:
        args += ["--temperature", str(t)]
    if (d / "cmd.txt").exists():
        args += ["--cmd-file", str(d / "cmd.txt")]
    if (d / "metrics-before.txt").exists() and (d / "metrics-after.txt").exists():
        args += ["--metrics-file", str(d / "metrics-before.txt"), "--metrics-file", str(d / "metrics-after.txt")]
    return args


def _inputs() -> list[tuple[str, list[str]]]:
    runs = [(d.name, case_args(d)[0]) for d in sorted(CASES.iterdir()) if (d / "inputs.json").exists()]
    runs += [(d.name, _scenario_args(d)) for d in sorted(SCEN.iterdir()) if (d / "manifest.json").exists()]
    runs += [(p.name, ["--log", str(p)]) for p in sorted((FIXTURES / "logs").glob("*.log*"))]
    runs += [(p.name, ["--metrics-file", str(p)]) for p in sorted((FIXTURES / "metrics").glob("*.txt"))]
    cmds = tomllib.loads((FIXTURES / "config" / "commands.toml").read_text())["cmd"]
    runs += [(f"cmd:{c['name']}", ["--cmd", c["cmd"]]) for c in cmds]
    return runs


@pytest.fixture(scope="module")
def reports() -> dict[str, tuple[list[str], dict, str]]:
    """Every bundled input's JSON report. A corpus case whose input cannot be assessed at all (exit 2 with one
    line, e.g. a training script pasted as the command) has no report; the recorded scenarios always do."""
    def one(item):
        name, args = item
        return name, args, run_cli("check", *args, "--format", "json", "--fail-on", "never", timeout=300)

    out = {}
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        for name, args, proc in pool.map(one, _inputs()):
            if proc.returncode == 2 and (CASES / name).is_dir():
                assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
                continue
            assert proc.returncode == 0, f"{name}: exit {proc.returncode}: {proc.stderr.strip()}"
            out[name] = (args, json.loads(proc.stdout), proc.stderr)
    return out


def test_one_finding_per_root_cause(reports):
    table = load("rootcause.toml")
    separate, subject = set(table["separate"]["categories"]), table["subject"]
    assert len(reports) >= 25
    for name, (_, report, _) in reports.items():
        problems = [f for f in report["findings"] if f["severity"] in ("error", "warning")
                    and f["category"] != "healthy"]
        by_cat: dict[str, list[dict]] = {}
        for f in problems:
            by_cat.setdefault(f["category"], []).append(f)
        for cat, fs in by_cat.items():
            if len(fs) < 2:
                continue
            assert cat in separate, f"{name}: {cat} found {len(fs)} times: {[f['id'] for f in fs]}"
            keys = [f.get("data", {}).get("root_cause") or subject.get(f["id"], f["id"]) for f in fs]
            assert len(set(keys)) == len(keys), f"{name}: one root cause reported twice in {cat}: {keys}"
        healthy_titles = [f["title"] for f in report["findings"] if f["category"] == "healthy"]
        assert len(healthy_titles) == len(set(healthy_titles))


def test_merged_findings_keep_every_source(reports):
    _, report, _ = reports["k-too-large"]
    k = [f for f in report["findings"] if f["category"] == "k-too-large"]
    assert len(k) == 1
    seen = set(k[0]["data"]["seen_in"])
    assert {"/metrics", "log", "config"} <= seen
    sources = " ".join(e["source"] for e in k[0]["evidence"])
    assert "metrics-after.txt" in sources and "log.txt" in sources and "--cmd" in sources
    assert len([f for f in report["findings"] if f["title"].startswith("Speculation is on")]) == 1


def _vllm_commands(command: str) -> list[str]:
    """The vLLM command lines in a fix line (the part before a pipe or a comment); [] for other programs."""
    words = [w for w in shell_words(command) if not w.startswith("#")]
    text = " ".join(words).split("|")[0].strip()
    if text.startswith("-"):
        return [text]
    toks = tokenize(text) if text else []
    while toks and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", toks[0]):
        toks = toks[1:]
    if toks[:2] == ["vllm", "serve"] or toks[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]:
        return [text]
    return []


def test_fix_commands_are_valid(reports):
    checked = 0
    for name, (args, report, _) in reports.items():
        for f in report["findings"]:
            for c in (f.get("fix") or {}).get("commands", []):
                for text in _vllm_commands(c):
                    if is_template(text):
                        continue
                    pc = parse_command(text)
                    assert not pc.positional, f"{name} {f['id']}: stray words {pc.positional} in {c!r}"
                    spec = pc.args.get("speculative_config")
                    assert spec is None or isinstance(spec, dict), f"{name} {f['id']}: bad JSON in {c!r}"
                    checked += 1
                    if "--cmd-file" in args and not text.startswith("-"):
                        user = parse_command(Path(args[args.index("--cmd-file") + 1]).read_text())
                        kept = set(user.args) - {"speculative_config", "model"} - set(pc.args)
                        legacy = {"speculative_model", "num_speculative_tokens", "speculative_max_model_len"}
                        assert kept <= legacy, f"{name} {f['id']}: the fix drops {kept}"
                        if spec and f["category"] not in load("rootcause.toml")["fix_may_change"][
                                "num_speculative_tokens"]:
                            mine = (user.args.get("speculative_config") or {}).get("num_speculative_tokens")
                            assert mine is None or spec.get("num_speculative_tokens") == mine, \
                                f"{name} {f['id']}: the fix changes K"
    assert checked >= 10


def test_markdown_shell_blocks_hold_no_bare_flags(reports):
    for name in ("vllm-issue-19254", "vllm-issue-10483"):
        args, _, _ = reports[name]
        md = run_cli("check", *args, "--format", "markdown", "--fail-on", "never").stdout
        for block in re.findall(r"```bash\n(.*?)```", md, re.S):
            for line in block.splitlines():
                assert not line.lstrip().startswith("-"), f"{name}: bare flag line in a shell block: {line}"


def test_console_at_80_columns_never_breaks_a_command(reports):
    args, report, _ = reports["k-too-large"]
    proc = run_cli("check", *args, "--fail-on", "never", env={"COLUMNS": "80"})
    out = proc.stdout
    fix = next(f for f in report["findings"] if f["category"] == "k-too-large")["fix"]["commands"][0]
    assert len(fix) > 80
    lines = fit_command(fix, 75)
    # a wider line is one flag with its value (a JSON config), never two things that could have been split
    assert all(len(ln) <= 75 or len(shell_words(ln.rstrip("\\"))) <= 2 for ln in lines), lines
    assert len(lines) > 1
    assert "\n".join("     " + ln for ln in lines) in out
    joined = " ".join(ln.rstrip("\\").strip() for ln in lines)
    assert tokenize(joined) == tokenize(fix)
    for ln in out.splitlines():
        if len(ln) > 80:  # only one unbreakable unit (a flag with its JSON value, an evidence path) may be wider
            assert len(shell_words(ln.rstrip("\\"))) <= 2 or ln.lstrip().startswith("•"), ln
