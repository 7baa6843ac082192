"""vLLM's message catalogue (knowledge/data/catalogue.json, made by scripts/mine_catalogue.py) and its loader.

The data: every release from 0.4 to the newest the index had when it was mined, a source for every entry,
regexes that compile and match their own template, gates that are literal text. The loader: real WARNING/ERROR
lines from the recorded fixtures are identified with the right category, speculation in a hole switches a
template to its speculation variant, and the release range inferred from a recorded log holds the vLLM that
wrote it. The categorisation rules (in the script) map known vLLM messages right. The script itself runs on a
tiny synthetic source tree (three fake tags, as a git repository and as sdists) without network.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, load_script
from spec_doctor.knowledge import catalogue as cat
from spec_doctor.parsers.logparse.events import EXC_LINE, FRAME, TB_START
from spec_doctor.parsers.logparse.lines import parse_envelope

DATA = REPO / "src" / "spec_doctor" / "knowledge" / "data" / "catalogue.json"
TAXONOMY = REPO / "src" / "spec_doctor" / "knowledge" / "data" / "taxonomy.md"


mc = load_script("mine_catalogue")


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(DATA.read_text())


def _categories() -> set[str]:
    return set(re.findall(r"^\| `([a-z-]+)` \|", TAXONOMY.read_text(), re.M)) | {"none"}


def _render(template: str) -> str:
    """A template's text with every hole filled by 7 (numeric holes need digits; others take anything)."""
    t = template.replace("{{", "\x00").replace("}}", "\x01")
    return re.sub(r"\{[^{}]*\}", "7", t).replace("\x00", "{").replace("\x01", "}")


# -- the data --------------------------------------------------------------------------------------------------
def test_covers_every_release_from_0_4_to_the_newest(data):
    h = data["header"]
    releases = h["releases"]
    assert releases[0] == "0.4.0" and releases[-1] == h["newest_release"]
    assert releases == sorted(releases, key=mc.vkey), "releases oldest first"
    # Every release the package index listed (from 0.4.0 on) when the catalogue was made was mined.
    assert h.get("index_releases"), "the header records the index's release list"
    assert set(h["index_releases"]) <= set(releases) and not h["missing_from_index"]
    assert h["newest_release"] == max(h["index_releases"], key=mc.vkey)
    # And no minor series is skipped between 0.4 and the newest.
    minors = {tuple(int(x) for x in v.split(".")[:2]) for v in releases}
    newest = tuple(int(x) for x in h["newest_release"].split(".")[:2])
    assert {(0, m) for m in range(4, newest[1] + 1)} <= minors
    assert h["source_kind"] in ("git", "sdist") and h["made_by"] == "scripts/mine_catalogue.py"


def test_every_entry_has_a_source_a_release_range_and_a_known_category(data):
    releases = data["header"]["releases"]
    rules = data["header"]["rules"]
    cats = _categories()
    for e in data["entries"]:
        assert e["sources"], e["template"]
        for s in e["sources"]:
            assert re.fullmatch(r"vllm/[\w/.-]+\.py@v\d+\.\d+\.\d+[\w.]*:\d+", s), s
        assert e["first_version"] in releases and e["last_version"] in releases
        assert mc.vkey(e["first_version"]) <= mc.vkey(e["last_version"])
        # The newest source is the release the entry was last seen in.
        assert e["sources"][0].split("@v")[1].split(":")[0] == e["last_version"]
        assert e["category"] in cats, e["category"]
        if e["category"] != "none":
            assert e.get("rule") in rules and rules[e["rule"]]["category"] == e["category"]
        for a, b in e.get("ranges", []):
            assert a in releases and b in releases


def test_regexes_compile_match_their_template_and_gates_are_literal(data):
    for e in data["entries"]:
        rx = re.compile(e["regex"])
        gate = e["gate"]
        assert len(gate) >= mc.MIN_GATE
        text = _render(e["template"])
        assert gate in text, (gate, e["template"])  # the gate is fixed text of the message
        if not e["template"].endswith("…"):
            line = next(ln for ln in text.split("\n") if ln.strip()).strip()
            assert rx.search(line), (e["regex"], line)


def test_categorisation_is_not_mostly_none(data):
    counts = data["header"]["counts"]
    assert counts["entries"] == len(data["entries"]) > 1000
    none = counts["per_category"].get("none", 0)
    assert none / counts["entries"] < 0.3
    assert counts["spec_related"] > 200
    assert counts["per_category"].get("spec-overhead", 0) >= 3


