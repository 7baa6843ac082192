"""config.cudagraph's release-aware predictions (knowledge/cudagraph.py): the target's FULL decode graphs that a
named attention backend loses under speculation, and the drafter a cudagraph_mode leaves eager -- and the setups
where neither may fire."""

from __future__ import annotations

import json
from types import SimpleNamespace

from packaging.version import Version

from conftest import FIXTURES, run_cli
from spec_doctor.checks import config as checks
from spec_doctor.engine.facts import Sourced
from spec_doctor.engine.model import Category, Severity
from spec_doctor.parsers.cmdline import parse_command
from spec_doctor.parsers.confignorm import from_parsed
from spec_doctor.parsers.hardware import parse_hardware
from spec_doctor.parsers.logparse.summary import parse_log, parse_text

SPEC = "--speculative-config '{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\", " \
       "\"num_speculative_tokens\": 3}'"
TARGET = "vllm serve meta-llama/Llama-3.1-8B-Instruct"
SMALL = SimpleNamespace(param_count=8.0e9, active_param_count=None)
BIG = SimpleNamespace(param_count=235e9, active_param_count=22e9)


def run(cmd: str, version=None, *, gpu: str | None = None, log: str | None = None, target=None, platform=None):
    cfg = from_parsed(parse_command(cmd))
    v = version if not isinstance(version, str) else Sourced(Version(version), "--vllm-version")
    lf = parse_text(log, "vllm.log") if log else None
    facts = {"config.deployment": cfg, "vllm.version": v, "models.target": target, "deploy.platform": platform,
             "inputs.hardware": parse_hardware(gpu) if gpu else None, "logs.files": [lf] if lf else [],
             "logs.startup": dict(lf.startup) if lf else None}
    c = checks.cudagraph
    return {f.id: f for f in c.fn({**{w: facts.get(w) for w in c.wants}, **{n: facts[n] for n in c.needs}})}


def test_flashinfer_loses_full_decode_graphs_on_a_release_that_downgrades_it():
    found = run(f"{TARGET} --attention-backend FLASHINFER {SPEC}", "0.11.0", gpu="H100", target=SMALL)
    f = found["config.cudagraph.spec-downgrade"]
    assert f.category is Category.CUDA_GRAPH and f.severity is Severity.WARNING and f.confidence >= 0.7
    assert "4 query tokens" in f.title and "PIECEWISE" in f.title
    sources = " ".join(e.source for e in f.evidence)
    assert "flashinfer.py@v0.10.1:" in sources and "gpu_model_runner.py@v0.10.1:" in sources
    assert f.fix.commands[0].startswith("--attention-backend FLASH_ATTN")


def test_the_cost_and_the_certainty_set_the_severity():
    # a large target's decode step hides launch overhead better: information, not a warning
    big = run(f"{TARGET} --attention-backend FLASHINFER {SPEC}", "0.11.0", gpu="H100", target=BIG)
    assert big["config.cudagraph.spec-downgrade"].severity is Severity.INFO
    # FlashInfer 0.11.1+ keeps UNIFORM_BATCH with TRT-LLM attention on B200/GB200: unknown GPU -> not certain
    unsure = run(f"{TARGET} --attention-backend FLASHINFER {SPEC}", "0.20.0", target=SMALL)
    f = unsure["config.cudagraph.spec-downgrade"]
    assert f.severity is Severity.INFO and f.confidence < 0.5 and "unless" in f.title
    assert "config.cudagraph.spec-downgrade" not in run(f"{TARGET} --attention-backend FLASHINFER {SPEC}", "0.20.0",
                                                         gpu="8x B200", target=SMALL)


