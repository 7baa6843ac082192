#!/usr/bin/env python3
"""Mine vLLM's message catalogue from vLLM's own source, one release at a time.

Every exception text and warning/error log message on the paths that matter for speculative decoding (speculative
config and proposers, V0 spec_decode/, V1 v1/spec_decode/, KV-cache sizing and block allocation, CUDA graphs and
compilation config, schedulers, model runners and workers, argument parsing / engine args, platforms, attention
backends, samplers) becomes one catalogue entry: its template (f-string / %-format holes generalised), a regex for
the rendered text, its kind (exception type or log level), the releases in which it exists, where it is raised
(path@tag:line), whether it is about speculation, and a taxonomy category with a one-line fix, chosen by the rules
in RULES below (they read the message and the raising module; no entry is labelled by hand).

The source is read, never imported or executed: each file is parsed with `ast`. Two kinds of source work:

  --git DIR      a vLLM git directory (bare or not): release tags vX.Y.Z[.post N] -> `git show tag:path`
  --sdists DIR   a folder of release sdists vllm-X.Y.Z.tar.gz (read inside the archive)

The git history is the preferred source; when the repository snapshot is not at hand, the release sdists from
PyPI carry the same files. `pip download vllm==X --no-binary :all:` cannot fetch them (pip builds the sdist's
metadata, which needs torch), so `--download DIR` fetches the sdists through PyPI's simple index (JSON form,
PEP 691) and checks each file's sha256 against the index.

  python scripts/mine_catalogue.py --download /work/cache/vllm-sdists          # once, or to add new releases
  python scripts/mine_catalogue.py --sdists /work/cache/vllm-sdists [--check-index]
  python scripts/mine_catalogue.py --git /path/to/vllm.git
  python scripts/mine_catalogue.py --recategorize        # RULES again over the stored entries, no source needed

--recategorize reads each stored entry's template (its `text` when the template was cut), kind and newest source
path (its area, as mining derives it) and applies RULES as mining does; nothing else changes.

A platform plugin released on its own is mined the same way into the same file (`--project vllm-ascend`: vLLM's
Ascend NPU plugin, package vllm_ascend/, areas ascend-* in AREAS, each playing a vLLM area's part for the rules;
its releases include release candidates). Its entries carry `"project"` and its own releases; its header goes under
header.projects.<name>, with `compat`: each plugin release's vLLM pin (and CANN / torch / torch_npu) from the
plugin's release compatibility matrix, else its release notes, else the vLLM tag its Dockerfile builds. Mining one
project keeps the other's part of the file. With both --git and --sdists, the sdists serve the releases the git
snapshot lacks:

  python scripts/mine_catalogue.py --project vllm-ascend --git /path/to/vllm-ascend.git \
      --sdists /work/cache/vllm-ascend-sdists [--download /work/cache/vllm-ascend-sdists]

Writes src/spec_doctor/knowledge/data/catalogue.json (or --out). Only message texts and their locations are kept.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "src" / "spec_doctor" / "knowledge" / "data" / "catalogue.json"
MIN_VERSION = "0.4.0"
MIN_GATE = 8  # an entry whose longest literal chunk is shorter than this cannot identify a line
REGEX_CHARS = 200  # the regex covers the first line's first ~200 characters
TEMPLATE_CHARS = 400  # longer templates are cut (with "…"); the regex and gate come from the full text

# --------------------------------------------------------------------------------------------------------------
# Which files are mined, and what part of vLLM each is (the "area" the categorisation rules read).
# Order matters: the first pattern that matches a path names its area.
AREAS: list[tuple[str, re.Pattern[str]]] = [(a, re.compile(p)) for a, p in [
    ("spec-v1", r"^vllm/v1/spec_decode/|^vllm/v1/worker/gpu/spec_decode/"),
    ("spec-v0", r"^vllm/spec_decode/"),
    ("spec-config", r"^vllm/config/speculative\.py$"),
    ("spec-model", r"^vllm/model_executor/models/(?:\w*eagle\w*|medusa|mlp_speculator|\w*mtp\w*|\w*dflash\w*"
                   r"|arctic_speculator|\w*_draft\w*)\.py$|^vllm/transformers_utils/configs/(?:eagle|medusa|"
                   r"mlp_speculator|speculators/|\w*mtp|\w*dflash)"),
    ("spec-sampler", r"^vllm/model_executor/layers/(?:rejection_sampler|spec_decode_base_sampler"
                     r"|typical_acceptance_sampler)\.py$|^vllm/v1/sample/rejection_sampler\.py$"),
    # Config modules are config validation wherever their subject lives (config/compilation.py, cache.py,
    # scheduler.py fall through to "config" below).
    ("compilation", r"^vllm/compilation/"),
    ("kv-cache", r"^vllm/core/block|^vllm/core/(?:block_manager|evictor|interfaces)\w*\.py$"
                 r"|^vllm/v1/core/(?:kv_cache|block_pool|single_type|encoder_cache)\w*\.py$"),
    ("scheduler", r"^vllm/core/scheduler\.py$|^vllm/v1/core/sched/|^vllm/v1/core/scheduler\w*\.py$"),
    ("config", r"^vllm/config(?:\.py$|/)"),
    ("args", r"^vllm/engine/arg_utils\.py$|^vllm/entrypoints/(?:openai/)?cli_args\.py$|^vllm/entrypoints/cli/"
             r"|^vllm/utils(?:/__init__)?\.py$|^vllm/utils/argparse_utils\.py$"),
    # Workers, model runners and executors written for one platform: what they refuse is the platform's limit.
    ("platform-worker", r"^vllm/(?:v1/)?(?:worker|executor)/(?:cpu|xpu|tpu|hpu|neuron|openvino)\w*\.py$"),
    ("model-runner", r"^vllm/(?:v1/)?worker/\w*model_runner\w*\.py$|^vllm/v1/worker/gpu/|^vllm/v1/worker/utils\.py$"
                     r"|^vllm/v1/cudagraph_dispatcher\.py$|^vllm/worker/multi_step\w*\.py$"),
    ("worker", r"^vllm/(?:v1/)?worker/"),
    ("engine", r"^vllm/v1/engine/|^vllm/engine/(?:llm_engine|async_llm_engine|multiprocessing/\w+)\.py$"
               r"|^vllm/v1/executor/|^vllm/executor/|^vllm/v1/utils\.py$|^vllm/v1/metrics/|^vllm/engine/metrics\.py$"
               r"|^vllm/logging_utils/"),
    ("platform", r"^vllm/platforms/"),
    ("attention", r"^vllm/(?:v1/)?attention/(?:backends/|selector\.py$|layer\.py$)|^vllm/attention/selector\.py$"),
    # A request's own parameters (SamplingParams validates what each request asks for).
    ("request", r"^vllm/sampling_params\.py$"),
    ("sampling", r"^vllm/v1/sample/|^vllm/model_executor/layers/sampler\.py$"),
    ("quantization", r"^vllm/model_executor/layers/quantization/"),
    ("model-loader", r"^vllm/model_executor/model_loader/|^vllm/model_executor/models/(?:utils|registry)\.py$"
                     r"|^vllm/transformers_utils/(?:config|tokenizer)\w*\.py$"),
    ("utils", r"^vllm/utils/|^vllm/(?:logger|envs|exceptions|_custom_ops)\.py$"),
    ("entrypoints", r"^vllm/entrypoints/"),
    # vLLM's Ascend NPU plugin (vllm-ascend, package vllm_ascend): its own proposers and spec-decode patches, model
    # runners (eager, ACL graph, torchair graph), attention backends, config checks and platform. Its areas are
    # named ascend-*; each plays the role of one vLLM area for the rules (AREA_ROLE).
    ("ascend-spec", r"^vllm_ascend/(?:spec_decode/|_310p/spec_decode/|worker/v2/spec_decode/|ops/triton/spec_decode/"
                    r"|worker/(?:mtp_proposer\w*|draft_model_runner|multi_step_\w+|eagle\w*)\.py$"
                    r"|sample/rejection_sampler\.py$|torchair/models/\w*mtp\w*\.py$|models/\w*mtp\w*\.py$"
                    r"|patch/(?:\w+/)*patch_(?:spec_decode\w*|multi_step_worker|\w*eagle\w*|\w*mtp\w*"
                    r"|rejection_sampler|\w*dflash\w*|\w*draft\w*|\w*speculat\w*)\.py$)"),
    ("ascend-graph", r"^vllm_ascend/(?:compilation/|worker/v2/aclgraph\w*\.py$|torchair/(?:utils|__init__)\.py$"
                     r"|patch/(?:\w+/)*patch_(?:\w*cudagraph\w*|npugraph\w*|\w*graph\w*)\.py$)"),
    ("ascend-kv-cache", r"^vllm_ascend/(?:core/(?:\w*block_pool|\w*kv_cache\w*)\.py$|worker/(?:block_table"
                        r"|cache_engine)\.py$|patch/(?:\w+/)*patch_\w*(?:kv_cache|block)\w*\.py$|kv_offload/)"),
    ("ascend-scheduler", r"^vllm_ascend/core/\w*schedul\w*\.py$|^vllm_ascend/patch/(?:\w+/)*patch_\w*schedul\w*\.py$"),
    ("ascend-config", r"^vllm_ascend/(?:ascend_config|envs|patch_config)\.py$"
                      r"|^vllm_ascend/patch/(?:\w+/)*patch_\w*config\w*\.py$"),
    ("ascend-model-runner", r"^vllm_ascend/(?:worker/(?:\w*model_runner\w*|npu_input_batch|v2/|pcp_utils)"
                            r"|torchair/torchair_model_runner|_310p/\w*model_runner\w*|xlite/)"
                            r"|^vllm_ascend/patch/(?:\w+/)*patch_\w*model_runner\w*\.py$"),
    ("ascend-worker", r"^vllm_ascend/(?:worker/|torchair/torchair_worker|_310p/worker)"),
    ("ascend-attention", r"^vllm_ascend/(?:attention/|torchair/torchair_(?:attention|mla|sfa)|_310p/attention/)"),
    ("ascend-sampling", r"^vllm_ascend/sample/"),
    ("ascend-quantization", r"^vllm_ascend/(?:quantization/|_310p/quantization/|torchair/quantization/)"),
    ("ascend-platform", r"^vllm_ascend/(?:platform|utils|soc_info|cpu_binding|__init__|ascend_forward_context)\.py$"
                        r"|^vllm_ascend/(?:device/|patch/platform/)"),
    ("ascend-engine", r"^vllm_ascend/patch/"),
]]
SPEC_AREAS = {"spec-v1", "spec-v0", "spec-config", "spec-model", "spec-sampler"}
CONFIG_AREAS = frozenset({"spec-config", "config", "args"})
# The vLLM area each plugin area plays the part of: the rules read both names (a rule for "model-runner" holds in
# the plugin's NPU model runner too).
AREA_ROLE = {"ascend-spec": "spec-v1", "ascend-graph": "compilation", "ascend-kv-cache": "kv-cache",
             "ascend-scheduler": "scheduler", "ascend-config": "config", "ascend-model-runner": "model-runner",
             "ascend-worker": "worker", "ascend-attention": "attention", "ascend-sampling": "sampling",
             "ascend-quantization": "quantization", "ascend-platform": "platform", "ascend-engine": "engine"}
ASCEND_AREAS = frozenset(AREA_ROLE)


def area_of(path: str) -> str | None:
    for name, rx in AREAS:
        if rx.search(path):
            return name
    return None


def role_of(area: str) -> str:
    """The vLLM area a (plugin) area plays the part of for the rules; a vLLM area is its own."""
    return AREA_ROLE.get(area, area)


# --------------------------------------------------------------------------------------------------------------
# Categorisation: ordered rules over (message literal text, kind, area). The first rule that matches wins.
@dataclass(frozen=True)
class Rule:
    name: str
    category: str
    text: str | None = None  # regex over the message's literal text (holes replaced by '{}'), case-insensitive
    areas: frozenset[str] | None = None  # only in these areas
    not_areas: frozenset[str] = frozenset()  # never in these areas
    kinds: frozenset[str] | None = None  # only these kinds ("warning", "error", "ValueError", ...)
    spec: bool | None = None  # only when the message is (True) / is not (False) about speculation
    fix: str = ""

    def matches(self, text: str, kind: str, area: str, spec: bool) -> bool:
        names = {area, role_of(area)}
        if (self.areas is not None and not names & self.areas) or names & self.not_areas:
            return False
        if self.kinds is not None and kind not in self.kinds and not (ANY_EXC in self.kinds and is_exception(kind)):
            return False
        if self.spec is not None and self.spec != spec:
            return False
        return self.text is None or re.search(self.text, text, re.I) is not None


def _f(*xs: str) -> frozenset[str]:
    return frozenset(xs)


LOG_KINDS = _f("warning", "error", "critical")
ANY_EXC = "<any exception>"  # in Rule.kinds: every exception type (a raise or an assert), not log levels or warnings


def is_exception(kind: str) -> bool:
    return kind not in LOG_KINDS and kind != "argparse" and not kind.endswith("Warning")


ERROR_LOGS = _f("error", "critical")
EXC_KINDS = _f(ANY_EXC)
SPEC_ITSELF = r"(?:speculative decoding|speculation|spec[ _-]decod(?:e|ing)|drafting|the drafter|draft model|proposer)"
SPEC = r"(?:specul|spec[ _-]?decod|\bdraft|eagle|medusa|\bmtp\b|n-?gram|suffix|propos|lookahead|dflash)"

# Text that hands the user a setting to change: an env var assignment, a flag, "set X to", "requires x=...".
SETTING = (r"(?:VLLM_[A-Z0-9_]+\s*=|--[a-z][\w-]|please (?:set|use|pass|unset)|\bset (?:--|`|VLLM_|\w+_\w+ (?:to|=))|"
           r"requires? (?:--|VLLM_|`?\w+_\w+`?\s*=|\w+=))")
INTERNAL_EXC = _f("AssertionError", "IndexError", "KeyError", "AttributeError")
INTERNAL_AREAS = _f("spec-v0", "spec-v1", "spec-sampler", "spec-model", "model-runner", "worker", "kv-cache",
                    "scheduler", "engine", "compilation", "attention", "sampling")

RULES: list[Rule] = [
    # Not diagnostic: start-up chatter, caches, shutdown, programming placeholders.
    Rule("shutdown", "none", r"^\[shutdown\]|force killing|shutting down|received (?:sig|signal)|keyboardinterrupt",
         kinds=_f("warning")),  # an ERROR that says a process died and the engine shuts down is a crash
    Rule("compile-cache", "none", r"compiling model again due to a load failure|cache (?:dir|directory)|"
                                  r"(?:load|sav)\w* .*compil\w* (?:graph|artifact)|hash\w* of the|compiled graph",
         kinds=_f("warning")),
    Rule("interrupt", "none", kinds=_f("KeyboardInterrupt")),  # the process was told to stop
    Rule("ulimit", "none", r"ulimit"),
    Rule("abstract", "none", r"subclass\w* (?:should|must|need to) (?:implement|override)|"
                             r"(?:should|must) be implemented by|abstract method|not implemented in (?:the )?base"),
    Rule("inductor-off", "none", r"inductor compilation was disabled|optimizations? .* only active during inductor"),
    # Printed at every start with speculation on; it matters only for requests that set those parameters,
    # which a log does not show.
    Rule("spec-param-notice", "none", r"parameters won'?t (?:currently )?work with specul", kinds=_f("warning")),
    Rule("tcmalloc", "env-platform", r"tcmalloc|LD_PRELOAD|intel openmp|iomp",
         fix="Preload tcmalloc / Intel OpenMP as vLLM's CPU installation guide says."),
    # A package or module vLLM needs is missing (suffix decoding without arctic-inference, ROCm without flash-attn).
    Rule("import-error", "env-version", kinds=_f("ImportError", "ModuleNotFoundError"),
         fix="Install the package the error names, in the version this vLLM release needs."),
    # Speculation that costs speed by construction: the engine gives something up for the method.
    Rule("spec-async-off", "spec-overhead",
         r"async(?:hronous)?[ _-]?sched\w*.{0,160}(?:disabl|fall\w* back|turn\w* off|not (?:be )?(?:used|enabled))|"
         r"(?:disabl\w*|turn\w* off|fall\w* back from)\s.{0,30}async(?:hronous)?[ _-]?sched", spec=True,
         kinds=LOG_KINDS | _f("UserWarning"),
         fix="Async scheduling is off for this speculation method: compare against a run without speculation, "
             "or use a method/release that keeps async scheduling."),
    Rule("spec-runner-fallback", "spec-overhead",
         r"(?:fall\w* back|using|switch\w* to|revert\w* to)\s+(?:to\s+)?(?:the\s+)?(?:v[0-2]|legacy|older|"
         r"default|previous)\s+(?:model\s+runner|engine|worker)|model[ _]runner[ _]v[12].{0,80}(?:instead|fall)|"
         r"fall\w* back to (?:the )?v0\b",
         spec=True, kinds=LOG_KINDS | _f("UserWarning"),
         fix="vLLM fell back to another model runner/engine for this speculation method; check the speedup "
             "against plain decoding, or pick a method the fast path supports."),
    Rule("spec-token-budget", "spec-overhead",
         r"max_num_(?:scheduled|batched)_tokens.{0,80}(?:specul|draft)|(?:specul|draft).{0,80}(?:token budget|"
         r"max_num_(?:scheduled|batched)_tokens)", spec=True, kinds=LOG_KINDS,
         fix="Raise --max-num-batched-tokens so the draft tokens fit in the step's budget."),
    Rule("spec-dynamic-off", "spec-overhead",
         r"dynamic specul\w* decod\w*.{0,240}(?:disabl\w*|fall\w* back)", spec=True, kinds=LOG_KINDS,
         fix="Dynamic speculation (K per batch size) is off here: a fixed K costs more at high batch sizes; "
             "lower K or use a runner/parallelism that keeps it."),
    Rule("spec-slow-path", "spec-overhead",
         r"(?:optimi[sz]ation|fast[ -]path|fused \w+)s? (?:will be |is |are |gets )?(?:bypassed|skipped|disabled)|"
         r"fall\w* back to (?:the )?(?:full|slow|unfused|naive|reference)\b", spec=True, kinds=LOG_KINDS,
         fix="The drafting path lost an optimisation here: each draft step costs more; check the speedup against "
             "plain decoding, or remove the setting that disables it."),
    Rule("spec-eager-drafter", "spec-overhead",
         r"(?:draft|propos|eagle|mtp)\w*.{0,80}(?:eager mode|without (?:cuda ?graphs|compil))", spec=True,
         kinds=LOG_KINDS,
         fix="The drafter runs eagerly: each draft step pays full launch overhead; enable its CUDA graphs."),
    # The message itself says vLLM got here by its own fault ("should not happen", "should be handled in ...",
    # "this indicates a bug"): an engine bug whatever the subject, unless it hands the user a setting to change.
    # ("Please open an issue" alone is not one: vLLM says it after "not implemented yet" too.)
    Rule("says-bug", "engine-bug",
         rf"(?s)^(?!.*{SETTING}).*(?:should (?:not|never) (?:happen|be reached)|should (?:have been|be) handled (?:in|by)|"
         r"(?:this|it) (?:indicates|is (?:likely )?|means) a bug|\bunreachable\b|something (?:is|went) wrong)",
         kinds=EXC_KINDS | ERROR_LOGS,
         fix="vLLM says it reached a state it should not: upgrade, or report it with the traceback."),
    # The plugin's graph modes (ACL graph, the torchair graph, npugraph_ex): Ascend's CUDA graphs.
    Rule("npu-graph", "cuda-graph",
         r"acl ?graph|aclgraph|npu ?graph|npugraph|torchair|graph[ _]mode|graph capture|captur\w* (?:the )?graph|"
         r"enforce[_ -]?eager|eager mode|\bpiecewise\b|full_decode_only|cudagraph|cuda ?graph",
         areas=ASCEND_AREAS,
         fix="Check the graph mode the target and drafter run with on the NPU (ACL graph: compilation_config."
             "cudagraph_mode; torchair: additional_config torchair_graph_config); drop --enforce-eager unless needed."),
    # CUDA graphs and their modes. A CUDA-graph setting that config validation rejects (a raise in config/args code)
    # is a configuration vLLM refuses (taxonomy: config-unsupported-combo); what graphs do at run time (downgraded,
    # disabled, capture failing) is cuda-graph.
    Rule("cuda-graph-config", "config-unsupported-combo",
         r"(?:cuda ?graph|cudagraph|capture_sizes|cuda_graph_sizes).{0,200}(?:mutually exclusive|must|should be|invalid|"
         r"not (?:yet )?(?:supported|allowed)|cannot|requires?)|(?:mutually exclusive|must|invalid|cannot|requires?).{0,120}"
         r"(?:cuda ?graph|cudagraph|capture_sizes|cuda_graph_sizes)",
         kinds=EXC_KINDS, areas=CONFIG_AREAS,
         fix="Change the CUDA-graph settings (compilation_config.cudagraph_mode, cudagraph_capture_sizes): this "
             "release rejects the combination."),
    Rule("cuda-graph", "cuda-graph",
         r"cuda ?graph|cudagraph|graph capture|captur\w* (?:the )?graph|enforce[_ -]?eager|eager mode|"
         r"\bpiecewise\b|full_and_piecewise|full_decode_only|cudagraph_mode|cuda_graph_sizes|"
         r"\bgraphs? (?:has |have |is |was |were )?(?:already |not (?:yet )?)?captured",
         fix="Check the CUDA-graph mode the target and drafter run with (compilation_config.cudagraph_mode); "
             "drop --enforce-eager unless it is needed."),
    # Memory: the KV cache under load first (a preemption warning also names gpu_memory_utilization).
    Rule("kv-pressure", "kv-pressure",
         r"preempt|kv cache (?:is )?full|no free (?:kv )?blocks|out of (?:kv )?blocks|"
         r"not enough (?:kv[- ]cache )?(?:free )?blocks|cannot (?:be )?allocat\w* .*block|swapp?\w* out|"
         r"insufficient kv (?:space|cache|slots)|only \{\} kv blocks|kv blocks are available|"
         r"exceeds the capacity of (?:the )?block_?manager|lack of (?:cpu )?swap space|"
         r"(?:out of|insufficient|not enough) (?:cpu )?swap\b",
         fix="KV cache too small for the load: more KV memory, fewer concurrent sequences, or a shorter K."),
    Rule("oom", "oom",
         r"out of memory|\boom\b|not enough (?:gpu |device )?memory|insufficient (?:gpu )?memory|"
         r"no available memory|free memory on device|memory profiling|gpu_memory_utilization|"
         r"larger than the maximum number of tokens that can be stored in kv cache|"
         r"exceeds? (?:the )?(?:available|free) (?:gpu )?memory|memory usage|free memory grew|during (?:memory )?profiling|"
         r"(?:available|free) memory .{0,80}(?:less than|not enough)|more than the .{0,40}memory reserved",
         fix="Budget the memory: raise --gpu-memory-utilization if the GPU is free, lower --max-model-len or "
             "--max-num-seqs, and count the draft's weights and KV cache."),
    # A drafter's weights missing from a checkpoint that says it was quantized without them: the quantized export, not
    # the method, is what to change.
    Rule("checkpoint-quantized", "quantization",
         r"(?:weights?|layers?|parameters?) .{0,60}missing .{0,120}quantiz|"
         r"quantiz\w* without (?:including )?(?:the )?(?:mtp|draft|eagle|speculat)",
         kinds=EXC_KINDS | ERROR_LOGS,
         fix="The checkpoint was quantized without the drafter's layers: use an export that keeps them (or the "
             "unquantized checkpoint for the MTP/EAGLE layers), or serve without speculation."),
    # A checkpoint that does not fit the method (missing or unexpected weights).
    Rule("checkpoint", "config-unsupported-combo",
         r"(?:weights?|parameters?) .{0,40}(?:missing from|not (?:found )?in) (?:the )?checkpoint|"
         r"checkpoint does not contain|not in the checkpoint",
         kinds=EXC_KINDS | ERROR_LOGS,
         fix="Use a checkpoint made for this method and target (e.g. an EAGLE head for EAGLE, an MTP-capable "
             "checkpoint for MTP)."),
    # Tokens.
    Rule("vocab", "vocab-mismatch",
         r"vocab\w*[ _]size.{0,80}(?:match|differ|same|equal)|same vocab|vocab\w* (?:mismatch|intersection)|"
         r"(?:match|differ\w*|mismatch\w*) .{0,40}vocab|tokenizers? .{0,40}(?:match|differ|mismatch|same)|"
         r"\bd2t\b|\bt2d\b|draft_id_to_target_id|different vocab|vocab(?:ulary)?[ _]?mapping|out-of-intersection|"
         r"draft_vocab_size.{0,40}target_vocab_size|"
         r"\bvocab\w*[ _](?:dim|size)\w*\b.{0,80}(?:narrower|wider|smaller|larger) than (?:the )?(?:sampled|target|draft)",
         fix="Draft and target must share the tokenizer and vocab_size (mind padded vocab sizes)."),
    # Quantization.
    Rule("quantization", "quantization",
         r"quantiz|\bfp8\b|\bawq\b|\bgptq\b|marlin|bitsandbytes|compressed[- ]tensors|\bint[48]\b|\bnvfp4\b|"
         r"\bmxfp4\b|\bgguf\b",
         fix="Check that the quantization method is supported for the target and drafter in this release."),
    # Deprecated, removed, renamed or ignored settings.
    Rule("deprecated", "config-deprecated",
         r"deprecat|(?:has been|have been|was|were|is|are|been) removed|will be removed|removed in v?\d|"
         r"renamed|no longer (?:supported|used|needed|necessary|required|be allowed|allowed)|is ignored|are ignored|"
         r"will be ignored|has no effect|ignoring (?:the )?(?:argument|option|flag|key)|unrecognized argument|"
         r"unknown (?:argument|option|cli)",
         fix="Use the setting's current name/form for the installed release (see `vllm serve --help`)."),
    # A key given twice in the configuration or on the command line: one of them is ignored.
    Rule("duplicate-setting", "config-deprecated", r"duplicate (?:keys?|arguments?|flags?|options?)\b",
         areas=CONFIG_AREAS,
         fix="Give each setting once: vLLM keeps one of the duplicates and ignores the other."),
    Rule("dropped-setting", "config-deprecated", r"(?:will be|are|is|being|gets?) (?:silently )?(?:dropped|discarded)",
         areas=CONFIG_AREAS,
         fix="vLLM drops these settings: give them in the form this release takes (see `vllm serve --help`)."),
    Rule("argparse", "config-deprecated", kinds=_f("argparse", "ArgumentTypeError", "ArgumentError"),
         fix="Fix the command-line argument as the error says (see `vllm serve --help` for this release)."),
    # The plugin's software stack (CANN, torch_npu, triton-ascend) and the Ascend chips it runs on.
    Rule("npu-versions", "env-version",
         r"\bcann\b|torch[_ -]npu|triton[_ -]ascend|mindie|(?:vllm|vllm-ascend|vllm_ascend) version|"
         r"(?:upgrade|update|install)\w* (?:to )?(?:the )?(?:latest|newer|vllm|torch)|is not installed|no module named|"
         r"(?:please|pip) install|version\w* (?:of )?\S+ (?:is )?(?:required|too old|not supported)",
         areas=ASCEND_AREAS, kinds=EXC_KINDS | LOG_KINDS,
         fix="Install the CANN, torch_npu and vLLM versions this vllm-ascend release pins (its release "
             "compatibility matrix)."),
    Rule("npu-platform", "env-platform",
         r"not (?:yet |currently )?supported (?:on|for|by) (?:the )?(?:this )?(?:npu|ascend|atlas|310p|a2|a3|soc|"
         r"device|platform|current)|\b310p\b|\bsoc\b|ascend ?(?:310|910)|atlas|only (?:supported|available) on|"
         r"(?:npu|ascend) (?:does not|doesn't) support|(?:not|can ?not) support (?:the )?(?:soc[_ ]version|device type)",
         areas=ASCEND_AREAS, kinds=EXC_KINDS | LOG_KINDS,
         fix="The Ascend NPU (or this chip) limits this feature: turn the feature off or run it on a supported "
             "Atlas/Ascend device."),
    # Platform limits.
    Rule("platform", "env-platform",
         r"not (?:yet )?supported (?:on|for) (?:the )?(?:this )?(?:platform|cpu|rocm|tpu|xpu|hpu|neuron|windows|"
         r"mac|apple|gaudi|current platform)|\b(?:cpu|rocm|tpu|xpu|hpu|neuron)\w* (?:backend |platform )?"
         r"(?:does not|doesn't|only)|compute capability|triton is not installed|requires triton|"
         r"triton.{0,20}not (?:available|found|installed)|\bwsl\b|nvml|cuda is not available|"
         r"device capability|no (?:cuda|gpu)s? (?:device|available|found)|"
         r"requires? (?:an? )?(?:sm ?_?\d{2,3}\w*|hopper|blackwell|ampere|ada|volta|turing)\b|"
         r"\bsm ?_?(?:[789]\d|1[0-2]\d)x?\b|(?:on|for) this (?:device|gpu|hardware)|"
         r"(?:disabled|not supported) on (?:blackwell|hopper|ampere|ada|volta|turing)|"
         r"(?:not fully|partially) supported (?:on|by) (?:rocm|xpu|tpu|hpu|cpu|neuron)\b|infer (?:the )?device type|"
         r"\b(?:uva|unified virtual address\w*|pinned memory|p2p|peer[- ]to[- ]peer)\b.{0,30}(?:not available|unavailable|"
         r"not supported)|"
         r"only (?:available|supported) on (?:rocm|cuda|xpu|tpu|hpu|cpu|nvidia|amd|intel)\b",
         fix="The platform limits this feature; run on a supported GPU/OS or turn the feature off."),
    # What platform code (platforms/*, a CPU/XPU/TPU/HPU/Neuron worker or executor) refuses is that platform's limit.
    Rule("platform-code", "env-platform",
         r"not (?:yet |currently )?(?:be )?(?:supported|implemented|available)|(?:does not|doesn't|do not) (?:yet )?"
         r"support|only supports?|unsupported|partially supported|not fully supported|\bnot support\b",
         areas=_f("platform", "platform-worker"), kinds=EXC_KINDS | LOG_KINDS,
         fix="The platform limits this feature; run on a supported GPU/OS or turn the feature off."),
    # Versions of vLLM and its dependencies.
    Rule("versions", "env-version",
         r"(?:upgrade|update|install)\w* (?:to )?(?:the )?(?:latest|newer|vllm|torch|transformers|flashinfer|"
         r"triton)|version\w* (?:of )?\S+ (?:is )?(?:required|too old|not supported)|requires? (?:a )?(?:newer|"
         r"version|torch|transformers|flashinfer)|(?:torch|transformers|flashinfer|cuda|triton)\s*(?:version|>=|<)|needs torch|"
         r"is not installed|failed to import|cannot import|no module named|undefined symbol|"
         r"built (?:with|for|against)|please install|pip install|to be installed|install (?:a|an|the|it)\b|"
         r"build that includes|requires? an? [\w-]+ build\b|has no kernel|no kernel (?:for|available|found)|"
         r"kernels? (?:is |are )?not (?:available|found|compiled|built)|not compiled (?:with|for)|"
         r"backend is (?:not |un)available|(?:is|are) (?:not |un)available in the current|ensure .{0,40}\binstalled|"
         r"\b(?:ray|flashinfer|xformers|flash[_-]?attn|deep_?gemm|arctic[_-]inference|nixl|lmcache)\b (?:package |"
         r"library )?(?:is|are) (?:required|needed)",
         fix="Install versions that support this (vLLM, torch, CUDA, transformers, flashinfer)."),
    # Speculation configured but not running.
    Rule("spec-inactive", "spec-inactive",
         rf"(?:disabl\w*|turn\w* off|skipp\w*|not (?:using|running))\s+(?:the\s+)?{SPEC_ITSELF}|"
         rf"{SPEC_ITSELF}\s+(?:is|will be|has been|was|gets)\s+(?:\w+\s+)?(?:disabled|skipped|turned off|"
         r"not used|not be used|ignored|inactive)|disable_by_batch_size", kinds=LOG_KINDS,
         fix="Speculation is configured but switched off here; check the config and the log for why."),
    # The step's size: K.
    Rule("k-too-large", "k-too-large",
         r"num_speculative_tokens\s*>\s*\d.{0,80}(?:lower|reduc|acceptance)|too (?:large|many|big).{0,40}"
         r"num_speculative|num_speculative_tokens.{0,40}too (?:large|many|big)", kinds=LOG_KINDS,
         fix="Lower num_speculative_tokens to the positions that are still accepted."),
    # A speculation method this release does not have (or names differently), and architectures it cannot run
    # with speculation yet: the release lacks it (taxonomy: env-version), not a combination of settings.
    Rule("spec-method-missing", "env-version",
         r"(?:unknown|unsupported|invalid) (?:speculative (?:decoding )?)?method|supported methods are|"
         r"only \w+ (?:spec(?:ulative)?[ _-]?decod\w*|speculation) (?:is|are) supported|"
         r"draft[ -]model speculative decoding is not (?:yet )?supported|"
         r"speculative decoding with draft models? is not (?:yet )?supported|"
         r"(?:is|are) only supported for .{1,60}\bmodels\b|"
         r"(?:does not|doesn't) (?:yet |currently )?support (?:multimodal|multi-modal|m-?rope|mamba|hybrid|"
         r"encoder[- ]decoder)(?: models?| inputs?)?(?: yet)?(?:[.,;:]|$)|(?:mamba|multimodal|multi-modal|m-?rope|hybrid|encoder[- ]decoder)(?: models?)? "
         r"with (?:speculative decoding|spec[ _-]?decod\w*) (?:is|are) not (?:yet )?supported",
         kinds=EXC_KINDS, spec=True,
         fix="This vLLM release does not have this speculation method for this model (or names it otherwise): "
             "upgrade vLLM, or pick a method and model the release supports."),
    Rule("arch-missing", "env-version",
         r"unsupported model[_ ]type|unsupported architecture|architectures? .{0,40}(?:is|are) not (?:yet |currently )?"
         r"supported|(?<!draft )models? (?:does|do) not (?:yet |currently )?support (?:the )?(?:eagle|mtp|medusa|"
         r"specul|spec[ _-]?decod|draft)|does not support \w+ interface",
         kinds=EXC_KINDS,
         fix="This vLLM release cannot run this model architecture this way: upgrade vLLM or use a supported "
             "model/method."),
    # K > 1 on a drafter that has one layer (an MTP head run again for every position): acceptance falls with K.
    Rule("k-one-layer", "k-too-large", r"only (?:have|has) one layer|one (?:mtp )?layer.{0,80}multiple layers",
         spec=True, kinds=LOG_KINDS,
         fix="This drafter has one layer; each extra speculative token reruns it. Keep num_speculative_tokens low "
             "(1-2) unless the per-position acceptance says more pays."),
    # A warning that a setting may lower the draft's acceptance.
    Rule("acceptance-warn", "low-acceptance",
         r"(?:affect|lower|reduc|hurt|degrad|drop)\w*\s.{0,40}acceptance|acceptance (?:rates? )?(?:may|will|can|could) "
         r"(?:drop|fall|be lower|suffer|degrade)", spec=True, kinds=LOG_KINDS | _f("UserWarning"),
         fix="This setting may lower acceptance: compare the per-position acceptance with and without it."),
    # What the quantization layer refuses (a scheme, a group size, a shape, a MoE/EPLB path it lacks) is a limit of
    # the quantization method, not of the deployment's other settings: unless an earlier rule said platform or version.
    Rule("quantization-area", "quantization", kinds=EXC_KINDS | ERROR_LOGS, areas=_f("quantization"),
         fix="The quantization method or its kernel does not support this layer/shape/GPU: check the method "
             "and its requirements for this release."),
    # A request's own parameters refused (SamplingParams, or vLLM's request validation error): about that request,
    # not the deployment.
    Rule("request-params", "none", kinds=_f("VLLMValidationError", ANY_EXC, "warning"), areas=_f("request")),
    Rule("request-validation", "none", rf"(?s)^(?!.*{SETTING})", kinds=_f("VLLMValidationError")),
    # A speculation model class rejecting the draft checkpoint's weights (shapes, shards): the checkpoint does not
    # fit the method.
    Rule("spec-checkpoint-weights", "config-unsupported-combo", r"\bweights?\b|checkpoint", kinds=EXC_KINDS,
         areas=_f("spec-model"),
         fix="The draft checkpoint's weights do not fit this method: use a checkpoint made for this method, "
             "target and release."),
    # Tensor shapes, dtypes and layouts vLLM's machinery checks between its own pieces: an engine bug, unless the
    # text hands the user a setting to change.
    Rule("internal-shape", "engine-bug",
         rf"(?s)^(?!.*{SETTING}).*(?:\bshapes?\b|\bgeometry\b|must have the same (?:length|shape|size|dtype|number)|"
         r"\b(?:tensors?|buffers?)\b.{0,40}(?:must|expected)|(?:source|destination) must)",
         kinds=EXC_KINDS, areas=INTERNAL_AREAS,
         fix="An internal check failed in vLLM: upgrade, or report it with the traceback."),
    # A feature this release has not implemented ("M-RoPE support is not implemented"): the release lacks it.
    Rule("feature-not-implemented", "env-version",
         r"\bsupport (?:is |has )?not (?:yet )?(?:been )?implemented|\bis not (?:yet )?implemented yet\b",
         kinds=EXC_KINDS,
         fix="This release does not implement it: upgrade vLLM or choose another method/backend."),
    # Combinations vLLM rejects or mishandles (phrases that name a combination).
    Rule("combo", "config-unsupported-combo",
         r"not (?:yet |currently )?supported|unsupported|isn't supported|not (?:yet |currently )?compatible|isn'?t compatible|"
         r"aren'?t compatible|incompatible|"
         r"(?:cannot|can't|can not) (?:currently )?(?:be )?(?:used|run|enabled|combined) (?:with|together|when|"
         r"for|in)|can only be used|only supports?|does not (?:yet |currently )?support|doesn't support|"
         r"do not support|doesn't (?:yet |currently )?support|(?:does not|doesn't) fully support|does not have .{0,30}support|disable one of them|"
         r"(?:use|using|consider) a different (?:attention )?backend|is enabled,? but .{0,80}(?:does not|doesn't|not) |"
         r"mutually exclusive|conflict|won'?t (?:currently )?work|will not work|does not work|doesn't work|"
         r"only .{1,40} (?:is|are) supported|(?:enabled|used) (?:simultaneously|together) only|has no support|"
         r"not work with|not allowed (?:with|when|for)|\bnot support\b|"
         r"(?:cannot|can't|can not) [\w-]+ .{0,80}\bwhen .{0,60}\b(?:is|are) (?:enabled|set|used|on)\b",
          fix="Change the configuration: this combination is rejected or unsupported in this release."),
    Rule("use-instead", "config-deprecated", r"please use .{1,60} instead|use `?-?-[\w.-]+`? instead",
         fix="Use the setting's current name/form for the installed release (see `vllm serve --help`)."),
    # Scheduler limits.
    Rule("scheduler", "scheduler-config",
         r"max_num_batched_tokens|max_num_seqs|max[_ ]num[_ ]scheduled[_ ]tokens|chunked[ _-]prefill|"
         r"long_prefill|token budget|num_scheduler_steps|max-num-batched-tokens|max-num-seqs",
         fix="Adjust the scheduler limits (--max-num-seqs, --max-num-batched-tokens, chunked prefill) as the "
             "message says."),
    # An assertion, or an IndexError/KeyError/AttributeError, raised inside vLLM's own machinery (proposers, model
    # runners, attention metadata, KV-cache managers, schedulers, the compiler) checks vLLM's invariants, not the
    # user's settings: an engine bug. Unless its text hands the user a setting to change (an env var, a flag, "set X
    # to", "requires x=..."), which is config validation written as an assert.
    Rule("internal-assert", "engine-bug",
         rf"(?s)^(?!.*{SETTING})", kinds=INTERNAL_EXC, areas=INTERNAL_AREAS,
         fix="An internal check failed in vLLM: upgrade, or report it with the traceback."),
    Rule("assert-setting", "config-unsupported-combo", SETTING, kinds=INTERNAL_EXC, areas=INTERNAL_AREAS,
         fix="Change the setting the error names: this release rejects the combination."),
    # A prompt longer than the model length the engine was started with (the scheduler ignores the request).
    Rule("prompt-too-long", "config-unsupported-combo",
         r"(?:input )?prompt .{0,40}too long|prompt length .{0,40}(?:longer|larger) than (?:the )?max",
         areas=_f("scheduler", "engine"),
         fix="A prompt is longer than --max-model-len allows: raise --max-model-len (within the model's and the "
             "draft's limits) or shorten the prompt."),
    # What a request asked for, refused by the API server: about that request, not about the deployment.
    Rule("request", "none", kinds=_f("warning", ANY_EXC), areas=_f("entrypoints")),
    # Configuration values vLLM validates (config and argument code).
    Rule("config-value", "config-unsupported-combo",
         r"must (?:be|have|not|match|set|specify|provide|equal|divide)|should (?:be|not)|requires?|"
         r"is required|are required|either .{1,80} or|invalid|expected .{1,80} (?:got|but)|is not a valid|"
         r"unknown|not recognized|please (?:set|specify|provide|use)|too (?:small|large)|greater than|less than|"
         r"smaller than|larger than|at least|at most|positive|non-negative|divisible|multiple of|exceed|"
         r"not allowed|cannot be",
         areas=_f("spec-config", "config", "args", "platform"),
         fix="Change the configuration: vLLM rejects this value or combination."),
    # A ValueError that names the flag or variable to change (not one that says it "should not happen").
    Rule("value-setting", "config-unsupported-combo", rf"(?s)^(?!.*(?:should not happen|should never)).*{SETTING}",
         kinds=_f("ValueError", "TypeError"), not_areas=_f("platform", "platform-worker"),
         fix="Change the setting the error names: this release rejects the value."),
    Rule("config-value-raise", "config-unsupported-combo",
         r"must (?!not happen)\w+|invalid|is not a valid|unknown|not recognized|"
         r"please (?:set|specify|provide|use)|at least|at most|positive|non-negative|divisible|requires?|"
         r"is required|needs? (?:a|an|the)\b|no support for|only valid",
         kinds=_f("ValueError", "TypeError", "VLLMValidationError"),
         fix="Change the configuration: vLLM rejects this value."),
    # A draft checkpoint whose config or weights a speculation model class rejects (raised while building the
    # drafter from its config.json): the checkpoint does not fit the method, whatever the wording.
    Rule("spec-checkpoint-value", "config-unsupported-combo", kinds=_f("ValueError", "TypeError"),
         areas=_f("spec-model"),
         fix="The draft checkpoint's config or weights do not fit this method: use a checkpoint made for this "
             "method, target and release."),
    # A crash the user cannot configure away: internal errors.
    Rule("internal", "engine-bug",
         r"should not happen|should never|unexpected|unreachable|internal error|\bbug\b|invariant|"
         r"inconsistent|mismatch|out of range|not found|failed|failure|error|crash|hang|deadlock|timeout|"
         r"timed out|died|dead|terminated|not loaded|does not have",
         kinds=ERROR_LOGS | EXC_KINDS, not_areas=CONFIG_AREAS,
         fix="An internal failure: upgrade vLLM (check its issue tracker for this message) or report it."),
    # What is left, by where it is raised.
    Rule("config-error", "config-unsupported-combo", kinds=EXC_KINDS, areas=CONFIG_AREAS,
         fix="Change the configuration as the error says."),
    Rule("platform-error", "env-platform", kinds=EXC_KINDS, areas=_f("platform"),
         fix="The platform cannot run this configuration; check the platform's support matrix."),
    Rule("quantization-error", "quantization", kinds=EXC_KINDS | ERROR_LOGS, areas=_f("quantization"),
         fix="The quantization method or its kernel does not support this layer/shape/GPU: check the method "
             "and its requirements for this release."),
    Rule("not-implemented", "env-version", kinds=_f("NotImplementedError"),
         fix="This release does not implement it: upgrade vLLM or choose another method/backend."),
    Rule("runtime-error", "engine-bug", kinds=EXC_KINDS,
         areas=frozenset(SPEC_AREAS | {"model-runner", "worker", "platform-worker", "kv-cache", "scheduler", "engine",
                                       "compilation", "sampling", "attention", "model-loader", "utils"}),
         fix="An internal check failed in vLLM: upgrade, or report it with the traceback."),
    Rule("error-log", "engine-bug", kinds=ERROR_LOGS,
         fix="vLLM logged an error: read it with the lines around it; upgrade or report it."),
]


assert len({r.name for r in RULES}) == len(RULES), "rule names must be unique"


def spec_related(text: str, holes: str, area: str) -> bool:
    return role_of(area) in SPEC_AREAS or bool(re.search(SPEC, text, re.I)) or \
        bool(re.search(r"specul|draft", holes, re.I))


def categorise(text: str, kind: str, area: str, spec: bool) -> tuple[str, str, str]:
    """(category, fix, rule name) for one message; 'none' when no rule says what it means."""
    for r in RULES:
        if r.matches(text, kind, area, spec):
            return r.category, r.fix, r.name
    return "none", "", ""


# --------------------------------------------------------------------------------------------------------------
# Messages from the AST.
LOG_METHODS = {"warning": "warning", "warning_once": "warning", "warn": "warning", "warn_once": "warning",
               "error": "error", "error_once": "error", "exception": "error", "critical": "critical",
               "fatal": "critical"}
WARN_FUNCS = {"print_warning_once": "warning", "warn_for_unimplemented_methods": "warning"}
PCT = re.compile(r"%(?:\((?P<key>\w+)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?(?P<conv>[diouxXeEfFgGcrsa%])")
BRACE = re.compile(r"\{\{|\}\}|\{(?P<field>[^{}!:]*)(?:![rsa])?(?::(?P<spec>[^{}]*))?\}")


@dataclass(frozen=True)
class Hole:
    name: str
    numeric: str = ""  # "int", "float" or ""


Piece = str | Hole


def _hole_name(node: ast.AST) -> str:
    try:
        s = ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of odd nodes
        s = "..."
    s = re.sub(r"[^\w.\[\]()'\"]+", "", s)[:40].replace("{", "").replace("}", "")
    return s or "..."


def _spec_numeric(spec: str) -> str:
    if not spec:
        return ""
    if spec[-1:] in "dn" and not spec.endswith("%"):
        return "int"
    if spec[-1:] in "eEfFgG%":
        return "float"
    if spec.endswith(","):
        return "int"
    return ""


@dataclass
class Scope:
    # name -> [(line, "=" or "+=", value, the conditional statements (ids) the assignment sits in)]
    assigns: dict[str, list[tuple[int, str, ast.AST, frozenset[int]]]] = field(default_factory=dict)


CONDITIONAL = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match) + \
    ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
NEW_SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _collect_assigns(body: ast.AST) -> Scope:
    sc = Scope()

    def walk(node: ast.AST, conds: frozenset[int]) -> None:
        for n in ast.iter_child_nodes(node):
            if isinstance(n, NEW_SCOPE):
                continue
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                sc.assigns.setdefault(n.targets[0].id, []).append((n.lineno, "=", n.value, conds))
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
                sc.assigns.setdefault(n.target.id, []).append((n.lineno, "=", n.value, conds))
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and isinstance(n.op, ast.Add):
                sc.assigns.setdefault(n.target.id, []).append((n.lineno, "+=", n.value, conds))
            walk(n, conds | {id(n)} if isinstance(n, CONDITIONAL) else conds)

    walk(body, frozenset())
    for v in sc.assigns.values():
        v.sort(key=lambda t: t[0])
    return sc


class Renderer:
    """Renders a message expression to pieces (literal text and holes), following simple local assignments."""

    def __init__(self, scopes: list[Scope], conds: frozenset[int] = frozenset()):
        self.scopes = scopes  # innermost first
        self.conds = conds  # the conditional statements the message sits in

    def render(self, node: ast.AST, line: int, depth: int = 0) -> list[Piece]:
        if depth > 6:
            return [Hole(_hole_name(node))]
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else [Hole(repr(node.value)[:20])]
        if isinstance(node, ast.JoinedStr):
            out: list[Piece] = []
            for v in node.values:
                if isinstance(v, ast.Constant) and isinstance(v.value, str):
                    out.append(v.value)
                elif isinstance(v, ast.FormattedValue):
                    spec = ""
                    if isinstance(v.format_spec, ast.JoinedStr):
                        spec = "".join(x.value for x in v.format_spec.values
                                       if isinstance(x, ast.Constant) and isinstance(x.value, str))
                    out.append(Hole(_hole_name(v.value), _spec_numeric(spec)))
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.render(node.left, line, depth + 1) + self.render(node.right, line, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left = self.render(node.left, line, depth + 1)
            if any(isinstance(p, str) for p in left):
                args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
                return percent_format(left, list(args))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            base = self.render(node.func.value, line, depth + 1)
            if any(isinstance(p, str) for p in base):
                return brace_format(base, node.args, {k.arg: k.value for k in node.keywords if k.arg})
        if isinstance(node, ast.IfExp):
            return self.render(node.body, line, depth + 1)
        if isinstance(node, ast.Name):
            val = self._resolve(node.id, line, depth)
            if val is not None:
                return val
        return [Hole(_hole_name(node))]

    def _resolve(self, name: str, line: int, depth: int) -> list[Piece] | None:
        for sc in self.scopes:
            hist = [a for a in sc.assigns.get(name, []) if a[0] < line]
            if not hist:
                continue
            start = max((i for i, a in enumerate(hist) if a[1] == "="), default=None)
            if start is None:
                return None
            first = hist[start]
            out = self.render(first[2], first[0], depth + 1)
            for ln, _, val, conds in hist[start + 1:]:
                # Text appended under a condition the message does not share may or may not be there: a hole
                # (`msg += "; setting cudagraph_mode=PIECEWISE"` in one branch, `"...=NONE"` in the other).
                out = out + (self.render(val, ln, depth + 1) if conds <= self.conds else [Hole("...")])
            return out
        return None


def _substitute(pieces: list[Piece], rx: re.Pattern[str], repl: Callable[[re.Match[str]], Piece]) -> list[Piece]:
    """Each match of `rx` in the literal pieces replaced by repl(match) (a hole, or literal text)."""
    out: list[Piece] = []
    for p in pieces:
        if isinstance(p, Hole):
            out.append(p)
            continue
        pos = 0
        for m in rx.finditer(p):
            out += [p[pos:m.start()], repl(m)]
            pos = m.end()
        out.append(p[pos:])
    return out


def percent_format(pieces: list[Piece], args: Sequence[ast.AST]) -> list[Piece]:
    """`"... %s ..." % args` or a logger call's lazy %-formatting: each conversion becomes a hole."""
    arg = iter(args)

    def repl(m: re.Match[str]) -> Piece:
        conv = m["conv"]
        if conv == "%":
            return "%"
        node = None if m["key"] else next(arg, None)
        name = m["key"] or (_hole_name(node) if node is not None else "...")
        return Hole(name, "int" if conv in "diu" else "float" if conv in "eEfFgG" else "")

    return _substitute(pieces, PCT, repl)