# -- the loader on real log lines ---------------------------------------------------------------------------------
def _fixture_logs() -> list[Path]:
    return sorted((FIXTURES / "cases").glob("*/log*.txt")) + sorted((FIXTURES / "vllm-cpu" / "scenarios").glob(
        "*/log.txt"))


def _message_lines() -> list[str]:
    """The message of every WARNING/ERROR/CRITICAL record in the fixtures' logs; a traceback's own lines
    (header, frames, code, carets) are not messages, its exception line counts by its message."""
    out = []
    for f in _fixture_logs():
        for raw in f.read_text(errors="replace").splitlines():
            r = parse_envelope(raw)
            if r.level not in ("WARNING", "ERROR", "CRITICAL"):
                continue
            msg = r.msg.strip()
            if not msg or TB_START in msg or FRAME.search(msg) or msg[:1] in "^~" or r.msg[:1].isspace():
                continue
            m = EXC_LINE.match(msg)
            out.append((m["msg"] or "").strip() if m and m["msg"] else msg)
    return out


def test_self_check_share_of_fixture_lines_identified(capsys):
    lines = _message_lines()
    assert len(lines) > 100
    hit = sum(cat.identify(ln) is not None for ln in lines)
    with capsys.disabled():
        print(f"\ncatalogue self-check: {hit}/{len(lines)} fixture WARNING/ERROR lines identified "
              f"({100 * hit / len(lines):.0f} %)")
    assert hit / len(lines) >= 0.8


# (a fixed part of a real line in fixtures/, the category it must get)
FIXTURE_LINES = [
    ("max_num_scheduled_tokens is set to", "spec-overhead"),  # lowered token budget for the method
    ("Inductor compilation was disabled by user settings", "none"),
    ("Model Runner V2 requires Triton; using the V1 model runner instead", "env-platform"),
    ("Dynamic speculative decoding changes the target verification length", "cuda-graph"),
    ("libtcmalloc is not found in LD_PRELOAD", "env-platform"),
    ("Triton is not installed. triton-cpu is expected", "env-platform"),
    ("[shutdown] Process manager: force killing remaining process", "none"),
    ("Found ulimit of", "none"),
    ("min_p and logit_bias parameters won't work with speculative decoding", "none"),
    ("Compiling model again due to a load failure", "none"),
    ("AsyncLLM output_handler failed", "engine-bug"),
    ("EngineCore encountered an issue. See stack trace", "engine-bug"),
]


@pytest.mark.parametrize("needle,category", FIXTURE_LINES)
def test_real_fixture_lines_get_the_right_category(needle, category):
    lines = [ln for ln in _message_lines() if needle in ln]
    assert lines, f"no fixture line contains {needle!r}"
    for ln in lines[:5]:
        t = cat.identify(ln)
        assert t is not None, ln
        assert t.category == category, (ln, t.template, t.rule)
        assert t.source.startswith("vllm/")


def test_identify_applies_the_speculation_variant_only_when_the_hole_names_speculation():
    spec = cat.identify("Model Runner V2 does not yet support speculative method 'draft_model'; "
                        "using the V1 model runner instead.")
    other = cat.identify("Model Runner V2 does not yet support pipeline parallelism with external_launcher; "
                         "using the V1 model runner instead.")
    assert spec is not None and other is not None and spec.template == other.template
    assert spec.category == "spec-overhead" and spec.spec_related and spec.fix
    assert other.category == "config-unsupported-combo" and not other.spec_related


def test_identify_rejects_text_that_only_shares_the_gate():
    t = cat.identify("Async scheduling not supported with eagle-based speculative decoding and will be disabled.")
    assert t is not None and t.category == "spec-overhead"
    assert cat.identify("nothing vLLM ever said") is None
    # The gate alone is not the message: the regex decides.
    checked = 0
    for x in cat.templates():
        if ".*?" in x.pattern:  # more fixed text than the gate
            assert x.template not in [m.template for m in cat.matches(x.gate)], x.template
            checked += 1
        if checked >= 50:
            break
    assert checked >= 50