def test_no_prediction_without_a_downgrading_backend_release_or_graphs():
    for cmd, version in [(f"{TARGET} --attention-backend FLASH_ATTN {SPEC}", "0.20.0"),  # UNIFORM_BATCH/ALWAYS
                         (f"{TARGET} {SPEC}", "0.20.0"),  # backend not named: vLLM picks per GPU and model
                         (f"{TARGET} --attention-backend FLASHINFER {SPEC}", None),  # release unknown
                         (f"{TARGET} --attention-backend FLASHINFER {SPEC}", "0.10.2"),  # default PIECEWISE
                         (f"{TARGET} --attention-backend FLASHINFER -O1 {SPEC}", "0.14.0"),  # -O1: PIECEWISE
                         (f"{TARGET} --attention-backend FLASHINFER --enforce-eager {SPEC}", "0.14.0")]:
        found = run(cmd, version, gpu="H100", target=SMALL)
        assert "config.cudagraph.spec-downgrade" not in found, (cmd, version)
        assert "config.cudagraph.drafter-mode" not in found, (cmd, version)
    # a platform plugin's graphs follow the plugin's rules
    plugin = {"platform": "ascend", "plugin": "vllm-ascend", "cuda_graphs": False}
    assert not run(f"VLLM_ATTENTION_BACKEND=FLASHINFER {TARGET} {SPEC}", "0.14.0", platform=plugin)


def test_the_backend_comes_from_the_environment_or_the_log():
    found = run(f"VLLM_ATTENTION_BACKEND=FLASHINFER {TARGET} {SPEC}", "0.11.0", gpu="A100")
    assert found["config.cudagraph.spec-downgrade"].evidence[0].source == "VLLM_ATTENTION_BACKEND"
    log = (FIXTURES / "cudagraph" / "vllm-issue-55581.log").read_text()
    found = run(f"{TARGET} {SPEC}", "0.20.0", gpu="NVIDIA GB10", log=log)
    assert found["config.cudagraph.spec-downgrade"].evidence[0].source.startswith("vllm.log:1")


def test_a_captured_full_decode_graph_refutes_the_prediction():
    log = ("INFO 10-20 10:00:00 [cuda.py:364] Using AttentionBackendEnum.FLASHINFER backend.\n"
           "Capturing CUDA graphs (decode, FULL): 100%|##########| 35/35 [00:01<00:00, 20.1it/s]\n")
    assert "config.cudagraph.spec-downgrade" not in run(f"{TARGET} {SPEC}", "0.20.0", log=log)


def test_an_inferred_range_must_agree_at_both_ends():
    def inferred(lo, hi):
        return SimpleNamespace(value=Version(hi), low=Version(lo), high=Version(hi), inferred=True, confidence=0.8,
                               source="inferred")
    cmd = f"{TARGET} --attention-backend FLASHINFER {SPEC}"
    assert "config.cudagraph.spec-downgrade" not in run(cmd, inferred("0.10.1", "0.11.0"), gpu="H100")  # PIECEWISE..
    f = run(cmd, inferred("0.11.0", "0.11.0"), gpu="H100", target=SMALL)["config.cudagraph.spec-downgrade"]
    assert f.severity is Severity.INFO and f.confidence < 0.7


def test_a_mode_without_piecewise_graphs_leaves_the_drafter_eager():
    f = run(f"{TARGET} -cc.cudagraph_mode=FULL_DECODE_ONLY {SPEC}", "0.18.0")["config.cudagraph.drafter-mode"]
    assert f.severity is Severity.WARNING and "llm_base_proposer.py@v0.20.0" in f.evidence[-1].source
    assert f.fix.commands == ("-cc.cudagraph_mode=FULL_AND_PIECEWISE",)  # the user's own form of the setting
    f = run(f"{TARGET} --compilation-config '{{\"cudagraph_mode\": \"FULL\", \"max_cudagraph_capture_size\": 64}}' "
            f"{SPEC}", "0.13.0")["config.cudagraph.drafter-mode"]
    assert json.loads(f.fix.commands[0].split(" ", 1)[1].strip("'")) == {
        "max_cudagraph_capture_size": 64, "cudagraph_mode": "FULL_AND_PIECEWISE"}
    # 0.15.0+: FULL's mixed graphs give the drafter piecewise graphs
    assert "config.cudagraph.drafter-mode" not in run(
        f"{TARGET} --compilation-config '{{\"cudagraph_mode\": \"FULL\"}}' {SPEC}", "0.16.0")
    ngram = "--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, \"prompt_lookup_max\": 4}'"
    assert "config.cudagraph.drafter-mode" not in run(f"{TARGET} -cc.cudagraph_mode=FULL_DECODE_ONLY {ngram}", "0.18.0")


