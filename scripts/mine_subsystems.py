#!/usr/bin/env python3
"""Mine which vLLM subsystem each module path belongs to, over vLLM's release tags (knowledge/data/subsystems.json).

    python scripts/mine_subsystems.py --git /work/.mirror/kzwrime+vllm/repo [--min-version 0.4.0] [--out PATH]

Reads a vLLM git directory's release tags without a checkout: `git ls-tree -r TAG` lists each release's files and
`git cat-file --batch` reads the few files whose function names matter (the model runners, workers, executors,
engine cores and spec-decode code, parsed with `ast`, never imported). vLLM moves code between releases (CUDA-graph
capture lived in worker/model_runner.py's CUDAGraphRunner, then vllm/compilation/cuda_graph.py and
v1/cudagraph_dispatcher.py, with capture functions in v1/worker/gpu_model_runner.py; V0 spec decode in
vllm/spec_decode/, V1 in vllm/v1/spec_decode/), so every path is kept with the first and last release it exists in.

The rules below say which subsystem a path belongs to (the first rule whose path pattern matches) and which
functions, wherever they are defined, are a subsystem's own (a CUDA-graph capture function in a model runner, the
KV-cache sizing functions of the workers). knowledge/data/crash_subsystems.toml maps each subsystem to a taxonomy
category; knowledge/subsystems.py reads both to attribute a traceback by where in vLLM it was raised.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RELEASE = re.compile(r"v(\d+)\.(\d+)\.(\d+)")
OUT = Path(__file__).resolve().parent.parent / "src/spec_doctor/knowledge/data/subsystems.json"
MIN_VERSION = "0.4.0"  # the first release with speculative decoding (vllm/spec_decode/)


@dataclass(frozen=True)
class Rule:
    name: str
    title: str
    paths: tuple[str, ...]  # regexes over a module path ('vllm/v1/spec_decode/eagle.py'); first rule wins
    functions: str | None = None  # regex over function names that belong to this subsystem wherever defined
    function_files: str | None = None  # regex over the paths whose functions are read for `functions`


# Order matters: a path is the first rule's whose pattern matches it (CUDA-graph code before the rest of
# compilation/, spec decode before samplers and models, quantization before the other model_executor layers).
RULES: tuple[Rule, ...] = (
    Rule("cuda-graph", "CUDA-graph capture and replay",
         (r"^vllm/compilation/(cuda_graph|cuda_piecewise_backend|base_static_graph|breakable_cudagraph)\.py$",
          r"^vllm/v1/cudagraph_dispatcher\.py$", r"^vllm/v1/worker/(gpu/)?\w*cudagraph\w*\.py$",
          r"^vllm/v1/worker/gpu/spec_decode/(\w+/)*cudagraph\w*\.py$", r"^vllm/worker/\w*graph_runner\w*\.py$"),
         # capture, capture_model, _capture_cudagraphs, _warmup_and_capture, graph_capture, ...: not 'capturer'
         functions=r"(^|_)capture(_|$)",
         function_files=r"^vllm/(v1/)?(worker|spec_decode|engine|executor)/|^vllm/v1/spec_decode/|"
                        r"^vllm/distributed/(parallel_state|device_communicators/custom_all_reduce)\.py$"),
    Rule("compilation", "torch.compile integration (vllm/compilation/)", (r"^vllm/compilation/",)),
    Rule("kv-cache-sizing", "KV-cache sizing (memory profiling, blocks that fit)",
         (r"^vllm/v1/core/kv_cache_utils\.py$", r"^vllm/worker/cache_engine\.py$"),
         functions=r"^_?(determine_available_memory|determine_num_available_blocks|check_enough_kv_cache_memory|"
                   r"raise_if_cache_size_invalid|initialize_kv_caches)$",
         function_files=r"^vllm/(v1/)?(worker|engine|executor)/"),
    Rule("spec-decode", "speculative decoding (proposers, drafter models, rejection sampling)",
         (r"^vllm/spec_decode/", r"^vllm/v1/spec_decode/", r"^vllm/v1/worker/gpu/spec_decode/",
          r"^vllm/model_executor/layers/(rejection_sampler|spec_decode_base_sampler|typical_acceptance_sampler)\.py$",
          r"^vllm/v1/sample/rejection_sampler\.py$",
          r"^vllm/model_executor/models/\w*(mtp|eagle|medusa|mlp_speculator|dflash)\w*\.py$")),
    Rule("spec-config", "the speculative configuration", (r"^vllm/config/speculative\.py$",)),
    Rule("quantization", "quantization methods (model_executor/layers/quantization/)",
         (r"^vllm/model_executor/layers/quantization/",)),
    Rule("fused-moe", "fused MoE layers and kernels (model_executor/layers/fused_moe/)",
         (r"^vllm/model_executor/layers/fused_moe/",)),
    Rule("attention", "attention backends", (r"^vllm/attention/", r"^vllm/v1/attention/")),
    Rule("platform", "platform detection and device plugins (vllm/platforms/, vllm/plugins/)",
         (r"^vllm/platforms/", r"^vllm/plugins/")),
    Rule("distributed", "distributed communication (vllm/distributed/)", (r"^vllm/distributed/",)),
    Rule("model-loader", "model and weight loading", (r"^vllm/model_executor/model_loader",)),
    Rule("sampler", "sampling", (r"^vllm/v1/sample/", r"^vllm/model_executor/layers/sampler\.py$",
                                 r"^vllm/model_executor/sampling_metadata\.py$")),
    Rule("hf-config", "reading the model's Hugging Face config",
         (r"^vllm/transformers_utils/config\.py$", r"^vllm/transformers_utils/configs/")),
    Rule("tokenizer", "tokenizers and detokenization",
         (r"^vllm/transformers_utils/(tokenizer|detokenizer)", r"^vllm/tokenizers/")),
    Rule("model-runner", "model runners and workers", (r"^vllm/v1/worker/", r"^vllm/worker/")),
    Rule("model", "model code and layers (model_executor/)", (r"^vllm/model_executor/",)),
)


def vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def subsystem_of(path: str, rules: tuple[Rule, ...] = RULES) -> str | None:
    for rule in rules:
        if any(re.search(p, path) for p in rule.paths):
            return rule.name
    return None


def function_names(text: str) -> set[str]:
    """Every function or method name a module defines (ast; a module ast cannot parse gives none)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


