"""scripts/mine_subsystems.py on a tiny git repository made here with release tags (real `git`, no checkout read):
paths and functions per subsystem with the releases they exist in, moves between releases, non-release tags left
out; and the mined table that ships (data/subsystems.json) against the mapping that reads it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import load_script

ms = load_script("mine_subsystems")

V040 = {
    "vllm/worker/model_runner.py": "class ModelRunner:\n    def capture_model(self):\n        pass\n\n"
                                   "    def execute_model(self):\n        pass\n",
    "vllm/worker/worker.py": "class Worker:\n    def determine_num_available_blocks(self):\n        pass\n",
    "vllm/spec_decode/spec_decode_worker.py": "def create_spec_worker():\n    pass\n",
    "vllm/model_executor/layers/quantization/fp8.py": "class Fp8LinearMethod:\n    def apply(self):\n        pass\n",
    "vllm/platforms/cuda.py": "def get_device_capability():\n    pass\n",
    "README.md": "not python\n",
}
# 0.5.0: the V0 runner is gone; CUDA-graph capture moved to the V1 runner and compilation/cuda_graph.py
V050 = {
    "vllm/v1/worker/gpu_model_runner.py": "class GPUModelRunner:\n    def _capture_cudagraphs(self):\n        pass\n\n"
                                          "    def init_routed_experts_capturer(self):\n        pass\n",
    "vllm/v1/worker/gpu_worker.py": "class Worker:\n    async def determine_available_memory(self):\n        pass\n",
    "vllm/compilation/cuda_graph.py": "class CUDAGraphWrapper:\n    pass\n",
    "vllm/v1/spec_decode/eagle.py": "class EagleProposer:\n    pass\n",
    "vllm/model_executor/layers/quantization/fp8.py": V040["vllm/model_executor/layers/quantization/fp8.py"],
    "vllm/platforms/cuda.py": "def broken(:\n",  # a module ast cannot parse: no functions, still a path
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


def _release(repo: Path, files: dict[str, str], tag: str) -> None:
    for p in repo.glob("*"):
        if p.name != ".git":
            subprocess.run(["rm", "-rf", str(p)], check=True)
    for path, text in files.items():
        f = repo / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", tag, "--allow-empty")
    _git(repo, "tag", tag)


@pytest.fixture(scope="module")
def vllm_git(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("vllm")
    _git(repo, "init", "-q")
    _release(repo, V040, "v0.4.0")
    _release(repo, {**V050, "vllm/extra.py": "x = 1\n"}, "v0.5.0rc1")  # not a release: left out
    _release(repo, V050, "v0.5.0")
    _release(repo, V050, "v0.3.9")  # before --min-version
    return repo / ".git"


@pytest.fixture(scope="module")
def table(vllm_git) -> dict:
    git = ms.Git(str(vllm_git))
    try:
        return ms.mine(git, "0.4.0")
    finally:
        git.close()


def test_releases_are_the_final_tags_from_the_minimum(table):
    assert table["releases"] == ["0.4.0", "0.5.0"]


def test_paths_keep_the_releases_they_exist_in(table):
    subs = table["subsystems"]
    assert subs["model-runner"]["modules"]["vllm/worker/model_runner.py"] == ["0.4.0", "0.4.0"]
    assert subs["model-runner"]["modules"]["vllm/v1/worker/gpu_model_runner.py"] == ["0.5.0", "0.5.0"]
    assert subs["quantization"]["modules"]["vllm/model_executor/layers/quantization/fp8.py"] == ["0.4.0", "0.5.0"]
    assert subs["cuda-graph"]["modules"] == {"vllm/compilation/cuda_graph.py": ["0.5.0", "0.5.0"]}
    assert subs["spec-decode"]["modules"] == {"vllm/spec_decode/spec_decode_worker.py": ["0.4.0", "0.4.0"],
                                              "vllm/v1/spec_decode/eagle.py": ["0.5.0", "0.5.0"]}
    assert subs["platform"]["modules"]["vllm/platforms/cuda.py"] == ["0.4.0", "0.5.0"]
    assert not any("extra.py" in p for s in subs.values() for p in s["modules"])  # only in the rc


def test_a_subsystems_own_functions_are_found_where_they_moved(table):
    cg = table["subsystems"]["cuda-graph"]
    assert cg["defined"] == {"vllm/v1/worker/gpu_model_runner.py:_capture_cudagraphs": ["0.5.0", "0.5.0"],
                             "vllm/worker/model_runner.py:capture_model": ["0.4.0", "0.4.0"]}  # not '...capturer'
    kv = table["subsystems"]["kv-cache-sizing"]
    assert kv["defined"] == {"vllm/v1/worker/gpu_worker.py:determine_available_memory": ["0.5.0", "0.5.0"],
                             "vllm/worker/worker.py:determine_num_available_blocks": ["0.4.0", "0.4.0"]}


def test_each_subsystem_has_its_range_and_first_source(table):
    cg = table["subsystems"]["cuda-graph"]
    assert (cg["first"], cg["last"]) == ("0.4.0", "0.5.0")
    assert cg["source"] == "vllm/worker/model_runner.py@v0.4.0"  # its first release's capture function
    assert cg["paths"] == list(ms.RULES[0].paths)
    assert "attention" not in table["subsystems"]  # no such path in this repository


def test_main_writes_the_table_and_refuses_a_missing_directory(vllm_git, tmp_path, capsys):
    out = tmp_path / "subsystems.json"
    assert ms.main(["--git", str(vllm_git), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["releases"] == ["0.4.0", "0.5.0"] and "cuda-graph" in data["subsystems"]
    assert ms.main(["--git", str(tmp_path / "nothing"), "--out", str(out)]) == 2
    assert "no such git directory" in capsys.readouterr().err


def test_the_shipped_table_holds_vllms_real_moves():
    from spec_doctor.knowledge.data import load, load_json

    data = load_json("subsystems.json")
    subs = data["subsystems"]
    cg = subs["cuda-graph"]
    assert cg["defined"]["vllm/worker/model_runner.py:capture_model"][0] == "0.4.0"
    assert "vllm/v1/worker/gpu_model_runner.py:capture_model" in cg["defined"]
    assert cg["modules"]["vllm/compilation/cuda_graph.py"][0] == "0.10.1"
    assert cg["modules"]["vllm/v1/cudagraph_dispatcher.py"][0] == "0.10.1"
    assert subs["spec-decode"]["modules"]["vllm/spec_decode/spec_decode_worker.py"][0] == "0.4.0"
    assert subs["kv-cache-sizing"]["modules"]["vllm/v1/core/kv_cache_utils.py"]
    # every row of the mapping names a mined subsystem and a taxonomy category, and cites vLLM's source
    from spec_doctor.knowledge.data import text

    categories = set(re.findall(r"^\| `([\w-]+)` \|", text("taxonomy.md"), re.M))
    for row in load("crash_subsystems.toml")["subsystem"]:
        assert row["name"] in subs and row["category"] in categories, row["name"]
        assert "@v" in row["source"] and row["fix"]
