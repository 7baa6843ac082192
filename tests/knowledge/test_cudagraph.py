"""knowledge/cudagraph.py: CUDA graphs under speculation per vLLM release, from the mined backend levels
(data/cudagraph_support.json) and the code paths of data/cudagraph.toml."""

from __future__ import annotations

import json
import re

import pytest
from packaging.version import Version

from conftest import FIXTURES
from spec_doctor.knowledge import cudagraph as cg
from spec_doctor.knowledge.data import load
from spec_doctor.parsers.logparse.summary import parse_log

V = Version
SOURCE = re.compile(r"vllm/[\w/]+\.py@v\d+\.\d+\.\d+")


def test_every_row_names_its_place_in_vllm_source():
    data = load("cudagraph.toml")
    rows = data["target_rule"] + data["conditional"] + data["capture"] + data["drafter"]
    assert rows
    for row in rows:
        assert SOURCE.search(row["source"]), row
    mined = json.loads((FIXTURES.parent / "src/spec_doctor/knowledge/data/cudagraph_support.json").read_text())
    for name, backend_rows in mined["backends"].items():
        for row in backend_rows:
            assert re.fullmatch(r"vllm/[\w/]+\.py@v[\d.]+:\d+", row["source"]), (name, row)
            assert set(row["levels"]) <= set(cg.LEVELS)


def test_backend_levels_per_release_as_vllm_declares_them():
    # vllm/v1/attention/backends/flashinfer.py@v0.10.1: UNIFORM_SINGLE_TOKEN_DECODE; @v0.11.1: get_cudagraph_support
    assert cg.support("FLASHINFER", V("0.10.1")).levels == ("UNIFORM_SINGLE_TOKEN_DECODE",)
    assert cg.support("FLASHINFER", V("0.11.1")).levels == ("UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH")
    assert cg.support("FLASH_ATTN", V("0.15.0")).low == "UNIFORM_BATCH"  # FA2; FA3 reports ALWAYS
    assert cg.support("TRITON_ATTN", V("0.10.1")).levels == ("ALWAYS",)
    assert cg.support("CUTLASS_MLA", V("0.20.0")).levels == ("UNIFORM_SINGLE_TOKEN_DECODE",)
    assert cg.support("MAMBA2", V("0.16.0")).low == "UNIFORM_SINGLE_TOKEN_DECODE"
    assert cg.support("MAMBA2", V("0.17.0")).low == "UNIFORM_BATCH"
    assert cg.support("FLASHINFER", V("0.9.2")) is None  # no AttentionCGSupport before 0.10.1
    newer = cg.support("FLASHINFER", V("9.0.0"))
    assert newer is not None and newer.beyond


def test_default_mode_per_release():
    assert cg.default_mode(V("0.10.2"))[0] == "PIECEWISE"
    assert cg.default_mode(V("0.11.0"))[0] == "FULL_AND_PIECEWISE"
    assert cg.default_mode(V("0.14.0"))[0] == "FULL_AND_PIECEWISE"
    assert cg.default_mode(V("0.14.0"), 0)[0] == "NONE"
    assert cg.default_mode(V("0.14.0"), 1)[0] == "PIECEWISE"
    assert cg.default_mode(V("0.10.0")) is None  # cudagraph_mode arrived in 0.10.1
    assert cg.mode_parts("FULL_DECODE_ONLY") == ("NONE", "FULL")
    assert cg.mode_parts("FULL_AND_PIECEWISE") == ("PIECEWISE", "FULL")


def test_spec_downgrade_needs_uniform_batch_and_full_decode_graphs():
    d = cg.spec_downgrade(V("0.11.0"), "FLASHINFER", "FULL_AND_PIECEWISE", 3)
    assert d is not None and d.certain and d.to == "PIECEWISE" and "spec-decode" in d.message
    # FlashInfer reports UNIFORM_BATCH with TRT-LLM attention on compute capability 10.x
    assert cg.spec_downgrade(V("0.20.0"), "FLASHINFER", "FULL_AND_PIECEWISE", 2, "NVIDIA B200") is None
    assert cg.spec_downgrade(V("0.20.0"), "FLASHINFER", "FULL_AND_PIECEWISE", 2, "NVIDIA H100 80GB HBM3").certain
    unsure = cg.spec_downgrade(V("0.20.0"), "FLASHINFER", "FULL_AND_PIECEWISE", 2)
    assert unsure is not None and not unsure.certain and "10.x" in unsure.condition
    assert cg.spec_downgrade(V("0.20.0"), "FLASH_ATTN", "FULL_AND_PIECEWISE", 2) is None
    assert cg.spec_downgrade(V("0.20.0"), "FLASHINFER", "PIECEWISE", 2) is None  # no FULL decode graphs asked for
    assert cg.spec_downgrade(V("0.20.0"), "FLASHINFER", "FULL_AND_PIECEWISE", 0) is None
    assert cg.spec_downgrade(V("0.10.2"), "FLASHINFER", "FULL", 1).certain