def test_a_line_cut_short_is_identified_by_its_start():
    full = ("Enabling num_speculative_tokens > 1 will run multiple times of forward on same MTP layer,which may "
            "result in lower acceptance rate")
    assert cat.identify(full).category == "k-too-large"
    cut = cat.identify(full[:60])  # as pasted into an issue, cut at the terminal's width
    assert cut is not None and cut.template == cat.identify(full).template
    assert cat.identify(full[:20]) is None  # too little of it to tell
    assert cat.identify("Enabling num_speculative_tokens > 1 is a choice this text makes up") is None


def test_word_index_gives_the_answer_of_trying_every_template():
    ts = cat.templates()
    for t in ts[::10]:
        line = next(ln for ln in _render(t.template).split("\n") if ln.strip()).strip()
        brute = next((x for x in ts if x.gate in line and x.regex.search(line)), None)
        got = cat.identify(line)
        assert (got and got.template) == (brute and brute.template), line
        assert [m.template for m in cat.matches(line)] == [x.template for x in ts
                                                           if x.gate in line and x.regex.search(line)]


def test_release_range_inferred_from_a_recorded_log_holds_its_vllm():
    checked = narrowed = 0
    for d in sorted((FIXTURES / "vllm-cpu" / "scenarios").iterdir()):
        man = d / "manifest.json"
        if not (man.exists() and (d / "log.txt").exists()):
            continue
        version = json.loads(man.read_text()).get("vllm_version")
        seen = [t for raw in (d / "log.txt").read_text(errors="replace").splitlines()
                if (r := parse_envelope(raw)).level in ("WARNING", "ERROR", "CRITICAL")
                and (t := cat.identify(r.msg.strip()))]
        if not version or not seen:
            continue
        vs = cat.versions_consistent(seen)
        assert version in vs, (d.name, version, cat.version_range(seen))
        checked += 1
        narrowed += len(vs) < len(cat.releases()) / 4  # the lines pin the era down
    assert checked >= 3 and narrowed >= 3


def test_versions_consistent_intersects_release_ranges():
    ts = cat.templates()
    old = next(t for t in ts if t.last_version and cat.release_key(t.last_version) < (0, 7, 0, 0, 0))
    new = next(t for t in ts if t.first_version and cat.release_key(t.first_version) > (0, 20, 0, 0, 0))
    assert cat.versions_consistent([old, new]) == ()
    assert cat.version_range([old, new]) is None
    assert cat.versions_consistent([]) == cat.releases()
    vs = cat.versions_consistent([new])
    assert vs[0] == new.first_version and vs[-1] == new.last_version or len(new.ranges) > 1