def brace_format(pieces: list[Piece], args: Sequence[ast.AST], kwargs: dict[str, ast.AST]) -> list[Piece]:
    """`"...{}...".format(...)`: each replacement field becomes a hole named by its argument."""
    auto = iter(args)

    def repl(m: re.Match[str]) -> Piece:
        tok = m.group(0)
        if tok in ("{{", "}}"):
            return tok[0]
        fld = (m["field"] or "").split(".")[0].split("[")[0]
        if fld == "":
            node = next(auto, None)
        elif fld.isdigit():
            node = args[int(fld)] if int(fld) < len(args) else None
        else:
            node = kwargs.get(fld)
        return Hole(_hole_name(node) if node is not None else (fld or "..."), _spec_numeric(m["spec"] or ""))

    return _substitute(pieces, BRACE, repl)


def _merge(pieces: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for p in pieces:
        if isinstance(p, str):
            if not p:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += p
                continue
        elif out and isinstance(out[-1], Hole):
            out[-1] = Hole(out[-1].name)  # two holes in a row: one hole that matches anything
            continue
        out.append(p)
    return out


@dataclass(frozen=True)
class Msg:
    kind: str
    pieces: tuple[Piece, ...]
    line: int


def _exc_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    else:
        return None
    if re.search(r"(?:Error|Exception|Exit|Warning|Failure|Interrupt)$", name) and name[:1].isupper():
        return name
    return None


def _receiver(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _receiver(node.func)
    return ""


class Extractor(ast.NodeVisitor):
    def __init__(self, tree: ast.Module):
        self.module_scope = _collect_assigns_module(tree)
        self.scopes: list[Scope] = [self.module_scope]
        self.msgs: list[Msg] = []
        self.classes: list[str] = []
        self.conds: list[int] = []

    def _add(self, kind: str, node: ast.AST | None, line: int, extra_args: list[ast.AST] | None = None) -> None:
        if node is None:
            return
        r = Renderer(self.scopes, frozenset(self.conds))
        pieces = r.render(node, line)
        if extra_args:
            pieces = percent_format(pieces, extra_args)
        pieces = _merge(pieces)
        if any(isinstance(p, str) and p.strip() for p in pieces):
            self.msgs.append(Msg(kind, tuple(pieces), line))

    def _visit_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self.scopes.insert(0, _collect_assigns(node))
        saved, self.conds = self.conds, []
        self.generic_visit(node)
        self.conds = saved
        self.scopes.pop(0)

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, CONDITIONAL):
            self.conds.append(id(node))
            super().generic_visit(node)
            self.conds.pop()
        else:
            super().generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # An exception class's fixed message (`ENGINE_DEAD_MESSAGE = "..."` passed to super().__init__).
        self.classes.append(node.name)
        if re.search(r"(?:Error|Exception)$", node.name):
            for n in node.body:
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                        and re.search(r"MESSAGE|MSG", n.targets[0].id) and not n.targets[0].id.startswith("CLIENT"):
                    self._add(node.name, n.value, n.lineno)
        self.generic_visit(node)
        self.classes.pop()

    visit_FunctionDef = _visit_scope
    visit_AsyncFunctionDef = _visit_scope

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        name = _exc_name(exc) if exc is not None else None
        if name and isinstance(exc, ast.Call) and exc.args:
            self._add(name, exc.args[0], node.lineno)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        if node.msg is not None:
            self._add("AssertionError", node.msg, node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        if isinstance(f, ast.Attribute) and node.args:
            recv = _receiver(f.value)
            if f.attr in LOG_METHODS and re.search(r"log", recv, re.I):
                self._add(LOG_METHODS[f.attr], node.args[0], node.lineno, list(node.args[1:]) or None)
            elif f.attr == "error" and re.search(r"parser", recv, re.I):
                self._add("argparse", node.args[0], node.lineno)
            elif f.attr == "warn" and recv == "warnings":
                cat = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "category"), None)
                self._add(_receiver(cat) if cat is not None else "UserWarning", node.args[0], node.lineno)
        if isinstance(f, ast.Attribute) and f.attr == "__init__" and node.args and isinstance(f.value, ast.Call) \
                and isinstance(f.value.func, ast.Name) and f.value.func.id == "super" and self.classes \
                and re.search(r"(?:Error|Exception)$", self.classes[-1]):
            self._add(self.classes[-1], node.args[0], node.lineno)  # an exception class's own message
        elif isinstance(f, ast.Name) and f.id in WARN_FUNCS and node.args:
            self._add(WARN_FUNCS[f.id], node.args[0], node.lineno)
        self.generic_visit(node)


