"""vllm-ascend (vLLM's Ascend NPU plugin) in the message catalogue: scripts/mine_catalogue.py --project vllm-ascend
on a tiny synthetic plugin tree (release-candidate tags, a newer release only as an sdist, the compatibility matrix
and release notes), merged into a catalogue without touching vLLM's part; and the real catalogue's plugin entries:
a few of the plugin's own messages (fixtures/ascend/messages.tsv, copied from its source) identified with the
plugin's project, releases and category, and their vLLM range read through the plugin's pins."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, load_script, sdist_folder, tagged_git_repo
from spec_doctor.knowledge import catalogue as cat

mc = load_script("mine_catalogue")
ASCEND = mc.PROJECTS["vllm-ascend"]

MTP = '''
import logging
logger = logging.getLogger(__name__)


class MtpProposer:
    def __init__(self, k):
        if k > 2:
            raise ValueError(f"num_speculative_tokens={k} is not supported for this MTP head on the NPU yet")
'''
ACL = '''
from vllm.logger import init_logger
logger = init_logger(__name__)


def capture(n):
    logger.warning("ACL graph capture failed for batch size %d; the drafter runs eagerly", n)
'''
PLATFORM = '''
class NPUPlatform:
    def check(self, cfg):
        raise NotImplementedError("Sliding window attention is not supported on the current platform (310P)")
'''
RUNNER = '''
def propose(meta):
    assert meta is not None, "draft attention metadata missing in the NPU model runner"
'''
MATRIX = """
## Release compatibility matrix

| vLLM Ascend | vLLM              | Python          | Stable CANN | PyTorch/torch_npu |
|-------------|-------------------|-----------------|-------------|-------------------|
| v0.1.0      | v0.5.0/v0.5.0.1   | >= 3.10         | 8.5.0       | 2.9.0 / 2.9.0.post1 |
| v0.1.0rc1   | v0.5.0            | >= 3.10         | 8.3.RC2     | 2.8.0 / 2.8.0 |
"""
NOTES = """# Release Notes

## v0.2.0rc1 - 2026.01.01