class Git:
    """A git directory read without a checkout; blobs read once each through one `git cat-file --batch`."""

    def __init__(self, git_dir: str):
        self.git_dir = git_dir
        self._blobs: dict[str, str] = {}
        self._batch: subprocess.Popen[bytes] | None = None

    def run(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", self.git_dir, *args], check=True, capture_output=True,
                              text=True).stdout

    def releases(self, min_version: str, max_version: str | None) -> dict[str, str]:
        """version -> tag for the final release tags vX.Y.Z (no rc, no post)."""
        out = {}
        for tag in self.run("tag", "--list").split():
            m = RELEASE.fullmatch(tag)
            if not m:
                continue
            v = ".".join(m.groups())
            if vkey(v) >= vkey(min_version) and (max_version is None or vkey(v) <= vkey(max_version)):
                out[v] = tag
        return dict(sorted(out.items(), key=lambda kv: vkey(kv[0])))

    def tree(self, tag: str) -> dict[str, str]:
        """path -> blob id of every vllm/**/*.py file at the tag."""
        out = {}
        for line in self.run("ls-tree", "-r", tag, "--", "vllm").splitlines():
            meta, _, path = line.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == "blob" and path.endswith(".py"):
                out[path] = parts[2]
        return out

    def blob(self, sha: str) -> str:
        if sha in self._blobs:
            return self._blobs[sha]
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "--git-dir", self.git_dir, "cat-file", "--batch"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(sha.encode() + b"\n")
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        size = int(header[2]) if len(header) == 3 else 0
        data = self._batch.stdout.read(size) if size else b""
        self._batch.stdout.read(1)  # the newline after the object
        self._blobs[sha] = data.decode("utf-8", "replace")
        return self._blobs[sha]

    def close(self) -> None:
        if self._batch is not None:
            assert self._batch.stdin is not None
            self._batch.stdin.close()
            self._batch.wait()