def test_better_backends_keep_the_kind_of_attention():
    assert cg.better_backends(V("0.20.0"), "CUTLASS_MLA") == ["FLASHMLA", "FLASH_ATTN_MLA", "FLASHINFER_MLA"]
    assert cg.better_backends(V("0.20.0"), "FLASHINFER") == ["FLASH_ATTN", "TRITON_ATTN"]


def test_the_drafter_is_eager_under_modes_without_its_piecewise_graphs():
    # eagle.py@v0.11.1..v0.14.1: PIECEWISE only (FULL and FULL_DECODE_ONLY warn and draft eagerly)
    assert cg.drafter_eager_under("eagle3", V("0.13.0"), "FULL") is not None
    assert cg.drafter_eager_under("deepseek_mtp", V("0.13.0"), "FULL_DECODE_ONLY") is not None
    # 0.15.0+: mixed_mode() PIECEWISE or FULL keeps the drafter's piecewise graphs; FULL_DECODE_ONLY does not
    assert cg.drafter_eager_under("eagle3", V("0.16.0"), "FULL") is None
    assert cg.drafter_eager_under("draft_model", V("0.16.0"), "FULL_DECODE_ONLY") is not None
    assert cg.drafter_eager_under("eagle", V("0.16.0"), "FULL_AND_PIECEWISE") is None
    assert cg.drafter_eager_under("ngram", V("0.16.0"), "FULL_DECODE_ONLY") is None  # no drafter model
    assert cg.drafter_row("eagle", V("0.8.4")).graphs == "none"  # V1 EAGLE of 0.8.3-0.8.5 had no graph code
    assert cg.drafter_row("medusa", V("0.12.0")).graphs == "none"


def test_graphed_requests_under_the_capture_ceiling():
    n, src = cg.graphed_requests(V("0.12.0"), 3, 256)
    assert n == 128 and "@v" in src  # min(2*256, 512) tokens // (1+3)
    assert cg.graphed_requests(V("0.14.0"), 3, 16)[0] == 32  # min(2*16*4, 512) // 4
    assert cg.graphed_requests(V("0.14.0"), 3, None) is None
    assert cg.graphed_requests(V("0.8.5"), 3, 256) is None


@pytest.mark.parametrize("text,name", [
    ("FlashInfer", "FLASHINFER"), ("FLASHINFER_VLLM_V1", "FLASHINFER"), ("Flash Attention", "FLASH_ATTN"),
    ("AttentionBackendEnum.CUTLASS_MLA", "CUTLASS_MLA"), ("Triton", "TRITON_ATTN"), ("FlashMLA", "FLASHMLA"),
    ("nonsense", None), ("", None)])
def test_backend_names_as_flags_and_logs_write_them(text, name):
    assert cg.backend_name(text) == name


def test_real_log_lines_give_the_backend_and_the_downgrade():
    lf = parse_log(str(FIXTURES / "cudagraph" / "vllm-issue-55581.log"))
    assert cg.backend_name(lf.startup["attention_backend"].value) == "FLASHINFER"
    assert {"cudagraph-downgraded", "cudagraph-capture-skipped"} <= set(lf.signatures)
    lf = parse_log(str(FIXTURES / "cudagraph" / "vllm-pr-32936.log"))
    assert "cudagraph-downgraded" in lf.signatures


def test_captured_modes_are_read_from_the_progress_bars(tmp_path):
    p = tmp_path / "v.log"
    p.write_text("INFO 10-20 10:00:00 [cuda.py:288] Using FlashInfer backend on V1 engine.\n"
                 "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:03<00:00]\n"
                 "Capturing CUDA graphs (decode, FULL): 100%|##########| 35/35 [00:01<00:00, 20.1it/s]\n")
    lf = parse_log(str(p))
    assert lf.startup["cudagraph_mixed_mode"].value == "PIECEWISE"
    assert lf.startup["cudagraph_decode_mode"].value == "FULL"
    assert cg.backend_name(lf.startup["attention_backend"].value) == "FLASHINFER"
