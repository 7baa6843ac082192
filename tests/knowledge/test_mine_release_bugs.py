"""scripts/mine_release_bugs.py on a tiny synthetic vLLM-like git repository built here: which commits are candidates,
the first release tag containing each (rc tags and tags before v0.4.0 ignored, a cherry-pick onto a release branch
counted), the symptom class and methods/features its subject names, and the table check."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import load_script

mrb = load_script("mine_release_bugs")
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _env(repo: Path, date: str = "2024-01-01") -> dict[str, str]:
    return {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
            "GIT_AUTHOR_DATE": date + "T12:00:00", "GIT_COMMITTER_DATE": date + "T12:00:00", "HOME": str(repo),
            "PATH": "/usr/bin:/bin"}


def _git(repo: Path, *args: str, date: str = "2024-01-01") -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=_env(repo, date)).stdout


def _commit(repo: Path, path: str, subject: str, date: str) -> None:
    f = repo / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(f.read_text() + subject + "\n" if f.exists() else subject + "\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", subject, date=date)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = tmp_path_factory.mktemp("vllm")
    _git(r, "init", "-q", "-b", "main")
    _commit(r, "README.md", "Initial commit", "2024-01-01")
    _git(r, "tag", "v0.3.0")  # before v0.4.0: never a fixed_in
    _commit(r, "vllm/v1/spec_decode/eagle.py", "[Bugfix] Fix EAGLE-3 crash with TP > 1 (#100)", "2024-02-01")
    _commit(r, "vllm/v1/spec_decode/eagle.py", "[Doc] Fix typo in the EAGLE docstring (#101)", "2024-02-02")
    _commit(r, "vllm/attention/backends/x.py", "[Bugfix] Fix kernel crash on long prompts (#102)", "2024-02-03")
    _commit(r, "vllm/v1/spec_decode/ngram_proposer.py", "[Feature] Faster n-gram lookup (#105)", "2024-02-04")
    _git(r, "tag", "v0.4.0")
    _commit(r, "vllm/v1/engine/core.py", "[Bugfix] Fix spec decode hang with data parallel (#103)", "2024-03-01")
    _git(r, "tag", "v0.5.0rc1")  # a release candidate: not a release
    _commit(r, "vllm/v1/sample/rejection_sampler.py", "[Bugfix] Fix acceptance rate drop with fp8 (#106)",
            "2024-03-05")
    _git(r, "tag", "v0.5.0")
    _commit(r, "vllm/model_executor/models/deepseek_mtp.py", "[Bugfix] Fix MTP wrong output with prefix caching (#107)",
            "2024-03-10")
    # release branch from v0.5.0 with a cherry-pick of #107, tagged v0.5.1; main goes on to v0.6.0
    _git(r, "checkout", "-q", "-b", "releases/v0.5.1", "v0.5.0")
    _commit(r, "vllm/model_executor/models/deepseek_mtp.py", "[Bugfix] Fix MTP wrong output with prefix caching (#107)",
            "2024-03-11")
    _git(r, "tag", "v0.5.1")
    _git(r, "checkout", "-q", "main")
    _commit(r, "vllm/v1/spec_decode/eagle.py", "[Bugfix] Fix EAGLE IndexError on even K (#108)", "2024-03-20")
    _git(r, "tag", "v0.6.0")
    _commit(r, "vllm/v1/spec_decode/suffix.py", "[Bugfix] Fix suffix decoding garbage output (#109)", "2024-04-01")
    return r


@pytest.fixture(scope="module")
def cands(repo: Path) -> dict[int, object]:
    return {c.pr: c for c in mrb.mine([str(repo / ".git")])}


def test_release_tags_skip_rc_and_pre_0_4(repo: Path) -> None:
    assert mrb.release_tags(str(repo / ".git")) == ["v0.4.0", "v0.5.0", "v0.5.1", "v0.6.0"]


def test_candidates_are_user_facing_spec_decode_fixes(cands: dict) -> None:
    assert set(cands) == {100, 103, 106, 107, 108, 109}  # not the doc fix, the non-spec kernel, the feature


def test_fixed_in_is_the_first_release_tag_containing_the_commit(cands: dict) -> None:
    assert cands[100].fixed_in == "0.4.0" and cands[100].fixed_basis == "git-tag"
    assert cands[103].fixed_in == "0.5.0"  # v0.5.0rc1 holds it too, but is no release
    assert cands[108].fixed_in == "0.6.0"
    assert cands[107].fixed_in == "0.5.1" and len(cands[107].also) == 1  # the cherry-pick onto the release branch
    assert cands[109].fixed_in is None and cands[109].after_newest_tag == "0.6.0"


def test_symptom_methods_and_features_from_the_subject(cands: dict) -> None:
    assert (cands[100].symptom, cands[100].methods, cands[100].features) == ("crash", ["eagle3"], ["tp"])
    assert cands[103].symptom == "hang" and "dp" in cands[103].features
    assert cands[106].symptom == "low-acceptance" and "quantization" in cands[106].features
    assert cands[107].symptom == "wrong-output" and cands[107].methods == ["mtp"]
    assert "prefix-caching" in cands[107].features
    assert cands[108].symptom == "crash" and cands[108].exceptions == ["IndexError"]
    assert cands[109].symptom == "wrong-output" and cands[109].methods == ["suffix"]
    assert cands[100].source == "https://github.com/vllm-project/vllm/pull/100"


def test_symptom_rules() -> None:
    assert mrb.classify("Fix DeepSeek MTP crash due to shape mismatch") == "crash"  # crash before mismatch
    assert mrb.classify("Fix hidden size mismatch between target and eagle head") == "crash"
    assert mrb.classify("Fix accuracy bugs in Qwen3-Next MTP") == "wrong-output"
    assert mrb.classify("Fixed logic that dropped MTP prediction accuracy") == "low-acceptance"
    assert mrb.classify("Avoid rejection sampler OOM by chunking") == "memory"
    assert mrb.classify("Fix dp mtp hang") == "hang"
    assert mrb.classify("Refactor the proposer") is None  # no class stated: no row


def test_outputs_and_table_check(repo: Path, tmp_path: Path) -> None:
    table = tmp_path / "t.toml"
    table.write_text('[[bug]]\nid = "a"\nfixed_in = "0.6.0"\nfixed_basis = "pr-date"\n'
                     'source = "https://github.com/vllm-project/vllm/pull/100"\n'
                     '[[bug]]\nid = "b"\nsource = "https://github.com/vllm-project/vllm/issues/1"\n')
    assert mrb.main(["--git", str(repo / ".git"), "--out", str(tmp_path / "o"), "--check-table", str(table)]) == 0
    rows = json.loads((tmp_path / "o" / "candidates.json").read_text())
    assert {r["pr"] for r in rows} == {100, 103, 106, 107, 108, 109}
    assert (tmp_path / "o" / "candidates.tsv").read_text().count("\n") == 7
    check = (tmp_path / "o" / "table_check.tsv").read_text().splitlines()
    assert check[1].split("\t")[:4] == ["a", "0.6.0", "pr-date", "0.4.0"]  # the tag corrects the estimate
    assert json.loads((tmp_path / "o" / "pr_tags.json").read_text())["tags"] == {"100": "0.4.0"}


def _write(repo: Path, path: str, text: str, subject: str, date: str) -> None:
    f = repo / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", subject, date=date)


def test_replaced_since_is_the_release_that_shipped_the_replaced_code(tmp_path: Path) -> None:
    r = tmp_path / "b"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _write(r, "vllm/v1/spec_decode/eagle.py", "a = 1\nb = 2\n", "Add the proposer (#1)", "2024-01-01")
    _git(r, "tag", "v0.4.0")
    _write(r, "vllm/v1/spec_decode/eagle.py", "a = 1\nb = 3\n", "[Feature] Change b (#2)", "2024-02-01")
    _git(r, "tag", "v0.5.0")
    _write(r, "vllm/v1/spec_decode/eagle.py", "a = 9\nb = 4\n", "[Bugfix] Fix EAGLE crash (#3)", "2024-03-01")
    _write(r, "vllm/v1/spec_decode/eagle.py", "a = 9\nb = 4\nc = 5\n", "[Bugfix] Fix EAGLE hang (#4)", "2024-03-02")
    _write(r, "vllm/v1/spec_decode/eagle.py", "a = 0\nb = 4\nc = 5\n", "[Bugfix] Fix EAGLE wrong output (#5)",
           "2024-03-04")
    _git(r, "tag", "v0.6.0")
    cands = {c.pr: c for c in mrb.mine([str(r / ".git")])}
    mrb.add_blame([str(r / ".git")], cands.values())
    assert cands[3].replaced_since == "0.5.0"  # rewrites #1's line (v0.4.0) and #2's (v0.5.0): the newer counts
    assert cands[4].replaced_since is None  # only adds a line: nothing to blame
    assert cands[5].replaced_since == "0.6.0"  # rewrites #3's line: code of the fix's own release, never shipped
    assert cands[3].fixed_in == "0.6.0"