def _collect_assigns_module(tree: ast.Module) -> Scope:
    sc = Scope()
    for n in tree.body:  # module-level constants only
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            sc.assigns.setdefault(n.targets[0].id, []).append((0, "=", n.value, frozenset()))
    return sc


def extract(text: str) -> list[Msg]:
    """Every message raised or logged in one file's source (never executed)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    ex = Extractor(tree)
    ex.visit(tree)
    return ex.msgs


# --------------------------------------------------------------------------------------------------------------
# Templates and regexes.
NUM_INT = r"-?\d[\d,_]*"
NUM_FLOAT = r"-?(?:\d[\d,_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?%?|-?inf|nan"


def template_of(pieces: tuple[Piece, ...]) -> str:
    """The message with its holes as {name}; literal braces doubled, as in a format string."""
    return "".join(p.replace("{", "{{").replace("}", "}}") if isinstance(p, str) else "{" + p.name + "}"
                   for p in pieces)


def _literal_rx(text: str) -> str:
    """A literal chunk as regex: words escaped, a run of several whitespace characters as \\s+."""
    return "".join(r"\s+" if w[:1].isspace() and len(w) > 1 else " " if w[:1].isspace() else re.escape(w)
                   for w in re.split(r"(\s+)", text) if w)


def first_line(pieces: tuple[Piece, ...]) -> list[Piece]:
    out: list[Piece] = []
    for p in pieces:
        if isinstance(p, str) and "\n" in p:
            head = p.split("\n", 1)[0]
            # A hole before the newline is the first line's text (`f"{guidance}\nOriginal error: ..."`).
            if head or any(isinstance(x, Hole) or x.strip() for x in out):
                out.append(head)
                break
            nxt = p.split("\n", 1)[1].split("\n", 1)[0]
            out = [nxt]  # the message starts with a newline: its first line is the next one
            if nxt.strip():
                break
            continue
        out.append(p)
    return _merge(out)


def regex_and_gate(pieces: tuple[Piece, ...]) -> tuple[str, str]:
    """A regex for the message's first rendered line and its longest literal chunk (the gate)."""
    line = first_line(pieces)
    # Leading/trailing holes add nothing to a search; whitespace at the ends is trimmed by log readers.
    while line and isinstance(line[0], Hole):
        line = line[1:]
    while line and isinstance(line[-1], Hole):
        line = line[:-1]
    if line and isinstance(line[0], str):
        line[0] = line[0].lstrip()
    if line and isinstance(line[-1], str):
        line[-1] = line[-1].rstrip()
    # A long message is matched on its first REGEX_CHARS characters: as specific, smaller, and it still matches
    # a line cut short where the log was pasted.
    cut: list[Piece] = []
    size = 0
    for p in line:
        if isinstance(p, str) and size + len(p) > REGEX_CHARS:
            head = p[:max(0, REGEX_CHARS - size)]
            head = head[:head.rfind(" ")] if " " in head else head
            if head.strip():
                cut.append(head.rstrip())
            break
        cut.append(p)
        size += len(p) if isinstance(p, str) else 1
    line = cut
    while line and isinstance(line[-1], Hole):
        line = line[:-1]
    parts: list[str] = []
    for p in line:
        if isinstance(p, str):
            parts.append(_literal_rx(p))
        else:
            parts.append(f"(?:{NUM_INT})" if p.numeric == "int" else f"(?:{NUM_FLOAT})" if p.numeric == "float"
                         else ".*?")
    literals = [p.strip() for p in line if isinstance(p, str)]
    gate = max(literals, key=len) if literals else ""
    return "".join(parts), gate