# -- the categorisation rules (the script) ------------------------------------------------------------------------
# Real vLLM messages (holes as {}), the kind and module that raise them, and the category they must get.
RULE_TABLE = [
    ("Inductor compilation was disabled by user settings, optimizations settings that are only active during "
     "inductor compilation will be ignored.", "warning", "vllm/config/vllm.py", "none"),  # config/vllm.py@v0.33.0
    ("Async scheduling not supported with {}-based speculative decoding and will be disabled.", "warning",
     "vllm/config/vllm.py", "spec-overhead"),
    ("Async scheduling is not yet supported with speculative decoding  or pipeline_parallel_size > 1 and will be "
     "disabled.", "warning", "vllm/config/vllm.py", "spec-overhead"),  # @v0.13.0
    ("max_num_scheduled_tokens is set to {} based on the speculative decoding settings. This may lead to "
     "suboptimal performance. Consider increasing max_num_batched_tokens to accommodate the additional draft "
     "token slots, or decrease num_speculative_tokens.", "warning", "vllm/config/vllm.py", "spec-overhead"),
    ("Dynamic speculative decoding is not supported with data parallelism because data-parallel ranks can select "
     "different speculative-token counts, causing DP divergence and deadlocks. Disabling "
     "num_speculative_tokens_per_batch_size and falling back to static num_speculative_tokens={}.", "warning",
     "vllm/config/vllm.py", "spec-overhead"),
    ("Model Runner V2 requires Triton; using the V1 model runner instead.", "warning", "vllm/config/vllm.py",
     "env-platform"),
    ("CUDAGraphMode.{} is not supported with spec-decode for attention backend {} (support: {}){}", "warning",
     "vllm/config/compilation.py", "cuda-graph"),
    ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the "
     "engine.", "ValueError", "vllm/v1/core/kv_cache_utils.py", "oom"),
    ("The model's max seq len ({}) is larger than the maximum number of tokens that can be stored in KV cache ({}). "
     "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
     "ValueError", "vllm/v1/core/kv_cache_utils.py", "oom"),
    ("Sequence group {} is preempted by {} mode because there is not enough KV cache space. This can affect the "
     "end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache "
     "memory. total_num_cumulative_preemption={}", "warning", "vllm/core/scheduler.py", "kv-pressure"),
    ("Target and draft model should have the same vocabulary size. Target model vocab_size={}. Draft model "
     "vocab_size={}. Using models with different tokenizers can cause out-of-bounds errors during speculative "
     "decoding.", "ValueError", "vllm/config/speculative.py", "vocab-mismatch"),
    ("Speculative decoding and chunked prefill are currently mutually exclusive (enable_chunked_prefill={}).",
     "ValueError", "vllm/config.py", "config-unsupported-combo"),
    ("Chunked prefill and speculative decoding can be enabled simultaneously only for draft models with tensor "
     "parallel size 1.", "ValueError", "vllm/config.py", "config-unsupported-combo"),
    ("Currently, async scheduling is only supported with EAGLE/MTP kind of speculative decoding", "ValueError",
     "vllm/config/vllm.py", "config-unsupported-combo"),  # a rejection, not a fallback
    ("Please use '--speculative-config' to set all configurations related to speculative decoding. The current "
     "method of specifying the model through '--speculative-model' and adding related parameters (e.g., "
     "'--num-speculative-tokens') separately will be deprecated in the next release.", "warning",
     "vllm/engine/arg_utils.py", "config-deprecated"),
    ("Speculative decoding is not yet supported for TPU backend", "AssertionError", "vllm/platforms/tpu.py",
     "env-platform"),
    ("Enabling num_speculative_tokens > 1 will run multiple times of forward on same MTP layer,which may result in "
     "lower acceptance rate", "warning", "vllm/config/speculative.py", "k-too-large"),
    ("All eagle layers should belong to the same kv cache group", "AssertionError", "vllm/v1/spec_decode/eagle.py",
     "engine-bug"),
    ("max_num_batched_tokens ({}) is smaller than max_model_len ({}). This effectively limits the maximum sequence "
     "length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
     "max_num_batched_tokens or decrease max_model_len.", "ValueError", "vllm/config/scheduler.py",
     "scheduler-config"),
    ("Found ulimit of {} and failed to automatically increase with error {}. This can cause fd limit errors like "
     "`OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n", "warning",
     "vllm/utils/system_utils.py", "none"),
    ("[shutdown] Process manager: force killing remaining processes count={}", "warning", "vllm/v1/utils.py",
     "none"),
    ("min_p and logit_bias parameters won't work with speculative decoding.", "warning",
     "vllm/v1/sample/logits_processor/__init__.py", "none"),
    ("Worker proc {} died unexpectedly, shutting down executor.", "error", "vllm/v1/executor/multiproc_executor.py",
     "engine-bug"),  # an error that says the engine goes down is a crash, not shutdown chatter
    ("EngineCore encountered an issue. See stack trace (above) for the root cause.", "EngineDeadError",
     "vllm/v1/engine/exceptions.py", "engine-bug"),
    # a method the release does not have yet (V1 before 0.15 had no draft-model proposer): the release lacks it
    ("Speculative decoding with draft model is not supported yet. Please consider using other speculative decoding "
     "methods such as ngram, medusa, eagle, or mtp.", "NotImplementedError", "vllm/config/speculative.py",
     "env-version"),
    ("Eagle3 is only supported for {} models. Got self.target_model_config.hf_text_config.model_type={}",
     "ValueError", "vllm/config/speculative.py", "env-version"),
    ("Arctic Inference is required for suffix decoding. Install via `pip install arctic-inference==0.1.1`.",
     "ImportError", "vllm/config/speculative.py", "env-version"),
    ("Speculative decoding is not yet supported on vLLM V1.", "NotImplementedError", "vllm/platforms/rocm.py",
     "env-platform"),
    ("spec decode is not supported.", "AssertionError", "vllm/v1/worker/cpu_model_runner.py", "env-platform"),
    ("Speculative Mamba blocks must be exclusively owned and unhashed before relocation", "AssertionError",
     "vllm/v1/core/single_type_kv_cache_manager.py", "engine-bug"),
    ("Mamba prefix caching requires mamba_cache_mode='align'", "AssertionError",
     "vllm/v1/core/single_type_kv_cache_manager.py", "config-unsupported-combo"),
    ("The worker attempted to run {} times but found insufficient KV space for request_id={} seq_id={}.",
     "ValueError", "vllm/spec_decode/multi_step_worker.py", "kv-pressure"),
    ("Attention metadata for layer {} does not have non-causal support, which is required for DFlash. Consider "
     "using a different attention backend, such as FlashAttention.", "AssertionError", "vllm/v1/spec_decode/dflash.py",
     "config-unsupported-combo"),
    ("probabilistic draft sampling is not supported with use_heterogeneous_vocab", "AssertionError",
     "vllm/v1/spec_decode/llm_base_proposer.py", "config-unsupported-combo"),
    ("No spec decode metadata for medusa", "AssertionError", "vllm/v1/worker/gpu_model_runner.py", "engine-bug"),
    ("Missing 'speculative_tokens' in proposal method. Got: {}", "ValueError",
     "vllm/transformers_utils/configs/speculators/base.py", "config-unsupported-combo"),
]


