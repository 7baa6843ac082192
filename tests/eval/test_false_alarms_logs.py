"""False-alarm audit, second part: published speculative-decoding setups that work, given to spec-doctor as a user
would give them -- a real vLLM log excerpt (`--log`) or the real command line / YAML config (`--cmd`, `--config`),
with the release and the hardware the source names (`--vllm-version`, `--gpu`), through the CLI.

tests/eval/test_false_alarms.py covers names and flags the test composes; these are the texts themselves
(fixtures/false_alarms/*/meta.json, each with its source and what that source says shows the setup works; see
fixtures/false_alarms/README.md). Each must come out with no `warning` or `error` finding and a verdict of `healthy`
or `unknown` (info notes are fine), and spec-doctor must have read it: every input accepted, and the speculation
seen in one of them.

Where a setup truly has a problem a rule names, the rule is kept and the setup is listed in CAVEATS with the findings
it may get and the evidence; a caveat whose rule no longer fires fails, so the list stays true.

When this audit was added (28 setups), 12 raised a warning. Five are CAVEATS. Seven were false alarms, fixed in the
rules (each with its source): config.cudagraph.drafter-eager on four vllm-ascend tutorials (the plugin's own drafter
advice), config.scheduler.chunked-prefill-off on vLLM's Qwen3-Next MTP recipe (a trade-off, a warning only where a log
shows the stall), and releasebugs.symptom.match naming a Model Runner V2 bug on a V0 0.7.1 log of 6 drafted tokens
(rows floored at the release that reads their env variable; acceptance judged only over min_drafted_tokens).

A second audit added 27 setups (vllm-ascend tutorials and its speculative-decoding guide, vLLM's recipes and MTP docs:
DeepSeek R1/V3.2/V4, GLM-5/5.2/OCR, Hy3, Kimi K2.5/K2.6, MiniMax M2.7, Qwen3.5/3.8, Step-3.7, Gemma 4, MiMo,
gpt-oss; MTP, EAGLE/EAGLE-3, DFlash, DSpark, suffix, per-batch K). Before its fixes 5 of them raised a warning; two are
CAVEATS (--enforce-eager), three were false alarms, fixed in the rules: config.cudagraph.drafter-mode on the guide's
DeepSeek-V3.2-Exp MTP example ('--quantization ascend' is the plugin's own method: the platform, platforms.toml),
config.spec-keys.implicit-method on the Gemma 4 recipe's assistant with no "method" (vLLM 0.21.0+ runs a
gemma4_assistant checkpoint as mtp from its config.json, methods.toml [[inference.checkpoint_types]]), and
observed.bench.few-prompts on the GLM-5 recipe's own result block (no complaint and no figures of the user's: a note).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation import inputs_args, run_report

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "false_alarms"
ALARM = ("warning", "error")
CLAIMS_NO_PROBLEM = ("healthy", "unknown")

# name -> (the finding ids it may get, why: the evidence that the setup has that problem)
CAVEATS: dict[str, tuple[frozenset[str], str]] = {
    # vLLM's own docs of these releases say it (docs/source/models/spec_decode.rst@v0.5.5:7-9,
    # docs/source/features/spec_decode.md@v0.7.3:6-8 and @v0.8.5:6-8): "speculative decoding in vLLM is not yet
    # optimized and does not usually yield inter-token latency reductions"; the same caveat as test_false_alarms'
    # V0_DOCS rows.
    "v0-docs-draft-opt-0.5.5": (frozenset({"config.method.v0-engine", "speedup.method-cost.likely"}),
                                "V0 draft-model path, which its docs say does not usually pay"),
    "v0-docs-draft-opt-0.7.3": (frozenset({"config.method.v0-engine", "speedup.method-cost.likely"}),
                                "V0 draft-model path, which its docs say does not usually pay"),
    "v0-docs-draft-opt-0.8.5": (frozenset({"config.method.v0-fallback", "config.method.v0-engine",
                                           "speedup.method-cost.likely"}),
                                "0.8.5 serves a draft model on the V0 engine (same docs warning)"),
    # --enforce-eager turns the target's graphs off as well as the drafter's ("Whether to always use eager-mode
    # PyTorch. If True, we will disable CUDA graph", vllm/engine/arg_utils.py / vllm/config.py enforce_eager; on
    # Ascend the same flag turns the ACL graphs off, knowledge/data/platforms.toml [ascend] graphs): both PRs ran
    # it to test a feature, not for speed.
    "v1-ngram-dp8-qwen3-0.6b": (frozenset({"config.cudagraph.enforce-eager"}),
                                "the PR's test server runs --enforce-eager"),
    "ascend-pr-qwen3-vl-8b-eagle3": (frozenset({"config.cudagraph.enforce-eager"}),
                                     "the PR's test server runs --enforce-eager"),
    # vllm-ascend's speculative-decoding guide runs its EAGLE example with --enforce-eager (ACL graphs off for the
    # target and the drafter, as above): an example of the feature, not of its speed.
    "ascend-guide-llama31-eagle-tp4-eager": (frozenset({"config.cudagraph.enforce-eager"}),
                                             "the guide's EAGLE example runs --enforce-eager"),
    "ascend-guide-llama31-suffix15-eager": (frozenset({"config.cudagraph.enforce-eager"}),
                                            "the guide's Suffix Decoding example runs --enforce-eager"),
}


def setups() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if (p / "meta.json").is_file())


def meta_of(case: Path) -> dict:
    return json.loads((case / "meta.json").read_text())


def cli_args(case: Path, meta: dict) -> list[str]:
    """What a user types: the fixture's inputs, and its YAML config as --config."""
    return inputs_args(case, meta) + (["--config", str(case / meta["config"])] if meta.get("config") else [])


def test_fixtures_are_sourced_and_whole():
    cases = setups()
    assert len(cases) >= 25
    assert sum(1 for c in cases if meta_of(c)["logs"]) >= 3
    for case in cases:
        meta = meta_of(case)
        assert meta["id"] == case.name
        assert meta["source"].startswith("https://"), case.name
        assert meta["works"], case.name
        assert meta.get("cmd") or meta["logs"], case.name
        for name in [*meta["logs"], *([meta["config"]] if meta.get("config") else [])]:
            assert (case / name).read_text().strip(), (case.name, name)
    assert set(CAVEATS) <= {c.name for c in cases}


@pytest.mark.parametrize("case", setups(), ids=lambda p: p.name)
def test_published_working_setup_raises_no_alarm(case: Path):
    meta = meta_of(case)
    report, _, stderr = run_report(cli_args(case, meta))
    assert "Traceback" not in stderr, stderr
    # spec-doctor read what it was given (a GPU its roofline table lacks, "8 GPUs" or an MI355X, is a partial read of
    # --gpu, not a failure), and saw the speculation in it
    inputs = report["assessment"]["inputs"]
    assert all(i["ok"] for i in inputs if i["kind"] != "hardware"), [i for i in inputs if not i["ok"]]
    if meta.get("speculation_shown", True):
        assert any(i["speculation"] for i in inputs), inputs
    alarms = {f["id"]: f["title"] for f in report["findings"] if f["severity"] in ALARM}
    allowed, why = CAVEATS.get(case.name, (frozenset(), ""))
    assert set(alarms) <= allowed, (meta["source"], {k: v for k, v in alarms.items() if k not in allowed})
    if case.name in CAVEATS:
        assert alarms, (why, "the rule no longer fires: drop the caveat")
        assert not [f for f in report["findings"] if f["severity"] == "error"], why
    else:
        assert report["verdict"] in CLAIMS_NO_PROBLEM, (meta["source"], report["verdict"])