# --------------------------------------------------------------------------------------------------------------
# Sources: a git directory or a folder of sdists.
def vkey(v: str) -> tuple[int, ...]:
    """Release order: 0.10.1.1 > 0.10.1; 0.8.5.post1 > 0.8.5; rc/dev sort before the release."""
    m = re.fullmatch(r"(\d+(?:\.\d+)*)(?:\.?post(\d+))?(?:\.?(?:rc|dev|a|b)(\d+))?", v)
    if not m:
        return (-1,)
    nums = [int(x) for x in m.group(1).split(".")] + [0] * (4 - len(m.group(1).split(".")))
    post = int(m.group(2)) if m.group(2) else 0
    pre = -1000 + int(m.group(3)) if m.group(3) else 0
    return (*nums[:4], pre, post)


RELEASE = re.compile(r"\d+\.\d+\.\d+(?:\.\d+)?(?:\.post\d+)?")


@dataclass(frozen=True)
class Project:
    """What is mined: vLLM itself, or a platform plugin released on its own (vllm-ascend) whose tags are its own
    releases (each pinned to a vLLM release), never vLLM's."""

    name: str  # the distribution on the package index
    package: str  # the top-level package whose files are mined
    dist: str  # the archive name prefix (vllm-X.tar.gz, vllm_ascend-X.tar.gz)
    release: re.Pattern[str]  # which version strings are releases
    min_version: str
    repo: str  # where its source and tags live


