"""False-alarm audit: setups that vLLM's docs and recipes (or the drafters' authors) publish as working must come out
without a `warning` or `error` finding and with a verdict that claims no problem (`healthy` or `unknown`).

Models are known by name only (an empty Hugging Face cache: the offline model-card table
knowledge/data/model_cards.toml stands in for config.json), the GPU is the one the recipe names, seen by NVML as
spec-doctor on that GPU host would see it (the H200 snapshot of fixtures/nvml with the GPU's name and memory), and
every vLLM release that knowledge/data/methods.toml lists as "supported" for the method (the release list of
knowledge/data/release_bugs.toml [releases.dates]) is tried, with K in the documented range and common serving flags
rotated over the releases. Info notes and caveats are allowed.

Where a documented setup does have a problem that a rule names, the rule is kept and the setup is listed in
CAVEATS with the finding it may get and the source that shows the problem.

Sources of the setups (each row cites its own):
  DOCS_DRAFT   https://docs.vllm.ai/en/latest/features/speculative_decoding/draft_model/ (Qwen3-8B + Qwen3-0.6B, K=5)
  DOCS_EAGLE   https://docs.vllm.ai/en/latest/features/speculative_decoding/eagle/ (Meta-Llama-3-8B-Instruct + yuhuili/
               EAGLE-LLaMA3-Instruct-8B K=2 TP4 draft TP1; EAGLE-3 with RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3)
  DOCS_MTP     https://docs.vllm.ai/en/v0.19.1/features/speculative_decoding/mtp/ (XiaomiMiMo/MiMo-7B-Base, method mtp,
               K=1: "a small value like 1 is a good default")
  DOCS_NGRAM   vllm-project/vllm docs/features/speculative_decoding/n_gram.md (ngram K=5, prompt_lookup_max 4)
  DOCS_SUFFIX  vllm-project/vllm docs/features/speculative_decoding/suffix.md (K is the maximum: "16 or 32 (default)")
  SPECULATORS  https://docs.vllm.ai/projects/speculators/en/stable/user_guide/tutorials/serve_vllm/ (Qwen3-8B +
               RedHatAI/Qwen3-8B-speculator.eagle3, K=3)
  RECIPE_DSV3  https://docs.vllm.ai/projects/recipes/en/latest/DeepSeek/DeepSeek-V3.html (8xH200, TP8 / DP8+EP) with the
               MTP method of DOCS_MTP (DeepSeek-V3 ships one MTP layer: num_nextn_predict_layers 1)
  RECIPE_QNEXT https://docs.vllm.ai/projects/recipes/en/latest/Qwen/Qwen3-Next.html (4x H200/A100, MTP)
  V0_DOCS      https://docs.vllm.ai/en/v0.6.4/_sources/models/spec_decode.rst (--speculative-model, K=5, and its warning:
               "not yet optimized and does not usually yield inter-token latency reductions")
  model cards  the heads' own cards (yuhuili EAGLE/EAGLE-3, lmsys EAGLE3-gpt-oss-120b-bf16, nvidia *-Eagle3,
               AngelSlim/Qwen3-8B_eagle3), each naming the target it was trained for (model_cards.toml rows)
  RECIPES      2026 setups of vLLM's recipes, https://recipes.vllm.ai/ , each from its structured file
               https://github.com/vllm-project/recipes/blob/main/models/<org>/<model>.yaml (read at commit 8959cf6,
               2026-08-21; the row names the file): the file's `hardware` list says which GPUs ran it ("verified") and
               `min_vllm_version` the first release it was validated on
  RECIPE_GEMMA4 https://github.com/vllm-project/recipes/blob/main/Google/Gemma4.md "Speculative Decoding (MTP)":
               the assistant checkpoints with their recommended K and TP (31B: K 4-8, TP2; 26B-A4B: K 4, TP2)
  RECIPE_GPTOSS https://github.com/vllm-project/recipes/blob/main/OpenAI/GPT-OSS_EAGLE3_Hopper.yaml
               (nvidia/gpt-oss-120b-Eagle3-v3, K=7, draft TP1)
  DFLASH       https://github.com/z-lab/dflash/blob/main/README.md "Supported Models" / "Run DFlash with vLLM"
               (z-lab/<target>-DFlash drafters, method dflash, K 15; e.g. https://huggingface.co/z-lab/Qwen3.5-27B-DFlash)
  Left out: RECIPES models/deepseek-ai/DeepSeek-V3.2.yaml also marks h100 verified ("Minimum 8x H100/H200 80GB"), but
               its own prerequisites give ~1.3 TB of BF16 weights and the released FP8 checkpoint (685B parameters,
               https://huggingface.co/deepseek-ai/DeepSeek-V3.2) alone is ~80 GiB per GPU at TP8: memory.budget.no-kv
               rightly finds no room for the KV cache on one 8x H100 node, so the setup is tried on H200 only
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from spec_doctor.engine.inputs import Inputs, Observed
from spec_doctor.engine.session import build_store, diagnose
from spec_doctor.knowledge.data import load
from spec_doctor.knowledge.specdata import method_support

ROOT = Path(__file__).resolve().parents[2]
ALARM = ("warning", "error")

# Non-CUDA platforms, named as a user names them (`check --gpu TEXT`, parsers/hardware.py): no NVML there.
PLATFORM_GPUS = {"MI300X": "8x AMD Instinct MI300X (gfx942), ROCm", "MI355X": "8x AMD Instinct MI355X, ROCm"}
# NVML totals of the GPUs the recipes name (nvmlDeviceGetMemoryInfo: H100 SXM 81559 MiB, A100-SXM4-80GB 81920 MiB,
# H200 as recorded in fixtures/nvml/h200-snapshot.json).
GPUS = {"H100": ("NVIDIA H100 80GB HBM3", 85_520_809_984), "A100": ("NVIDIA A100-SXM4-80GB", 85_899_345_920),
        "H200": ("NVIDIA H200", 150_754_820_096)}
# Serving flags users add to these setups (all valid for every release here); rotated over the releases.
FLAGS = ["", "--max-model-len 8192 --gpu-memory-utilization 0.9",
         "--max-model-len 32768 --max-num-seqs 128 --enable-prefix-caching", "--kv-cache-dtype fp8 --max-model-len 16384",
         "--max-num-seqs 512 --max-num-batched-tokens 8192"]


@dataclass(frozen=True)
class Setup:
    id: str
    target: str
    spec: dict[str, Any]  # the speculative config without num_speculative_tokens
    ks: tuple[int, ...]  # documented K
    gpus: tuple[str, ...]
    source: str
    tp: int = 1
    dp: int = 1  # data-parallel ranks (GPUs = tp x dp)
    # the first release that runs this model with this method; 0.9.0: the V1 engine's --speculative-config form (the
    # V0 engine's --speculative-model form is in CAVEATS)
    since: str = "0.9.0"
    before: str = "9999"  # the method name's last release (renamed afterwards)
    extra: str = ""


# First releases that run these EAGLE-3 targets at all (knowledge/data/model_support.json, mined from vLLM's source):
# the speculative config's allow-list is Llama-only through 0.10.0 (vllm/config.py@v0.10.0 "Eagle3 is only supported
# for Llama models") and takes "qwen" from 0.10.1 (vllm/config/__init__.py@v0.10.1); Qwen3MoeForCausalLM and
# Llama4ForConditionalGeneration implement SupportsEagle3 -- which the V1 model runner requires from 0.10.1 ("Model
# does not support EAGLE3 interface") -- from 0.11.1 (vllm/model_executor/models/qwen3_moe.py, mllama4.py@v0.11.1).
QWEN_EAGLE3 = "0.10.1"
EAGLE3_CLASS_QWEN3_MOE_LLAMA4 = "0.11.1"

SETUPS = [
    # separate draft models (V1 from 0.15.0)
    Setup("llama3.1-70b+llama3.2-1b", "meta-llama/Llama-3.1-70B-Instruct",
          {"model": "meta-llama/Llama-3.2-1B-Instruct", "method": "draft_model"}, (2, 3, 5), ("H100", "A100", "H200"),
          "DOCS_DRAFT (the same family's smallest model as draft)", tp=4),
    Setup("llama3.1-70b+llama3.1-8b", "meta-llama/Llama-3.1-70B-Instruct",
          {"model": "meta-llama/Llama-3.1-8B-Instruct", "method": "draft_model"}, (3, 5), ("H100", "H200"),
          "DOCS_DRAFT", tp=4),
    Setup("llama3.3-70b+llama3.2-1b", "meta-llama/Llama-3.3-70B-Instruct",
          {"model": "meta-llama/Llama-3.2-1B-Instruct", "method": "draft_model"}, (4,), ("H100",), "DOCS_DRAFT", tp=4),
    Setup("qwen3-8b+qwen3-0.6b", "Qwen/Qwen3-8B", {"model": "Qwen/Qwen3-0.6B", "method": "draft_model"}, (5,),
          ("H100", "A100"), "DOCS_DRAFT (verbatim)"),
    Setup("qwen3-32b+qwen3-0.6b", "Qwen/Qwen3-32B", {"model": "Qwen/Qwen3-0.6B", "method": "draft_model"}, (3, 5),
          ("H100",), "DOCS_DRAFT", tp=2),
    Setup("qwen2.5-72b+qwen2.5-7b", "Qwen/Qwen2.5-72B-Instruct",
          {"model": "Qwen/Qwen2.5-7B-Instruct", "method": "draft_model"}, (3,), ("H100",),
          "DOCS_DRAFT (both 152064-token embeddings)", tp=4),
    # EAGLE / EAGLE-3 heads on the target they were trained for
    Setup("docs-llama3-8b+eagle-tp4", "meta-llama/Meta-Llama-3-8B-Instruct",
          {"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "method": "eagle", "draft_tensor_parallel_size": 1}, (2,),
          ("H100",), "DOCS_EAGLE (verbatim)", tp=4),
    Setup("llama3.1-8b+eagle", "meta-llama/Llama-3.1-8B-Instruct",
          {"model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "method": "eagle"}, (1, 3, 5), ("H100", "A100"), "DOCS_EAGLE"),
    Setup("llama3.1-8b+eagle3", "meta-llama/Llama-3.1-8B-Instruct",
          {"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "method": "eagle3"}, (2, 3, 5), ("H100", "A100", "H200"),
          "DOCS_EAGLE; yuhuili/EAGLE3-LLaMA3.1-Instruct-8B model card"),
    Setup("llama3.1-8b-fp8+eagle3", "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8",
          {"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "method": "eagle3"}, (3,), ("H100",),
          "SPECULATORS (a quantized target with its head)"),
    Setup("llama3.1-8b+rh-speculator", "meta-llama/Llama-3.1-8B-Instruct",
          {"model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3", "method": "eagle3"}, (2, 3), ("H100",),
          "DOCS_EAGLE (the EAGLE-3 example's head)", tp=2, since="0.11.0", extra="--max-model-len 8192"),
    Setup("llama3.3-70b+eagle3", "meta-llama/Llama-3.3-70B-Instruct",
          {"model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B", "method": "eagle3"}, (3, 5), ("H100", "H200"),
          "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B model card", tp=4),
    Setup("llama3.3-70b+rh-speculator", "meta-llama/Llama-3.3-70B-Instruct",
          {"model": "RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3", "method": "eagle3"}, (3,), ("H100",),
          "SPECULATORS", tp=4, since="0.11.0"),
    Setup("qwen3-8b+rh-speculator", "Qwen/Qwen3-8B",
          {"model": "RedHatAI/Qwen3-8B-speculator.eagle3", "method": "eagle3"}, (3, 5), ("H100", "A100"),
          "SPECULATORS (verbatim)", since=QWEN_EAGLE3),
    Setup("qwen3-8b-fp8+angelslim", "Qwen/Qwen3-8B-FP8", {"model": "AngelSlim/Qwen3-8B_eagle3", "method": "eagle3"},
          (3,), ("H100",), "AngelSlim/Qwen3-8B_eagle3 model card; SPECULATORS (quantized target)", since=QWEN_EAGLE3),
    Setup("qwen3-235b+nvidia-eagle3", "Qwen/Qwen3-235B-A22B",
          {"model": "nvidia/Qwen3-235B-A22B-Eagle3", "method": "eagle3"}, (3,), ("H200", "H100"),
          "nvidia/Qwen3-235B-A22B-Eagle3 model card", tp=8, since=EAGLE3_CLASS_QWEN3_MOE_LLAMA4),
    Setup("gpt-oss-120b+eagle3", "openai/gpt-oss-120b",
          {"model": "lmsys/EAGLE3-gpt-oss-120b-bf16", "method": "eagle3"}, (1, 3, 5), ("H100", "H200"),
          "lmsys/EAGLE3-gpt-oss-120b-bf16 model card (gpt-oss-120b fits one 80 GB GPU in its native MXFP4)",
          since="0.11.0"),
    Setup("gpt-oss-120b-tp2+eagle3", "openai/gpt-oss-120b",
          {"model": "lmsys/EAGLE3-gpt-oss-120b-bf16", "method": "eagle3"}, (3,), ("H100",),
          "lmsys/EAGLE3-gpt-oss-120b-bf16 model card", tp=2, since="0.11.0"),
    Setup("llama4-maverick-fp8+eagle3", "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",
          {"model": "nvidia/Llama-4-Maverick-17B-128E-Eagle3", "method": "eagle3"}, (3,), ("H200",),
          "nvidia/Llama-4-Maverick-17B-128E-Eagle3 model card", tp=8, since=EAGLE3_CLASS_QWEN3_MOE_LLAMA4),
    Setup("vicuna-7b+eagle", "lmsys/vicuna-7b-v1.3", {"model": "yuhuili/EAGLE-Vicuna-7B-v1.3", "method": "eagle"}, (3,),
          ("A100",), "yuhuili/EAGLE-Vicuna-7B-v1.3 model card (the EAGLE paper's pair)"),
    # the model's own MTP layers
    Setup("deepseek-v3+mtp", "deepseek-ai/DeepSeek-V3", {"method": "mtp"}, (1, 2, 3), ("H200",), "RECIPE_DSV3",
          tp=8, extra="--trust-remote-code"),
    Setup("deepseek-r1-0528+mtp-ep", "deepseek-ai/DeepSeek-R1-0528", {"method": "mtp"}, (1, 2), ("H200",),
          "RECIPE_DSV3 (TP8+EP)", tp=8, extra="--enable-expert-parallel"),
    Setup("deepseek-r1-0528+mtp-dp8ep", "deepseek-ai/DeepSeek-R1-0528", {"method": "mtp"}, (1, 2), ("H200",),
          "RECIPE_DSV3 (DP8+EP)", dp=8, extra="--enable-expert-parallel --trust-remote-code"),
    Setup("deepseek-v3+deepseek_mtp", "deepseek-ai/DeepSeek-V3", {"method": "deepseek_mtp"}, (1,), ("H200",),
          "RECIPE_DSV3 with the method's name before 0.11.0", tp=8, before="0.11.0"),
    Setup("mimo-7b+mtp", "XiaomiMiMo/MiMo-7B-Base", {"method": "mtp"}, (1,), ("H100",), "DOCS_MTP (verbatim)"),
    Setup("glm-4.5-air+mtp", "zai-org/GLM-4.5-Air", {"method": "mtp"}, (1,), ("H200", "H100"),
          "DOCS_MTP (GLM-4.5 ships num_nextn_predict_layers 1)", tp=4),
    Setup("glm-4.5-fp8+mtp", "zai-org/GLM-4.5-FP8", {"method": "mtp"}, (1,), ("H200",), "DOCS_MTP", tp=8),
    # look-up drafters
    Setup("qwen2.5-7b+ngram", "Qwen/Qwen2.5-7B-Instruct",
          {"method": "ngram", "prompt_lookup_max": 4, "prompt_lookup_min": 2}, (3, 5), ("H100", "A100"), "DOCS_NGRAM"),
    Setup("qwen2.5-7b+ngram_gpu", "Qwen/Qwen2.5-7B-Instruct",
          {"method": "ngram_gpu", "prompt_lookup_max": 4, "prompt_lookup_min": 2}, (3,), ("H200",), "DOCS_NGRAM"),
    Setup("qwen3-8b+suffix", "Qwen/Qwen3-8B", {"method": "suffix"}, (16, 32), ("H100",), "DOCS_SUFFIX (verbatim)"),
    Setup("qwen2.5-7b+suffix", "Qwen/Qwen2.5-7B-Instruct", {"method": "suffix"}, (32,), ("H100",), "DOCS_SUFFIX"),
    # 2026 setups: hybrid (GatedDeltaNet / Mamba) targets with their MTP layers, MoE targets with MTP, DSpark, DFlash,
    # Gemma 4's assistants, EAGLE-3 heads of the large MoE models (RECIPES unless said)
    Setup("qwen3-next+mtp", "Qwen/Qwen3-Next-80B-A3B-Instruct", {"method": "mtp"}, (1, 2), ("H200", "A100"),
          "RECIPE_QNEXT (its MTP-cost caveat, vllm-project/vllm#35387, is now a note: overhead.toml's hybrid row "
          "alone does not make the cost sure)", tp=4, since="0.11.0"),
    Setup("qwen3.5-397b-fp8+mtp", "Qwen/Qwen3.5-397B-A17B-FP8", {"method": "mtp"}, (1, 3), ("H200",),
          "RECIPES models/Qwen/Qwen3.5-397B-A17B.yaml (8x H200, MTP-1 latency serving; MTP-3 feature)", tp=8,
          since="0.17.0"),
    Setup("qwen3.5-35b-a3b+mtp", "Qwen/Qwen3.5-35B-A3B", {"method": "mtp"}, (1,), ("H200",),
          "RECIPES models/Qwen/Qwen3.5-35B-A3B.yaml", since="0.17.0"),
    Setup("qwen3.6-27b-fp8+mtp", "Qwen/Qwen3.6-27B-FP8", {"method": "mtp"}, (1, 3), ("H100", "H200"),
          "RECIPES models/Qwen/Qwen3.6-27B.yaml (FP8 on one 40 GB+ GPU)", since="0.17.0",
          extra="--reasoning-parser qwen3"),
    Setup("qwen3.6-35b-a3b+mtp-tp2", "Qwen/Qwen3.6-35B-A3B", {"method": "mtp"}, (2,), ("H100", "H200"),
          "RECIPES models/Qwen/Qwen3.6-35B-A3B.yaml (verbatim, h100/h200 verified)", tp=2, since="0.17.0",
          extra="--max-model-len 262144"),
    Setup("deepseek-v3.2+mtp", "deepseek-ai/DeepSeek-V3.2", {"method": "mtp"}, (3,), ("H200",),
          "RECIPES models/deepseek-ai/DeepSeek-V3.2.yaml (TP8, MTP 3 tokens)", tp=8, since="0.18.0"),
    Setup("deepseek-v4-flash+mtp", "deepseek-ai/DeepSeek-V4-Flash", {"method": "mtp"}, (1, 2), ("H200",),
          "RECIPES models/deepseek-ai/DeepSeek-V4-Flash.yaml (mode mtp)", tp=8, since="0.20.0",
          extra="--trust-remote-code --enable-expert-parallel --block-size 256"),
    Setup("deepseek-v4-flash-0731+dspark", "deepseek-ai/DeepSeek-V4-Flash-0731",
          {"method": "dspark", "draft_sample_method": "probabilistic"}, (7,), ("H200",),
          "RECIPES models/deepseek-ai/DeepSeek-V4-Flash.yaml (verbatim: the fused 0731 checkpoint, TP8+EP)", tp=8,
          since="0.25.0", extra="--trust-remote-code --kv-cache-dtype fp8 --block-size 256 --enable-expert-parallel"),
    Setup("glm-4.6-fp8+mtp", "zai-org/GLM-4.6-FP8", {"method": "mtp"}, (1,), ("H200",),
          "RECIPES models/zai-org/GLM-4.6.yaml (verbatim: TP4, K=1)", tp=4, since="0.11.0"),
    Setup("glm-5-fp8+mtp", "zai-org/GLM-5-FP8", {"method": "mtp"}, (3,), ("H200",),
          "RECIPES models/zai-org/GLM-5.yaml (verbatim: FP8 on 8x H200, K=3)", tp=8, since="0.16.0"),
    Setup("gemma-4-31b+assistant", "google/gemma-4-31B-it",
          {"model": "google/gemma-4-31B-it-assistant", "method": "mtp"}, (4, 8), ("H100",),
          "RECIPE_GEMMA4 (verbatim; before 0.23.0 the known bugs gemma4-mtp-ima-tp and "
          "gemma4-mtp-block-table-concurrency of release_bugs.toml, fixed in 0.23.0, rightly fire)", tp=2,
          since="0.23.0",
          extra="--max-model-len 8192"),
    Setup("gemma-4-26b-a4b+assistant", "google/gemma-4-26B-A4B-it",
          {"model": "google/gemma-4-26B-A4B-it-assistant", "method": "mtp"}, (4,), ("H200", "H100"),
          "RECIPE_GEMMA4; models/Google/gemma-4-26B-A4B-it.yaml", tp=2, since="0.23.0"),
    Setup("gpt-oss-120b+nvidia-eagle3-v3", "openai/gpt-oss-120b",
          {"model": "nvidia/gpt-oss-120b-Eagle3-v3", "method": "eagle3", "draft_tensor_parallel_size": 1}, (7,),
          ("H200", "H100"), "RECIPE_GPTOSS (verbatim)", since="0.11.0",
          extra="--no-enable-prefix-caching --max-num-batched-tokens 8192"),
    Setup("kimi-k2.6+eagle3", "moonshotai/Kimi-K2.6",
          {"model": "lightseekorg/kimi-k2.6-eagle3-mla", "method": "eagle3"}, (3, 4), ("H200",),
          "RECIPES models/moonshotai/Kimi-K2.6.yaml (8x H200 verified)", tp=8, since="0.25.0",
          extra="--trust-remote-code"),
    Setup("minimax-m3+eagle3", "MiniMaxAI/MiniMax-M3",
          {"model": "Inferact/MiniMax-M3-EAGLE3", "method": "eagle3", "attention_backend": "FLASH_ATTN"}, (3,),
          ("H200",), "RECIPES models/MiniMaxAI/MiniMax-M3.yaml (h200 verified, TP8)", tp=8, since="0.24.0",
          extra="--trust-remote-code"),
    Setup("nemotron-3-super+mtp", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", {"method": "mtp"}, (3,),
          ("H100", "H200"), "RECIPES models/nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16.yaml (FP8, TP4)", tp=4,
          since="0.17.1"),
    Setup("qwen3-vl-235b-fp8+eagle3-rocm", "Qwen/Qwen3-VL-235B-A22B-Instruct-FP8",
          {"model": "RedHatAI/Qwen3-VL-235B-A22B-Instruct-speculator.eagle3", "method": "eagle3"}, (4,),
          ("MI300X", "MI355X"), "RECIPES models/Qwen/Qwen3-VL-235B-A22B-Instruct.yaml (verbatim, MI300X/MI355X)",
          tp=8, since=EAGLE3_CLASS_QWEN3_MOE_LLAMA4,
          extra="--max-model-len 16384 --max-num-seqs 32 --enable-expert-parallel --attention-backend ROCM_AITER_FA"),
    Setup("qwen3.5-27b+dflash", "Qwen/Qwen3.5-27B", {"model": "z-lab/Qwen3.5-27B-DFlash", "method": "dflash"}, (15,),
          ("H200",), "DFLASH (z-lab/Qwen3.5-27B-DFlash)", since="0.20.0"),
    Setup("gpt-oss-20b+dflash", "openai/gpt-oss-20b", {"model": "z-lab/gpt-oss-20b-DFlash", "method": "dflash"},
          (15,), ("H100",), "DFLASH (z-lab/gpt-oss-20b-DFlash)", since="0.20.0"),
]


def releases(method: str, since: str = "0.0", before: str = "9999") -> list[str]:
    """Every vLLM release (release_bugs.toml [releases.dates]) that methods.toml says runs `method`."""
    out = []
    for v in load("release_bugs.toml")["releases"]["dates"]:
        if Version(since) <= Version(v) < Version(before) and method_support(method, Version(v)).status == "supported":
            out.append(v)
    return out


def nvml(gpu: str, count: int) -> dict[str, Any]:
    snap = json.loads((ROOT / "fixtures/nvml/h200-snapshot.json").read_text())["snapshot"]
    if gpu in PLATFORM_GPUS:  # not an NVIDIA GPU: NVML finds none
        return dict(snap, gpus=[])
    name, total = GPUS[gpu]
    used = 600 * 2**20  # an idle GPU: the driver's context
    gpus = [dict(snap["gpus"][0], index=i, name=name, memory_total_bytes=total, memory_used_bytes=used,
                 memory_free_bytes=total - used, processes=[]) for i in range(count)]
    return dict(snap, gpus=gpus)


def command(s: Setup, k: int, flags: str = "") -> str:
    parts = ["vllm serve", s.target] + ([f"--tensor-parallel-size {s.tp}"] if s.tp > 1 else [])
    parts += [f"--data-parallel-size {s.dp}"] if s.dp > 1 else []
    parts += [x for x in (s.extra, flags) if x]
    return " ".join(parts) + f" --speculative-config '{json.dumps(dict(s.spec, num_speculative_tokens=k))}'"


def alarms(inputs: Inputs, gpu: str, count: int) -> tuple[str, list[str]]:
    store, _ = build_store(inputs, preset={"nvml.snapshot": nvml(gpu, count)})
    # env.* checks describe the machine the test runs on, not the deployment
    diag = diagnose(inputs, skip=["env"], store=store)
    assert not diag.input_errors, diag.input_errors
    broken = [f"check {r.id} failed: {r.reason}" for r in diag.results if r.status.value == "error"]
    found = [f"{f.severity.value} {f.id} [{f.category.value}] {f.confidence:.2f}: {f.title}"
             for f in diag.findings if f.severity.value in ALARM]
    return diag.verdict, broken + found


@pytest.fixture(autouse=True)
def _empty_hf_cache(monkeypatch, tmp_path_factory):
    # every model is known by its name only: the model-card table's facts, nothing downloaded
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path_factory.getbasetemp() / "empty-hf-cache"))


@pytest.mark.parametrize("setup", SETUPS, ids=[s.id for s in SETUPS])
def test_documented_setup_gets_no_alarm_on_any_release_that_supports_it(setup):
    vs = releases(setup.spec["method"], setup.since, setup.before)
    assert vs, f"no release runs {setup.spec['method']} from {setup.since}"
    bad = {}
    for i, v in enumerate(vs + [None]):  # None: the release is not known
        k, gpu, flags = setup.ks[i % len(setup.ks)], setup.gpus[i % len(setup.gpus)], FLAGS[i % len(FLAGS)]
        cmd = command(setup, k, flags)
        verdict, found = alarms(Inputs(cmd=cmd, vllm_version=v, gpu=PLATFORM_GPUS.get(gpu, gpu)), gpu, setup.tp * setup.dp)
        if found or verdict not in ("healthy", "unknown"):
            bad[f"{v} {gpu}: {cmd}"] = [f"verdict {verdict}"] + found
    assert not bad, json.dumps(bad, indent=1)


@pytest.mark.parametrize("setup", SETUPS, ids=[s.id for s in SETUPS])
def test_documented_pair_by_name_gets_no_alarm(setup):
    """The same setup as `check --target T --draft D --k K --gpu G` (no command line)."""
    draft = setup.spec.get("model") or setup.spec["method"]
    if setup.spec["method"] == "eagle3" and "eagle3" not in draft.lower():
        draft = "eagle3:" + draft  # the name alone does not say EAGLE-3
    vs = releases(setup.spec["method"], setup.since, setup.before)
    bad = {}
    for v in sorted({vs[0], vs[len(vs) // 2], vs[-1]}, key=Version) + [None]:
        for k in setup.ks:
            gpu = setup.gpus[0]
            obs = Observed(k=k, text={"--k": str(k)})
            verdict, found = alarms(Inputs(target=setup.target, draft=draft, vllm_version=v, gpu=PLATFORM_GPUS.get(gpu, gpu), observed=obs),
                                    gpu, setup.tp * setup.dp)
            if found or verdict not in ("healthy", "unknown"):
                bad[f"{v} K={k}"] = [f"verdict {verdict}"] + found
    assert not bad, json.dumps(bad, indent=1)


# Published acceptance of working runs (knowledge/data/acceptance.toml cites each): stated as a user would
# (`--acceptance`, `--k`) on the setup they were measured on, they are that method's normal range.
MEASURED = [
    ("meta-llama/Llama-3.1-8B-Instruct", {"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "method": "eagle3"}, 7,
     {"acceptance_length": 3.53}, "0.11.0", "https://github.com/vllm-project/vllm/issues/26191 (AL 3.53, MT-Bench)"),
    ("meta-llama/Meta-Llama-3-8B-Instruct", {"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "method": "eagle"}, 2,
     {"acceptance_length": 1.89}, "0.9.0", "https://github.com/vllm-project/vllm/pull/16035 (K=2 AL 1.89)"),
    ("meta-llama/Meta-Llama-3-8B-Instruct", {"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "method": "eagle"}, 4,
     {"acceptance_length": 2.08}, "0.9.0", "https://github.com/vllm-project/vllm/pull/16035 (K=4 AL 2.08)"),
    ("deepseek-ai/DeepSeek-V3", {"method": "mtp"}, 1, {"acceptance_rate": 0.85}, "0.20.0",
     "https://arxiv.org/abs/2412.19437 (second token accepted 85-90 %)"),
    ("Qwen/Qwen2.5-7B-Instruct", {"method": "ngram", "prompt_lookup_max": 5, "prompt_lookup_min": 2}, 5,
     {"acceptance_length": 4.59}, "0.11.0", "https://github.com/vllm-project/vllm/pull/24344 (code editing, AL 4.59)"),
]


@pytest.mark.parametrize("target, spec, k, figure, version, source", MEASURED,
                         ids=[f"{m[1]['method']}-k{m[2]}" for m in MEASURED])
def test_a_published_acceptance_is_not_low(target, spec, k, figure, version, source):
    tp = 8 if "DeepSeek" in target else 1
    s = Setup("measured", target, spec, (k,), ("H200",), source, tp=tp)
    obs = Observed(k=k, concurrency=1, text={key: str(x) for key, x in figure.items()}, **figure)
    verdict, found = alarms(Inputs(cmd=command(s, k), vllm_version=version, gpu="H200", observed=obs), "H200", tp)
    assert not found and verdict == "healthy", (source, verdict, found)


# ------------------------------------------------------------------------------------------ documented caveats
# Documented setups with a real problem a rule names: the rule stays, and only its finding may appear.
CAVEATS = [
    (Setup("v0-opt+opt-125m", "facebook/opt-6.7b", {}, (5,), ("A100",), "V0_DOCS", extra="--use-v2-block-manager"),
     "--speculative-model facebook/opt-125m --num-speculative-tokens 5", ("0.5.1", "0.6.2"),
     {"speedup.method-cost.likely", "config.method.v0-engine"},
     "V0_DOCS: the V0 draft-model path 'does not usually yield inter-token latency reductions'"),
    (Setup("v0-ngram", "Qwen/Qwen2.5-7B-Instruct", {}, (5,), ("A100",), "V0_DOCS"),
     "--speculative-model [ngram] --num-speculative-tokens 5 --ngram-prompt-lookup-max 4", ("0.6.4", "0.7.3"),
     {"speedup.method-cost.likely", "config.method.v0-engine"}, "V0_DOCS (same warning); the V1 n-gram path from 0.9.0 (methods.toml)"),
    (Setup("docs-eagle3-example", "meta-llama/Meta-Llama-3-8B-Instruct",
           {"model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3", "method": "eagle3",
            "draft_tensor_parallel_size": 2}, (2,), ("H100",), "DOCS_EAGLE", tp=2), "", ("0.11.0", "0.32.0"),
     {"pair.fit.head-target"},
     "DOCS_EAGLE's EAGLE-3 example serves a head trained on Llama-3.1-8B-Instruct (its model card) on a "
     "Meta-Llama-3-8B-Instruct target: another model's hidden states"),
]


@pytest.mark.parametrize("setup, legacy, versions, allowed, why", CAVEATS, ids=[c[0].id for c in CAVEATS])
def test_documented_caveats_get_only_the_finding_their_source_shows(setup, legacy, versions, allowed, why):
    seen: set[str] = set()
    for i, v in enumerate(versions):
        k, gpu = setup.ks[i % len(setup.ks)], setup.gpus[i % len(setup.gpus)]
        if legacy:
            cmd = " ".join(["vllm serve", setup.target] + ([f"--tensor-parallel-size {setup.tp}"] if setup.tp > 1
                                                          else []) + [x for x in (setup.extra, legacy) if x])
        else:
            cmd = command(setup, k)
        store, _ = build_store(Inputs(cmd=cmd, vllm_version=v, gpu=PLATFORM_GPUS.get(gpu, gpu)),
                               preset={"nvml.snapshot": nvml(gpu, setup.tp)})
        diag = diagnose(Inputs(cmd=cmd, vllm_version=v, gpu=PLATFORM_GPUS.get(gpu, gpu)), skip=["env"], store=store)
        found = {f.id for f in diag.findings if f.severity.value in ALARM}
        assert found <= allowed, (why, v, cmd, found - allowed)
        assert not [f for f in diag.findings if f.severity.value == "error"], (v, cmd)
        seen |= found
    assert seen, (why, "the rule no longer fires: drop the caveat")


# ------------------------------------------------------------------------------------------ healthy real logs
CPU = ROOT / "fixtures/vllm-cpu/scenarios"


@pytest.mark.parametrize("name", sorted(p.name for p in CPU.iterdir()
                                        if json.loads((p / "manifest.json").read_text()).get("healthy")))
def test_healthy_cpu_recordings_get_no_error(name):
    """vLLM 0.32 CPU runs the recording marks healthy (fixtures/vllm-cpu/README.md): no error, and a warning only in
    the categories the recording allows as true for its 4 M-parameter CPU setup (manifest `allowed`)."""
    d = CPU / name
    man = json.loads((d / "manifest.json").read_text())
    scrapes = [str(d / "metrics-before.txt"), str(d / "metrics-after.txt")]
    for inputs in (Inputs(logs=[str(d / "log.txt")], metrics_baseline=scrapes),
                   Inputs(logs=[str(d / "log.txt")], metrics_baseline=scrapes,
                          cmd=(d / "cmd.txt").read_text().splitlines()[-1], vllm_version=man["vllm_version"])):
        diag = diagnose(inputs)
        assert not [f.id for f in diag.findings if f.severity.value == "error"]
        assert {f.category.value for f in diag.findings if f.severity.value == "warning"} <= set(man["allowed"])
        assert diag.verdict in ("healthy", "degraded")


_QWEN7B, _MIMO = "Qwen/Qwen2.5-7B-Instruct", "XiaomiMiMo/MiMo-7B-RL"


@pytest.mark.parametrize("name, c, target, draft", [
    ("ngram-k3", 2, _QWEN7B, None), ("ngram-k3", 64, _QWEN7B, None), ("ngramgpu-k3", 2, _QWEN7B, None),
    ("ngramgpu-k3", 64, _QWEN7B, None), ("dm-k5-high", 2, _QWEN7B, "Qwen/Qwen2.5-0.5B-Instruct"),
    ("eagle3-k3-high", 2, _QWEN7B, None), ("eagle3-k3-high", 64, _QWEN7B, None),
    ("mimo-mtp-k1", 2, _MIMO, None), ("mimo-mtp-k1", 64, _MIMO, None)])
def test_healthy_h200_recordings_stay_healthy_with_the_real_model_names(tmp_path, name, c, target, draft):
    """The vLLM 0.26 H200 runs that paid off or broke even (fixtures/vllm-gpu/README.md) with the models they stand
    for named (Qwen2.5-7B-Instruct; its 0.5B draft, whose real config.json is 151936 tokens -- the recording padded
    it, and the log shows the pair serving; MiMo-7B-RL with its MTP layer): no warning, no error, verdict healthy."""
    from test_vllm_gpu import phase_inputs

    for names in ({}, {"target": target, "vllm_version": "0.26.0"}
                  | ({"draft": draft} if draft else {})):
        diag = diagnose(phase_inputs(tmp_path, name, c, gpu="H200", **names))
        assert not [f.id for f in diag.findings if f.severity.value in ALARM], names
        assert diag.verdict == "healthy", names