@pytest.mark.parametrize("text,kind,path,category", RULE_TABLE)
def test_rules_map_known_messages(text, kind, path, category):
    area = mc.area_of(path)
    assert area is not None, path
    spec = mc.spec_related(text, "", area)
    got, fix, rule = mc.categorise(text, kind, area, spec)
    assert got == category, (text[:80], rule)
    assert (fix != "") == (category != "none")


def test_rules_use_taxonomy_categories_only():
    cats = _categories()
    assert all(r.category in cats for r in mc.RULES)


# -- the script on a synthetic source tree --------------------------------------------------------------------------
SPEC_V1 = '''
import logging
logger = logging.getLogger(__name__)
LIMIT_MSG = "num_speculative_tokens must be positive"


class SpeculativeConfig:
    def verify(self, k, method):
        if k > 10:
            raise ValueError(f"num_speculative_tokens={k} must be <= 10 for method {method}")
        msg = "Speculative decoding with draft model is not supported yet."
        if method == "draft":
            raise NotImplementedError(msg)
        logger.warning("Async scheduling not supported with %s-based speculative decoding and will be disabled.",
                       method)
        assert k > 0, LIMIT_MSG
'''
SPEC_V2 = SPEC_V1.replace('''        msg = "Speculative decoding with draft model is not supported yet."
        if method == "draft":
            raise NotImplementedError(msg)
''', '''        note = "Drafting with %d layers" % k
        if k == 3:
            note += " and a shared head"
        logger.warning_once(note + " runs without cuda graphs.")
''')
EAGLE = '''
from vllm.logger import init_logger
logger = init_logger(__name__)


def propose(n):
    logger.warning_once("EAGLE drafter runs in eager mode ({} layers)".format(n))
'''
UNRELATED = 'import logging\nlogging.getLogger(__name__).warning("A message outside the mined paths here")\n'


def _trees() -> dict[str, dict[str, str]]:
    v1 = {"vllm/config/speculative.py": SPEC_V1, "vllm/v1/spec_decode/eagle.py": EAGLE,
          "vllm/lora/models.py": UNRELATED}
    v2 = {"vllm/config/speculative.py": SPEC_V2, "vllm/lora/models.py": UNRELATED}
    v3 = {"vllm/config/speculative.py": SPEC_V2, "vllm/v1/spec_decode/eagle.py": EAGLE}
    return {"0.1.0": v1, "0.2.0": v2, "0.3.0": v3}


def _git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                       capture_output=True)

    git("init", "-q")
    for version, files in _trees().items():
        for old in (repo / "vllm").rglob("*.py") if (repo / "vllm").exists() else []:
            old.unlink()
        for path, text in files.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        git("add", "-A")
        git("commit", "-qm", version)
        git("tag", f"v{version}")
    git("tag", "v0.3.1rc1")  # not a release: ignored
    return repo / ".git"