PROJECTS = {
    "vllm": Project("vllm", "vllm", "vllm", RELEASE, MIN_VERSION, "https://github.com/vllm-project/vllm"),
    # vllm-ascend publishes release candidates as its releases (v0.9.2rc1, v0.10.0rc1, ... between finals).
    "vllm-ascend": Project("vllm-ascend", "vllm_ascend", "vllm_ascend",
                           re.compile(r"\d+\.\d+\.\d+(?:\.post\d+)?(?:rc\d+)?"), "0.7.1rc1",
                           "https://github.com/vllm-project/vllm-ascend"),
}
VLLM = PROJECTS["vllm"]


class GitSource:
    def __init__(self, git_dir: str, project: Project = VLLM):
        self.git_dir = git_dir
        self.project = project
        tags = self._git("tag", "--list").split()
        self.tags = {t[1:]: t for t in tags if t.startswith("v") and project.release.fullmatch(t[1:])}
        self.kind = "git"
        self.origin = f"git tags of {os.path.basename(os.path.abspath(git_dir))}"

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", self.git_dir, *args], check=True, capture_output=True,
                              text=True).stdout

    def versions(self) -> list[str]:
        return sorted(self.tags, key=vkey)

    def read(self, version: str, path: str) -> str | None:
        """One file of a release (a document: the plugin's compatibility matrix), or None."""
        try:
            return self._git("show", f"{self.tags[version]}:{path}")
        except subprocess.CalledProcessError:
            return None

    def files(self, version: str, want: Callable[[str], object] = area_of) -> Iterator[tuple[str, str]]:
        """The release's .py files that `want` picks (by default those of a mined area)."""
        tag = self.tags[version]
        paths = [p for p in self._git("ls-tree", "-r", "--name-only", tag, "--", self.project.package).splitlines()
                 if p.endswith(".py") and want(p)]
        if not paths:
            return
        proc = subprocess.Popen(["git", "--git-dir", self.git_dir, "cat-file", "--batch"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for p in paths:
                proc.stdin.write(f"{tag}:{p}\n".encode())
                proc.stdin.flush()
                header = proc.stdout.readline().split()
                if len(header) < 3 or header[1] != b"blob":
                    continue
                data = proc.stdout.read(int(header[2]))
                proc.stdout.read(1)
                yield p, data.decode("utf-8", "replace")
        finally:
            proc.stdin.close()
            proc.wait()


class SdistSource:
    """A folder of release archives: sdists vllm-X.tar.gz, and wheels vllm-X-*.whl for the releases published
    without an sdist (0.4.0, 0.4.0.post1, 0.15.0, 0.15.1 on PyPI); a wheel holds the same vllm/*.py files.
    For a plugin, its own archives (vllm_ascend-X.tar.gz)."""

    def __init__(self, folder: str, project: Project = VLLM):
        self.folder = Path(folder)
        self.project = project
        self.archives: dict[str, Path] = {}
        pre = project.dist + "-"
        for f in sorted(self.folder.glob(pre + "*.whl")):
            v = f.name.split("-")[1]
            if project.release.fullmatch(v):
                self.archives.setdefault(v, f)
        for f in self.folder.glob(pre + "*.tar.gz"):
            v = f.name[len(pre):-len(".tar.gz")]
            if project.release.fullmatch(v):
                self.archives[v] = f  # the sdist when there is one
        self.kind = "sdist"
        self.origin = (f"release archives from PyPI: sdists ({project.dist}-X.tar.gz, sha256 checked against the "
                       "index), wheels where a release has no sdist")

    def versions(self) -> list[str]:
        return sorted(self.archives, key=vkey)

    def wheels(self) -> list[str]:
        return [v for v in self.versions() if self.archives[v].suffix == ".whl"]

    def _members(self, version: str) -> Iterator[tuple[str, Callable[[], bytes | None]]]:
        arch = self.archives[version]
        if arch.suffix == ".whl":
            with zipfile.ZipFile(arch) as zf:
                for name in zf.namelist():
                    yield name, lambda name=name: zf.read(name)  # type: ignore[misc]
            return
        with tarfile.open(arch, "r:gz") as tf:
            for m in tf:
                if m.isfile():
                    rel = m.name.split("/", 1)[1] if "/" in m.name else m.name
                    yield rel, lambda m=m: (fh.read() if (fh := tf.extractfile(m)) is not None else None)  # type: ignore[misc]

    def read(self, version: str, path: str) -> str | None:
        for rel, data in self._members(version):
            if rel == path:
                got = data()
                return got.decode("utf-8", "replace") if got is not None else None
        return None

    def files(self, version: str, want: Callable[[str], object] = area_of) -> Iterator[tuple[str, str]]:
        for rel, data in self._members(version):
            if rel.endswith(".py") and want(rel):
                got = data()
                if got is not None:
                    yield rel, got.decode("utf-8", "replace")


class ChainSource:
    """The git tags, and the release archives for releases the git snapshot does not have yet (a plugin's newest
    releases reach PyPI before a snapshot is taken)."""

    def __init__(self, git: GitSource, sdists: SdistSource):
        self.git, self.sdists = git, sdists
        self.kind = "git+sdist"
        self.origin = f"{git.origin}; for releases without a tag there: {sdists.origin}"

    def _of(self, version: str) -> GitSource | SdistSource:
        return self.git if version in self.git.tags else self.sdists

    def versions(self) -> list[str]:
        return sorted(set(self.git.versions()) | set(self.sdists.versions()), key=vkey)

    def read(self, version: str, path: str) -> str | None:
        return self._of(version).read(version, path)

    def files(self, version: str, want: Callable[[str], object] = area_of) -> Iterator[tuple[str, str]]:
        return self._of(version).files(version, want)


Source = GitSource | SdistSource | ChainSource


def download_sdists(dest: str, min_version: str = MIN_VERSION, project: Project = VLLM) -> list[str]:
    """Fetch every release >= min_version that `dest` lacks from PyPI's simple index (PEP 691 JSON), sha256
    checked: its sdist, or for a release published without one, its smallest x86_64 wheel."""
    os.makedirs(dest, exist_ok=True)
    req = urllib.request.Request(f"https://pypi.org/simple/{project.name}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as r:  # noqa: S310 - the package index, https only
        index = json.load(r)
    per_version: dict[str, dict] = {}
    dist = re.escape(project.dist)
    for f in index.get("files", []):
        if f.get("yanked") or not f["url"].startswith("https://"):
            continue
        m = re.fullmatch(rf"{dist}-(.+)\.tar\.gz", f["filename"])
        w = re.fullmatch(rf"{dist}-([^-]+)-.*x86_64\.whl", f["filename"])
        v = m.group(1) if m else w.group(1) if w else None
        if v is None or not project.release.fullmatch(v) or vkey(v) < vkey(min_version):
            continue
        best = per_version.get(v)
        if best is None or (m and not best["filename"].endswith(".tar.gz")) or \
                (w and not best["filename"].endswith(".tar.gz") and f.get("size", 0) < best.get("size", 0)):
            per_version[v] = f
    have = set(SdistSource(dest, project).versions())
    got = []
    for v, f in sorted(per_version.items(), key=lambda kv: vkey(kv[0])):
        if v in have:
            continue
        out = os.path.join(dest, f["filename"])
        with urllib.request.urlopen(f["url"], timeout=900) as r:  # noqa: S310
            data = r.read()
        if hashlib.sha256(data).hexdigest() != f.get("hashes", {}).get("sha256"):
            print(f"sha256 mismatch, skipped: {f['filename']}", file=sys.stderr)
            continue
        Path(out + ".part").write_bytes(data)
        os.replace(out + ".part", out)
        got.append(v)
    return got


def index_versions(project: Project = VLLM) -> list[str]:
    """Release versions on the package index (`pip index versions NAME`), or [] when it cannot be asked."""
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", project.name], capture_output=True,
                             text=True, timeout=300).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    m = re.search(r"Available versions:\s*(.+)", out)
    return sorted((v.strip() for v in m.group(1).split(",") if project.release.fullmatch(v.strip())),
                  key=vkey) if m else []


# --------------------------------------------------------------------------------------------------------------
@dataclass
class Agg:
    """One message across releases: keyed by its regex, so a hole renamed between releases (`{n}` -> `{self.n}`)
    or a kind changed (ValueError -> VLLMValidationError) stays the same message; kind and text are the newest."""

    kind: str
    pieces: tuple[Piece, ...]
    kinds: set[str] = field(default_factory=set)
    versions: list[str] = field(default_factory=list)
    sites: dict[str, tuple[str, int]] = field(default_factory=dict)  # path -> (newest tag, line)


def mine(source: Source, min_version: str = MIN_VERSION, max_version: str | None = None,
         log: bool = True) -> tuple[list[str], dict[str, Agg]]:
    versions = [v for v in source.versions() if vkey(v) >= vkey(min_version)
                and (max_version is None or vkey(v) <= vkey(max_version))]
    cache: dict[str, list[Msg]] = {}  # sha1 of a file's text -> its messages (most files repeat across releases)
    aggs: dict[str, Agg] = {}
    keys: dict[tuple[Piece, ...], tuple[str, str]] = {}  # a message's pieces -> (regex, gate)
    for v in versions:
        t0 = time.time()
        seen: set[str] = set()
        nfiles = 0
        for path, text in source.files(v):
            nfiles += 1
            h = hashlib.sha1(text.encode()).hexdigest()
            msgs = cache.get(h)
            if msgs is None:
                msgs = cache[h] = extract(text)
            for m in msgs:
                rg = keys.get(m.pieces)
                if rg is None:
                    rg = keys[m.pieces] = regex_and_gate(m.pieces)
                if len(rg[1]) < MIN_GATE:
                    continue  # too little fixed text to identify a line
                key = rg[0]
                a = aggs.get(key)
                if a is None:
                    a = aggs[key] = Agg(m.kind, m.pieces)
                a.kind, a.pieces = m.kind, m.pieces  # releases come oldest first: the newest wins
                a.kinds.add(m.kind)
                if key not in seen:
                    seen.add(key)
                    a.versions.append(v)
                a.sites[path] = ("v" + v, m.line)
        if log:
            print(f"{v}: {nfiles} files, {len(seen)} messages ({time.time() - t0:.1f}s)", file=sys.stderr)
    return versions, aggs


def ranges(present: list[str], releases: list[str]) -> list[list[str]]:
    """Runs of consecutive releases in which a message exists: [[first, last], ...]."""
    idx = sorted(releases.index(v) for v in present)
    out: list[list[int]] = []
    for i in idx:
        if out and i == out[-1][1] + 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return [[releases[a], releases[b]] for a, b in out]


# The plugin's release compatibility matrix: each release -> the vLLM release(s) it runs on, and its CANN / torch /
# torch_npu. Read from each release's own copy of its versioning policy (a newer copy's row wins).
MATRIX_DOCS = ("docs/source/community/versioning_policy.md", "docs/source/developer_guide/versioning_policy.md")
MATRIX_COLUMNS = {"vllm": r"^vllm$", "python": r"^python$", "cann": r"cann", "torch": r"pytorch|torch"}


def parse_matrix(text: str, project: Project) -> dict[str, dict[str, Any]]:
    """Rows of the markdown table whose first column is the plugin's release (`| v0.9.1 | v0.9.1 | ... |`)."""
    out: dict[str, dict[str, Any]] = {}
    cols: dict[str, int] = {}
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            cols = {} if not line.strip() else cols
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = [c.lower() for c in cells]
        if names and "ascend" in names[0] and any(n == "vllm" for n in names):
            cols = {}
            for key, rx in MATRIX_COLUMNS.items():
                i = next((i for i, n in enumerate(names[1:], 1) if re.search(rx, n) and i not in cols.values()), None)
                if i is not None:
                    cols[key] = i
            continue
        if not cols or not cells or not re.fullmatch(r"v?" + project.release.pattern, cells[0]):
            continue
        row: dict[str, Any] = {}
        vllm = cells[cols["vllm"]] if "vllm" in cols and cols["vllm"] < len(cells) else ""
        row["vllm"] = [x.strip().lstrip("v") for x in re.split(r"[/,]", vllm) if re.fullmatch(
            r"v?\d+\.\d+\.\d+(?:\.\d+)?(?:\.?post\d+)?(?:rc\d+)?", x.strip())]
        if not row["vllm"]:
            continue
        for key in ("python", "cann"):
            if key in cols and cols[key] < len(cells) and cells[cols[key]]:
                row[key] = cells[cols[key]]
        if "torch" in cols and cols["torch"] < len(cells) and "/" in cells[cols["torch"]]:
            row["torch"], row["torch_npu"] = (x.strip() for x in cells[cols["torch"]].split("/", 1))
        out[cells[0].lstrip("v")] = row
    return out


NOTES_DOC = "docs/source/user_guide/release_notes.md"
NOTES_PIN = re.compile(r"(?:based on|align\w* (?:the plugin )?with|built (?:on|against)|compatible with) (?:the )?"
                       r"(?:upstream )?vLLM v?(\d+\.\d+\.\d+(?:\.\d+)?(?:\.?post\d+)?)", re.I)


def notes_pin(text: str, version: str) -> str | None:
    """The vLLM release a release's own notes say it is built on (`## v0.26.0rc1 - date` ... 'aligned with upstream
    vLLM v0.26.0'), from its section's opening paragraph."""
    m = re.search(rf"^## v{re.escape(version)}\b[^\n]*\n+(?P<para>(?:[^\n#][^\n]*\n?)+)", text, re.M)
    got = NOTES_PIN.search(m["para"]) if m else None
    return got.group(1) if got else None


def compat_matrix(source: Source, versions: list[str], project: Project) -> dict[str, dict[str, Any]]:
    """Every release's row of the matrix, from the newest release's document that lists it (with its file@tag);
    a release no matrix lists takes the vLLM release its own notes name."""
    out: dict[str, dict[str, Any]] = {}
    for v in versions:
        for path in MATRIX_DOCS:
            text = source.read(v, path)
            if text:
                for rel, row in parse_matrix(text, project).items():
                    out[rel] = {**row, "source": f"{path}@v{v}"}
                break
    missing = [v for v in versions if v not in out]
    for doc in reversed(versions if missing else []):  # the newest notes first: they cover the releases before
        text = source.read(doc, NOTES_DOC) or ""
        for v in [v for v in missing if v not in out]:
            pin = notes_pin(text, v)
            if pin:
                out[v] = {"vllm": [pin], "source": f"{NOTES_DOC}@v{doc}"}
    for v in [v for v in missing if v not in out]:
        # Neither the matrix nor the notes: the vLLM tag the release's own image builds (`ARG VLLM_TAG=v0.28.0`).
        got = re.search(r"^ARG VLLM_TAG=v?(\d+\.\d+\.\d+(?:\.\d+)?(?:\.?post\d+)?)\s*$", source.read(v, "Dockerfile")
                        or "", re.M)
        if got:
            out[v] = {"vllm": [got.group(1)], "source": f"Dockerfile@v{v}"}
    return dict(sorted(out.items(), key=lambda kv: vkey(kv[0])))


def classify(e: dict, literal: str, holes: str, area: str, spec: bool | None = None) -> dict:
    """Set an entry's category, rule, spec_related and if_spec from its message text (holes as '{}'), the names
    in its holes, its kind and the area it is raised in, by RULES; `spec` overrides the test for speculation."""
    if spec is None:
        spec = spec_related(literal, holes, area)
    category, _, rule = categorise(literal, e["kind"], area, spec)
    e["category"] = category
    for k in ("rule", "spec_related", "if_spec"):
        e.pop(k, None)
    if rule:
        e["rule"] = rule  # its fix is in the header's "rules"
    if spec:
        e["spec_related"] = True
    if not spec and holes:
        # The same text with speculation in its holes ("Model Runner V2 does not yet support {features};
        # using the V1 model runner instead"): the loader applies this category when the rendered line says so.
        s_cat, _, s_rule = categorise(literal.replace("{}", "speculative decoding"), e["kind"], area, True)
        if s_cat != category:
            e["if_spec"] = {"category": s_cat, "rule": s_rule}
    return e


TEMPLATE_HOLE = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def stored_text(e: dict) -> tuple[str, str]:
    """(literal text with holes as '{}', the holes' names) of a stored entry, as mining had them: from its full
    `text` when the template was cut, else from the template (a cut template without `text`, from a catalogue
    mined before `text` was stored, gives what is left of it)."""
    literal: list[str] = []
    holes: list[str] = []
    t = e.get("text") or e["template"]
    pos = 0
    for m in TEMPLATE_HOLE.finditer(t):
        literal.append(t[pos:m.start()])
        if m.group(0) in ("{{", "}}"):
            literal.append(m.group(0)[0])
        else:
            literal.append("{}")
            holes.append(m.group(1))
        pos = m.end()
    literal.append(t[pos:])
    return "".join(literal), " ".join(holes)


def entry_path(e: dict) -> str:
    """The file the entry is categorised by: its newest source (sources are newest first)."""
    return e["sources"][0].split("@", 1)[0]


def entry_area(e: dict) -> str:
    return area_of(entry_path(e)) or ""


def recategorize_entry(e: dict) -> dict:
    """One stored entry with RULES applied again (a copy; the message, its sources and releases are kept)."""
    literal, holes = stored_text(e)
    area = entry_area(e)
    spec = spec_related(literal, holes, area)
    if e["template"].endswith("…") and "text" not in e:
        spec = spec or bool(e.get("spec_related"))  # text past the cut may have named speculation
    return ordered(classify(dict(e), literal, holes, area, spec))


ENTRY_KEYS = ("template", "regex", "gate", "kind", "first_version", "last_version", "sources", "category", "text",
              "project", "rule", "kinds", "spec_related", "if_spec", "ranges")


def ordered(e: dict) -> dict:
    """An entry's keys in the file's order (so a recategorized file differs from its source only where a category
    did)."""
    rank = {k: i for i, k in enumerate(ENTRY_KEYS)}
    return dict(sorted(e.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def _counts(entries: list[dict]) -> dict[str, Any]:
    cats: dict[str, int] = {}
    for e in entries:
        cats[e["category"]] = cats.get(e["category"], 0) + 1
    return {"entries": len(entries), "spec_related": sum(bool(e.get("spec_related")) for e in entries),
            "per_category": dict(sorted(cats.items(), key=lambda kv: -kv[1]))}


def _areas(project: Project) -> dict[str, str]:
    """The areas (name -> path pattern) of one project's files, as the header lists them."""
    return {a: rx.pattern for a, rx in AREAS if rx.pattern.startswith(f"^{project.package}/")}


def recategorize(data: dict) -> dict:
    """The catalogue with RULES applied again to every stored entry, without mining the source: categories,
    rules, if_spec and each project's header rules, areas and counts follow the current RULES; all else is kept."""
    entries = [recategorize_entry(e) for e in data["entries"]]
    header = dict(data["header"])
    rules = {r.name: {"category": r.category, "fix": r.fix} for r in RULES}
    header["rules"] = rules
    header["areas"] = _areas(VLLM)
    header["counts"] = _counts([e for e in entries if e.get("project", VLLM.name) == VLLM.name])
    projects = {}
    for name, h in (header.get("projects") or {}).items():
        projects[name] = {**h, "rules": rules, "counts": _counts([e for e in entries if e.get("project") == name])}
        if name in PROJECTS:
            projects[name]["areas"] = _areas(PROJECTS[name])
    if projects:
        header["projects"] = projects
    header["recategorized_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"header": header, "entries": entries}


def build(versions: list[str], aggs: dict[str, Agg], source_kind: str, origin: str,
          index: list[str] | None = None, project: Project = VLLM) -> dict:
    entries = []
    for a in aggs.values():
        kind, template = a.kind, template_of(a.pieces)
        rx, gate = regex_and_gate(a.pieces)
        if len(gate) < MIN_GATE:
            continue
        # The newest site first; categorise by it.
        sites = sorted(a.sites.items(), key=lambda kv: (vkey(kv[1][0][1:]), kv[0]), reverse=True)
        path = sites[0][0]
        literal = "".join(p if isinstance(p, str) else "{}" for p in a.pieces)
        holes = " ".join(p.name for p in a.pieces if isinstance(p, Hole))
        shown = template if len(template) <= TEMPLATE_CHARS else template[:TEMPLATE_CHARS - 1] + "…"
        e: dict = {"template": shown, "regex": rx, "gate": gate, "kind": kind,
                   "first_version": a.versions[0], "last_version": a.versions[-1],
                   "sources": [f"{p}@{tag}:{ln}" for p, (tag, ln) in sites[:2]], "category": ""}
        if shown != template:
            e["text"] = template  # what the rules read (the template is cut); --recategorize reads it again
        if project is not VLLM:
            e["project"] = project.name  # its versions are the plugin's releases, not vLLM's
        if len(a.kinds) > 1:
            e["kinds"] = sorted(a.kinds)
        classify(e, literal, holes, area_of(path) or "")
        rs = ranges(a.versions, versions)
        if len(rs) > 1:
            e["ranges"] = rs
        entries.append(ordered(e))
    entries.sort(key=lambda e: (e["sources"][0], e["template"]))
    whose = "vLLM's" if project is VLLM else f"{project.name}'s (the {project.package} package)"
    header: dict[str, Any] = {
        "about": f"{whose} message catalogue: exception texts and warning/error log messages mined from "
                 f"{project.repo}'s source (parsed with ast, never run) for every release listed; categories by the "
                 "rules in scripts/mine_catalogue.py (RULES), not by hand.",
        "project": project.name,
        "made_by": "scripts/mine_catalogue.py",
        "source_kind": source_kind,
        "source": origin,
        "made_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "fields": {"template": "the message, holes as {expression}, literal braces doubled; cut with … past "
                               f"{TEMPLATE_CHARS} characters",
                   "regex": f"matches the rendered first line (its first ~{REGEX_CHARS} characters)",
                   "gate": "fixed text every rendered line holds; the regex is tried only when it is there",
                   "kind": "exception type, or the log level (warning, error, critical), or argparse",
                   "kinds": "every kind the message had across releases, when more than one",
                   "first_version/last_version": "the first and last release that has the message",
                   "ranges": "runs of releases that have it, when it was absent in between",
                   "text": "the whole template, when `template` is cut (the rules read it)",
                   "sources": "path@tag:line, newest first (at most two files)",
                   "spec_related": "true when the message or its module is about speculation (absent: false)",
                   "category/rule": "taxonomy category and the RULES entry that gave it (its fix: header.rules)",
                   "if_spec": "category/rule when the text in its holes names speculation"},
        "releases": versions,
        "first_release": versions[0] if versions else None,
        "newest_release": versions[-1] if versions else None,
        "areas": _areas(project),
        **({"area_roles": {a: r for a, r in AREA_ROLE.items()}} if project is not VLLM else {}),
        "spec_words": SPEC,
        "rules": {r.name: {"category": r.category, "fix": r.fix} for r in RULES},
        "counts": _counts(entries),
    }
    if index:
        header["index_releases"] = [v for v in index if vkey(v) >= vkey(versions[0] if versions else
                                                                         project.min_version)]
        header["missing_from_index"] = [v for v in header["index_releases"] if v not in versions]
    return {"header": header, "entries": entries}


def merge(data: dict, out: Path, project: Project = VLLM) -> dict:
    """One catalogue for the checks: vLLM's entries under the top-level header, and each plugin's entries (tagged
    with `project`) with its own header under header.projects. Mining one project keeps the others' part of `out`."""
    try:
        old = json.loads(out.read_text("utf-8"))
    except (OSError, ValueError):
        old = {"header": {}, "entries": []}
    mine_of = (lambda e: e.get("project", VLLM.name) == project.name)  # noqa: E731
    kept = [e for e in old.get("entries", []) if not mine_of(e)]
    if project is VLLM:
        header = data["header"]
        if old.get("header", {}).get("projects"):
            header["projects"] = old["header"]["projects"]
    else:
        header = old.get("header") or {}
        header.setdefault("projects", {})[project.name] = data["header"]
    entries = sorted(kept + data["entries"], key=lambda e: (e.get("project", ""), e["sources"][0], e["template"]))
    return {"header": header, "entries": entries}


def write(data: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("{\"header\": " + json.dumps(data["header"], ensure_ascii=False) + ",\n\"entries\": [\n")
        fh.write(",\n".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in data["entries"]))
        fh.write("\n]}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--project", choices=sorted(PROJECTS), default=VLLM.name,
                    help="what to mine: vLLM, or a platform plugin (its entries are merged into --out, tagged)")
    ap.add_argument("--git", help="a git directory of the project with its release tags")
    ap.add_argument("--sdists", help="a folder of release sdists (with --git: for releases the git tags lack)")
    ap.add_argument("--download", metavar="DIR", help="fetch the release sdists DIR lacks from PyPI first")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--min-version")
    ap.add_argument("--max-version")
    ap.add_argument("--check-index", action="store_true",
                    help="record the index's release list (pip index versions NAME) and report missing ones")
    ap.add_argument("--recategorize", action="store_true",
                    help="apply RULES again to the entries of --out (every project's), without mining the source")
    args = ap.parse_args(argv)
    if args.recategorize:
        out = Path(args.out)
        try:
            data = recategorize(json.loads(out.read_text("utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"cannot recategorize {out}: {exc}", file=sys.stderr)
            return 2
        write(data, out)
        print(f"recategorized {len(data['entries'])} entries -> {out}", file=sys.stderr)
        return 0
    project = PROJECTS[args.project]
    min_version = args.min_version or project.min_version
    if args.download:
        got = download_sdists(args.download, min_version, project)
        print(f"downloaded {len(got)} sdists: {', '.join(got)}", file=sys.stderr)
        if not args.sdists:
            args.sdists = args.download
    if not args.sdists and not args.git:
        ap.error("give --git DIR or --sdists DIR")
    t0 = time.time()
    source: Source = (ChainSource(GitSource(args.git, project), SdistSource(args.sdists, project))
                      if args.git and args.sdists else GitSource(args.git, project) if args.git
                      else SdistSource(args.sdists, project))
    versions, aggs = mine(source, min_version, args.max_version)
    if not versions:
        print("no releases found in the source", file=sys.stderr)
        return 2
    index = index_versions(project) if args.check_index else None
    data = build(versions, aggs, source.kind, source.origin, index, project)
    if project is not VLLM:
        data["header"]["compat"] = compat_matrix(source, versions, project)
    data["header"]["mine_seconds"] = round(time.time() - t0, 1)
    write(merge(data, Path(args.out), project), Path(args.out))
    c = data["header"]["counts"]
    print(f"{project.name}: {len(versions)} releases {versions[0]}..{versions[-1]}: {c['entries']} entries, "
          f"{c['spec_related']} spec-related; {c['per_category']}; {time.time() - t0:.0f}s -> {args.out}",
          file=sys.stderr)
    if index is not None and data["header"].get("missing_from_index"):
        print(f"releases on the index but not mined: {data['header']['missing_from_index']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