def test_command_and_log_about_the_same_graphs_are_one_diagnosis(tmp_path):
    log = FIXTURES / "cudagraph" / "vllm-pr-32936.log"
    cmd = f"{TARGET} --attention-backend FLASHINFER {SPEC}"
    proc = run_cli("check", "--cmd", cmd, "--log", str(log), "--vllm-version", "0.11.0", "--gpu", "H100",
                   "--format", "json")
    report = json.loads(proc.stdout)
    graphs = [f for f in report["findings"] if f["category"] == "cuda-graph"]
    assert len(graphs) == 1, [f["id"] for f in graphs]
    text = json.dumps(graphs[0])
    assert "logs.errors.cudagraph-downgraded" in text and "config.cudagraph.spec-downgrade" in text


def test_real_log_lines_are_each_known():
    lf = parse_log(str(FIXTURES / "cudagraph" / "vllm-issue-55581.log"))
    assert set(lf.signatures) >= {"cudagraph-downgraded", "cudagraph-capture-skipped"}


def test_releases_before_cudagraph_mode():
    eagle = "--speculative-config '{\"method\": \"eagle\", \"model\": \"yuhuili/EAGLE-LLaMA3.1-Instruct-8B\", " \
            "\"num_speculative_tokens\": 3}'"
    # V1's EAGLE proposer of 0.8.3-0.8.5 (opt-in) has no CUDA-graph code; 0.9.0 adds piecewise graphs
    f = run(f"VLLM_USE_V1=1 {TARGET} {eagle}", "0.8.5")["config.cudagraph.drafter-mode"]
    assert f.severity is Severity.WARNING and "eagle.py@v0.8.3" in f.evidence[-1].source
    assert "0.9.0" in f.fix.commands[0]
    assert "config.cudagraph.drafter-mode" not in run(f"{TARGET} {eagle}", "0.8.5")  # V0 fallback: graphs
    assert "config.cudagraph.drafter-mode" not in run(f"VLLM_USE_V1=1 {TARGET} {eagle}", "0.9.0")
    # V0: decode graphs only up to max_seq_len_to_capture tokens of context, the draft's copied from the target
    legacy = ("python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B-Instruct "
              "--speculative-model meta-llama/Llama-3.2-1B-Instruct --num-speculative-tokens 4")
    f = run(f"{legacy} --max-model-len 32768", "0.6.3")["config.cudagraph.v0-capture-length"]
    assert f.severity is Severity.INFO and "draft model" in f.title and f.fix.commands == (
        "--max-seq-len-to-capture 32768",)
    assert "config.cudagraph.v0-capture-length" not in run(f"{legacy} --max-model-len 8192", "0.6.3")
    assert "config.cudagraph.v0-capture-length" not in run(
        f"{legacy} --max-model-len 32768 --max-seq-len-to-capture 32768", "0.6.3")
    assert run(f"{legacy} --max-model-len 32768", "0.4.2")["config.cudagraph.v0-capture-length"].fix.commands == (
        "--max-context-len-to-capture 32768",)


def test_enforce_eager_names_the_drafter_only_where_there_is_a_drafter_model():
    # --enforce-eager takes the graphs from every model vLLM runs; n-gram and suffix propose by look-up, with no model
    # (knowledge/data/models.toml model_free), so only the target loses them.
    lookup = run(f"{TARGET} --enforce-eager --speculative-config '{{\"method\": \"suffix\", "
                 f"\"num_speculative_tokens\": 15}}'", "0.14.0")["config.cudagraph.enforce-eager"]
    assert lookup.severity is Severity.WARNING and "the target runs without CUDA graphs" in lookup.title
    drafter = run(f"{TARGET} --enforce-eager {SPEC}", "0.14.0")["config.cudagraph.enforce-eager"]
    assert "target and drafter" in drafter.title