This is the first release candidate of v0.2.0 for vLLM Ascend, based on vLLM v0.6.0.
"""


def _trees() -> dict[str, dict[str, str]]:
    first = {"vllm_ascend/spec_decode/mtp_proposer.py": MTP, "vllm_ascend/platform.py": PLATFORM,
             "vllm_ascend/worker/model_runner_v1.py": RUNNER}
    second = {**first, "vllm_ascend/compilation/acl_graph.py": ACL,
              "docs/source/community/versioning_policy.md": MATRIX}
    third = {k: v for k, v in second.items() if k != "vllm_ascend/platform.py"}
    return {"0.1.0rc1": first, "0.1.0": second, "0.2.0rc1": {**third, "docs/source/user_guide/release_notes.md": NOTES}}


def _git(tmp_path: Path) -> Path:
    older = {v: t for v, t in _trees().items() if v != "0.2.0rc1"}  # the git snapshot has the two older releases
    return tagged_git_repo(tmp_path / "repo", older, extra_tags=("v0.1.0.dev3",))  # a dev tag is not a release


def _sdists(tmp_path: Path) -> Path:
    newest = {v: t for v, t in _trees().items() if v == "0.2.0rc1"}  # on the package index only
    return sdist_folder(tmp_path / "sdists", ASCEND.dist, newest)


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_plugin_tree_is_mined_with_its_own_releases_areas_and_pins(tmp_path):
    # An existing catalogue with one vLLM entry: mining the plugin keeps vLLM's part as it is.
    out = tmp_path / "catalogue.json"
    vllm_entry = {"template": "a vLLM message", "regex": "a vLLM message", "gate": "a vLLM message",
                  "kind": "warning", "first_version": "0.5.0", "last_version": "0.6.0",
                  "sources": ["vllm/config/speculative.py@v0.6.0:1"], "category": "none"}
    out.write_text(json.dumps({"header": {"releases": ["0.5.0", "0.6.0"]}, "entries": [vllm_entry]}))
    assert mc.main(["--project", "vllm-ascend", "--git", str(_git(tmp_path)), "--sdists", str(_sdists(tmp_path)),
                    "--min-version", "0.1.0rc1", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["header"]["releases"] == ["0.5.0", "0.6.0"] and vllm_entry in data["entries"]
    h = data["header"]["projects"]["vllm-ascend"]
    assert h["releases"] == ["0.1.0rc1", "0.1.0", "0.2.0rc1"] and h["source_kind"] == "git+sdist"
    # Release -> vLLM: the matrix rows (the newest copy that lists them), else the release's notes.
    assert h["compat"]["0.1.0"]["vllm"] == ["0.5.0", "0.5.0.1"] and h["compat"]["0.1.0"]["cann"] == "8.5.0"
    assert h["compat"]["0.1.0"]["torch_npu"] == "2.9.0.post1"
    assert h["compat"]["0.1.0rc1"]["vllm"] == ["0.5.0"]
    assert h["compat"]["0.2.0rc1"] == {"vllm": ["0.6.0"], "source": "docs/source/user_guide/release_notes.md@v0.2.0rc1"}
    plugin = [e for e in data["entries"] if e.get("project") == "vllm-ascend"]
    by = {e["template"].split(" ")[0]: e for e in plugin}
    assert len(plugin) == 4 and all(e["sources"][0].startswith("vllm_ascend/") for e in plugin)

    mtp = by["num_speculative_tokens={k}"]
    assert (mtp["first_version"], mtp["last_version"]) == ("0.1.0rc1", "0.2.0rc1") and mtp["spec_related"]
    assert mtp["category"] == "config-unsupported-combo" and mtp["sources"][0].endswith("@v0.2.0rc1:9")
    assert re.search(mtp["regex"], "num_speculative_tokens=3 is not supported for this MTP head on the NPU yet")

    acl = by["ACL"]  # the plugin's graph mode is the CUDA-graph category
    assert acl["category"] == "cuda-graph" and acl["rule"] == "npu-graph" and acl["first_version"] == "0.1.0"

    sliding = by["Sliding"]  # gone after 0.1.0; platform code's limit
    assert sliding["last_version"] == "0.1.0" and sliding["category"] == "env-platform"

    meta = by["draft"]  # an assertion in the NPU model runner: an engine bug, like one in vLLM's
    assert meta["kind"] == "AssertionError" and meta["category"] == "engine-bug" and meta["spec_related"]

    # Mining vLLM again afterwards keeps the plugin's part.
    assert mc.merge({"header": {"releases": ["0.6.0"]}, "entries": []}, out)["entries"] == plugin
    assert mc.merge({"header": {"releases": ["0.6.0"]}, "entries": []}, out)["header"]["projects"]["vllm-ascend"]


def test_plugin_areas_play_vllm_roles():
    assert mc.area_of("vllm_ascend/spec_decode/eagle_proposer.py") == "ascend-spec"
    assert mc.area_of("vllm_ascend/worker/v2/spec_decode/eagle/speculator.py") == "ascend-spec"
    assert mc.area_of("vllm_ascend/compilation/acl_graph.py") == "ascend-graph"
    assert mc.area_of("vllm_ascend/torchair/torchair_model_runner.py") == "ascend-model-runner"
    assert mc.area_of("vllm_ascend/worker/model_runner_v1.py") == "ascend-model-runner"
    assert mc.area_of("vllm_ascend/ascend_config.py") == "ascend-config"
    assert mc.area_of("vllm_ascend/platform.py") == "ascend-platform"
    assert mc.area_of("vllm_ascend/core/scheduler.py") == "ascend-scheduler"
    assert mc.area_of("vllm_ascend/ops/fused_moe/moe_mlp.py") is None  # kernels are not mined
    assert mc.area_of("vllm/v1/spec_decode/eagle.py") == "spec-v1"  # vLLM's own paths unchanged
    assert {mc.role_of(a) for a in mc.ASCEND_AREAS} <= {a for a, _ in mc.AREAS}
    # The plugin's rules hold only in the plugin: the same text in vLLM keeps vLLM's category.
    text = "ACL graph capture failed; the drafter runs eagerly"
    assert mc.categorise(text, "warning", "ascend-graph", True)[2] == "npu-graph"
    assert mc.categorise(text, "warning", "compilation", True)[2] != "npu-graph"


# -- the real catalogue -----------------------------------------------------------------------------------------
def _fixture_messages() -> list[tuple[str, str, str]]:
    rows = (FIXTURES / "ascend" / "messages.tsv").read_text().splitlines()
    return [tuple(r.split("\t")) for r in rows if r.strip()]  # type: ignore[misc]


EXPECTED = {"Eagle Is Not": "config-unsupported-combo", "Xlite graph mode": "cuda-graph",
            "DBO only supports": "env-platform", "Invalid architecture for mtp": "config-unsupported-combo"}


@pytest.mark.parametrize("kind,message,where", _fixture_messages())
def test_plugin_messages_are_identified_as_the_plugins(kind, message, where):
    t = cat.identify(message)
    assert t is not None and t.project == "vllm-ascend", message
    assert t.kind == kind and t.source.split(":")[0] == where
    assert t.category == next(c for k, c in EXPECTED.items() if message.startswith(k))
    tag = where.split("@v")[1]
    assert tag in cat.project_releases("vllm-ascend") and t.last_version == tag
    assert t.first_version not in cat.releases() or t.first_version in cat.project_releases("vllm-ascend")


def test_a_plugin_message_narrows_vllm_through_the_plugins_pins():
    t = cat.identify("Invalid architecture for mtp.")
    assert t is not None and (t.first_version, t.last_version) == ("0.12.0rc1", "0.13.0rc1")
    # vllm-ascend 0.12.0rc1 runs on vLLM 0.12.0, 0.13.0rc1 on 0.13.0 (the plugin's compatibility matrix).
    assert cat.vllm_pins("vllm-ascend", "0.12.0rc1") == ("0.12.0",)
    assert cat.vllm_span(t) == ("0.12.0", "0.13.0")
    assert cat.version_range([t]) == ("0.12.0", "0.13.0")
    # A pin to a vLLM release candidate is read as that release; two pins are both kept.
    assert cat.vllm_pins("vllm-ascend", "0.11.0rc0") == ("0.11.0",)
    assert cat.vllm_pins("vllm-ascend", "0.10.1rc1") == ("0.10.1", "0.10.1.1")
    assert cat.vllm_pins("vllm-ascend", "9.9.9") == ()


def test_a_text_both_print_is_vllms():
    plugin = {t.template for t in cat.templates() if t.project == "vllm-ascend"}
    shared = [t for t in cat.templates() if t.project == "vllm" and t.template in plugin and "{" not in t.template
              and len(t.template) > 30]
    assert shared, "the plugin copies some of vLLM's messages"
    for t in shared[:5]:
        got = cat.identify(t.template)
        assert got is not None and got.project == "vllm", t.template


def test_every_plugin_release_has_a_vllm_pin_with_a_source():
    h = cat.project_header("vllm-ascend")
    assert h["releases"][0] == "0.7.1rc1" and len(h["releases"]) >= 40
    for r in h["releases"]:
        row = h["compat"][r]
        assert row["vllm"] and re.fullmatch(r"(?:docs/\S+\.md|Dockerfile)@v\S+", row["source"]), (r, row)