def _sdists(tmp_path: Path) -> Path:
    d = tmp_path / "sdists"
    d.mkdir()
    for version, files in _trees().items():
        with tarfile.open(d / f"vllm-{version}.tar.gz", "w:gz") as tf:
            for path, text in files.items():
                data = text.encode()
                info = tarfile.TarInfo(f"vllm-{version}/{path}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return d


def _mine(source) -> dict:
    versions, aggs = mc.mine(source, min_version="0.1.0", log=False)
    return mc.build(versions, aggs, source.kind, source.origin, index=["0.1.0", "0.2.0", "0.3.0"])


def _finder(data: dict):
    def find(prefix: str) -> dict:
        hits = [e for e in data["entries"] if e["template"].startswith(prefix)]
        assert len(hits) == 1, (prefix, [h["template"] for h in hits])
        return hits[0]
    return find


def _check_synthetic(data: dict) -> None:
    assert data["header"]["releases"] == ["0.1.0", "0.2.0", "0.3.0"]
    assert data["header"]["missing_from_index"] == []
    find = _finder(data)
    assert not any("outside the mined paths" in x["template"] for x in data["entries"])

    limit = find("num_speculative_tokens=")
    assert limit["template"] == "num_speculative_tokens={k} must be <= 10 for method {method}"
    assert (limit["first_version"], limit["last_version"]) == ("0.1.0", "0.3.0")
    assert limit["kind"] == "ValueError" and limit["sources"][0].startswith("vllm/config/speculative.py@v0.3.0:")
    assert limit["category"] == "config-unsupported-combo" and limit["spec_related"]
    assert re.search(limit["regex"], "num_speculative_tokens=12 must be <= 10 for method eagle")

    gone = find("Speculative decoding with dra")  # resolved through `msg = ...; raise NotImplementedError(msg)`
    assert gone["kind"] == "NotImplementedError" and gone["last_version"] == "0.1.0"
    assert gone["category"] == "env-version"  # the release lacks the draft-model method

    async_off = find("Async scheduling not supported")
    assert async_off["category"] == "spec-overhead" and async_off["kind"] == "warning"
    assert re.search(async_off["regex"], "Async scheduling not supported with ngram-based speculative decoding "
                                         "and will be disabled.")

    assert find("num_speculative_tokens must be")["kind"] == "AssertionError"  # a module constant as the message

    eager = find("EAGLE drafter runs in eager m")
    assert eager["ranges"] == [["0.1.0", "0.1.0"], ["0.3.0", "0.3.0"]]  # gone in 0.2.0, back in 0.3.0
    assert eager["category"] == "spec-overhead"

    drafting = find("Drafting with ")
    # %d became a numeric hole; the branch-only `+=` became a hole that may be empty.
    assert re.search(drafting["regex"], "Drafting with 3 layers and a shared head runs without cuda graphs.")
    assert re.search(drafting["regex"], "Drafting with 4 layers runs without cuda graphs.")
    assert not re.search(drafting["regex"], "Drafting with four layers runs without cuda graphs.")
    assert drafting["first_version"] == "0.2.0"


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_script_mines_a_git_directory_with_release_tags(tmp_path):
    data = _mine(mc.GitSource(str(_git_repo(tmp_path))))
    assert data["header"]["source_kind"] == "git"
    _check_synthetic(data)


def test_script_mines_a_folder_of_sdists_the_same_way(tmp_path):
    data = _mine(mc.SdistSource(str(_sdists(tmp_path))))
    assert data["header"]["source_kind"] == "sdist"
    _check_synthetic(data)


def test_script_cli_writes_a_catalogue_the_loader_reads(tmp_path):
    out = tmp_path / "catalogue.json"
    assert mc.main(["--sdists", str(_sdists(tmp_path)), "--min-version", "0.1.0", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["header"]["releases"] == ["0.1.0", "0.2.0", "0.3.0"] and written["entries"]
    assert mc.main(["--sdists", str(tmp_path / "nothing-here"), "--out", str(out)]) == 2


def test_script_never_imports_what_it_mines(tmp_path):
    # Source that would fail if executed is still read: the script parses, it does not import.
    files = {"vllm/config/speculative.py": "raise SystemExit('imported!')\n" + SPEC_V1}
    d = tmp_path / "s"
    d.mkdir()
    with tarfile.open(d / "vllm-0.5.0.tar.gz", "w:gz") as tf:
        for path, text in files.items():
            info = tarfile.TarInfo(f"vllm-0.5.0/{path}")
            info.size = len(text.encode())
            tf.addfile(info, io.BytesIO(text.encode()))
    versions, aggs = mc.mine(mc.SdistSource(str(d)), min_version="0.1.0", log=False)
    assert versions == ["0.5.0"] and any("imported!" in mc.template_of(a.pieces) for a in aggs.values())