def _span(seen: dict[str, list[str]], key: str, version: str) -> None:
    r = seen.setdefault(key, [version, version])
    r[1] = version


def mine(git: Git, min_version: str = MIN_VERSION, max_version: str | None = None,
         rules: tuple[Rule, ...] = RULES) -> dict[str, Any]:
    """The table: per subsystem its rules, release range, the module paths it holds and the functions of its own
    that are defined elsewhere, each with the first and last release it exists in."""
    releases = git.releases(min_version, max_version)
    if not releases:
        raise SystemExit(f"no release tags >= v{min_version} in {git.git_dir}")
    modules: dict[str, dict[str, list[str]]] = {r.name: {} for r in rules}
    functions: dict[str, dict[str, list[str]]] = {r.name: {} for r in rules}
    compiled = [(r, re.compile(r.functions) if r.functions else None,
                 re.compile(r.function_files) if r.function_files else None) for r in rules]
    for version, tag in releases.items():
        for path, sha in git.tree(tag).items():
            name = subsystem_of(path, rules)
            if name is not None:
                _span(modules[name], path, version)
            wanted = [(r, fx) for r, fx, ff in compiled if fx is not None and ff is not None and ff.search(path)]
            if not wanted:
                continue
            defined = function_names(git.blob(sha))
            for rule, fx in wanted:
                for func in sorted(defined):
                    if fx.search(func):
                        _span(functions[rule.name], f"{path}:{func}", version)
    versions = list(releases)
    out: dict[str, Any] = {}
    for rule in rules:
        mods, funcs = modules[rule.name], functions[rule.name]
        spans = list(mods.values()) + list(funcs.values())
        if not spans:
            continue
        first = min((s[0] for s in spans), key=vkey)
        last = max((s[1] for s in spans), key=vkey)
        where = next((p for p, s in sorted(mods.items()) if s[0] == first), None) or \
            next(k.split(":")[0] for k, s in sorted(funcs.items()) if s[0] == first)
        out[rule.name] = {
            "title": rule.title, "paths": list(rule.paths), "functions": rule.functions,
            "function_files": rule.function_files, "first": first, "last": last,
            "source": f"{where}@{releases[first]}",
            # path -> [first, last] release it exists in; its source is path@v<first>
            "modules": {p: s for p, s in sorted(mods.items())},
            # 'path:function' -> [first, last] release that defines it; its source is path@v<first>
            "defined": {k: s for k, s in sorted(funcs.items())},
        }
    return {"releases": versions, "subsystems": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git", required=True, help="a vLLM git directory with its release tags (bare is fine)")
    ap.add_argument("--min-version", default=MIN_VERSION)
    ap.add_argument("--max-version")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    if not Path(args.git).exists():
        print(f"mine_subsystems: no such git directory: {args.git}", file=sys.stderr)
        return 2
    git = Git(args.git)
    t0 = time.time()
    try:
        table = mine(git, args.min_version, args.max_version)
    except subprocess.CalledProcessError as e:
        print(f"mine_subsystems: git failed: {e.stderr.strip() if e.stderr else e}", file=sys.stderr)
        return 2
    finally:
        git.close()
    table = {"about": "vLLM module paths -> subsystem per release (scripts/mine_subsystems.py); the categories "
                      "these subsystems mean are knowledge/data/crash_subsystems.toml",
             "origin": f"git tags of {args.git} (v{table['releases'][0]}..v{table['releases'][-1]})",
             "command": "python scripts/mine_subsystems.py --git DIR", "seconds": round(time.time() - t0, 1),
             **table}
    text = json.dumps(table, indent=1)
    text = re.sub(r'\[\n\s*("[\d.]+"),\n\s*("[\d.]+")\n\s*\]', r"[\1, \2]", text)  # a range on one line
    Path(args.out).write_text(text + "\n", encoding="utf-8")
    counts = ", ".join(f"{k} {len(v['modules'])}+{len(v['defined'])}" for k, v in table["subsystems"].items())
    print(f"{len(table['releases'])} releases; {counts} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
