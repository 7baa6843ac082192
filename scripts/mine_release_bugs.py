#!/usr/bin/env python3
"""Mine vLLM's git history for speculative-decoding bug fixes, each with the first release that contains it.

Reads a vLLM git directory (bare or not; `fetch` gives one, no work tree needed) with `git log` and the release
tags, never the code: for every non-merge commit whose subject reads as a bug fix (FIX_WORDS) and that touches
speculative-decoding code (SPEC_PATHS always; SHARED_PATHS -- engine args, the model runner, attention metadata
builders, the scheduler -- only when the subject names speculation too) it records

  sha, subject, pr (the subject's "(#NNNNN)"), date (committer date: the merge date of a squash merge),
  paths touched under vllm/, fixed_in (the FIRST release tag vX.Y.Z[.postN] -- no rc/dev tags -- from v0.4.0 on,
  by version order, that contains the commit, i.e. what `git tag --contains` lists; fixed_basis "git-tag"),
  methods and features the subject / paths name (METHODS, FEATURES), the symptom class the subject states
  (SYMPTOM_RULES, first match wins; None when the subject states none) and the exception names it quotes.

A commit that no release tag of the directory contains gets fixed_in None and `after_newest_tag` = the newest
release tag there (a later release, or not released yet: the directory cannot say). Several --git directories
(mirrors / forks of vLLM with different reach) may be given: a commit is the same sha in each; its fixed_in is
the first release tag containing it in any of them.

  python scripts/mine_release_bugs.py --git /work/.mirror/OWNER+vllm/repo --out /tmp/release-bugs

Writes OUT/candidates.json (every candidate, newest first) and OUT/candidates.tsv (one line each, to read).
With --check-table TOML also OUT/table_check.tsv (each row's fixed_in next to the first release tag containing its
source PR) and OUT/pr_tags.json (PR -> that release, for every PR the table cites that a release tag contains).
With --blame each candidate also gets `replaced_since`: the first release tag of the newest commit that last touched
the lines the fix replaces (`git blame` of its parent), i.e. the release from which that code shipped -- the table's
`affected_from` for rows of the 2026-12 batch (None when the fix only adds lines).
The rows of src/spec_doctor/knowledge/data/release_bugs.toml are curated from these by the rules in its header.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

MIN_RELEASE = (0, 4, 0)
RELEASE_TAG = re.compile(r"^v(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?(?:\.post(\d+))?$")  # no rc / dev / a / b tags

# Paths that are speculative-decoding code whatever the subject says.
SPEC_PATHS = [re.compile(p) for p in (
    r"^vllm/spec_decode/", r"^vllm/v1/spec_decode/", r"^vllm/v1/worker/gpu/spec_decode/",
    r"^vllm/config/speculative\.py$", r"^vllm/v1/sample/rejection_sampler\.py$",
    r"^vllm/v1/sample/ops/.*rejection", r"^vllm/model_executor/models/\w*(eagle|mtp|medusa|mlp_speculator|dflash|"
    r"dspark|arctic_speculator)\w*\.py$",
)]
# Shared paths: a commit there counts only when its subject names speculation (SPEC_WORDS).
SHARED_PATHS = [re.compile(p) for p in (
    r"^vllm/engine/arg_utils\.py$", r"^vllm/config/", r"^vllm/v1/worker/gpu_model_runner\.py$",
    r"^vllm/v1/worker/gpu/", r"^vllm/v1/worker/gpu_input_batch\.py$", r"^vllm/v1/attention/", r"^vllm/attention/",
    r"^vllm/v1/core/", r"^vllm/v1/engine/", r"^vllm/v1/sample/", r"^vllm/v1/metrics/", r"^vllm/model_executor/models/",
    r"^vllm/worker/", r"^vllm/engine/", r"^vllm/compilation/", r"^vllm/v1/structured_output/",
)]
SPEC_WORDS = re.compile(r"specul|spec[ _-]?dec|\bspec\b|\bSD\b|draft|eagle|medusa|\bmtp\b|n-?gram|suffix|"
                        r"propos|dflash|dspark|rejection|\baccept", re.I)
FIX_WORDS = re.compile(r"\[bug ?fix\]|\[bug\]|\[fix\]|\bfix(es|ed|ing)?\b|\bbug\b|crash|\bhang|deadlock|\bwrong\b|"
                       r"incorrect|accuracy|regression|broken|\berror\b|illegal memory|\bnan\b|\boom\b|segfault|"
                       r"corrupt|mismatch|garbage|gibberish", re.I)
# Subjects that fix tests, CI, docs, typos or lint only: not a bug a user meets.
NOT_USER_FACING = re.compile(r"\[(ci|ci/build|ci bug|test|tests|doc|docs|build|lint|mypy[^\]]*|ut)\]|"
                             r"\b(typo|flaky|unit ?tests?|ci failures?|test failures?|docstring|ruff|mypy|"
                             r"pre-?commit|type hints?|fix (the )?(ci|tests?|docs?|lint))\b", re.I)

# Methods and features a subject or a touched path names (lower-case names as spec-doctor's table uses them).
METHODS: dict[str, re.Pattern[str]] = {k: re.compile(v, re.I) for k, v in {
    "eagle3": r"eagle[ _-]?3",
    "eagle": r"eagle(?![ _-]?3)",
    "mtp": r"\bmtp\b|_mtp\b|multi[ -]token pred",
    "ngram_gpu": r"ngram[ _]gpu|gpu[ _-]ngram",
    "ngram": r"n-?gram(?![ _]gpu)|prompt[ _]lookup",
    "suffix": r"suffix",
    "medusa": r"medusa",
    "mlp_speculator": r"mlp[ _]speculator",
    "dflash": r"dflash",
    "dspark": r"dspark",
    "draft_model": r"draft[ _]model|small draft|separate draft",
    "extract_hidden_states": r"extract[ _]hidden[ _]states",
}.items()}
FEATURES: dict[str, re.Pattern[str]] = {k: re.compile(v, re.I) for k, v in {
    "cudagraph": r"cuda ?graph|cudagraph|graph capture|full[_ ]graph|piecewise",
    "tp": r"\btp\b|tensor[ _-]parallel|\btp ?[>=]",
    "pp": r"\bpp\b|pipeline[ _-]parallel",
    "dp": r"\bdp\b|data[ _-]parallel",
    "prefix-caching": r"prefix[ _-]cach|apc\b",
    "chunked-prefill": r"chunked[ _-]prefill",
    "async-scheduling": r"async[ _-]sched",
    "structured-output": r"structured[ _-]output|grammar|guided|xgrammar|json schema",
    "multimodal": r"multi-?modal|\bmm\b|vision|\bvl\b|image",
    "lora": r"\blora\b",
    "quantization": r"fp8|fp4|int8|int4|quantiz|awq|gptq|modelopt|nvfp4|mxfp4",
    "hybrid": r"hybrid|mamba|gdn|linear attention|qwen3[._-]?next|qwen3\.5|nemotron[ _-]?h",
    "logprobs": r"logprob",
    "penalties": r"penalt",
    "sampling": r"top[ _-]?[kp]\b|min[ _-]p\b|temperature|sampler|sampling",
    "kv-cache": r"kv[ _-]?cache|block table|slot mapping",
    "mla": r"\bmla\b|flashmla",
    "sliding-window": r"sliding[ _-]window|\bswa\b",
    "reasoning": r"reasoning|thinking",
    "cpu": r"\bcpu\b",
    "rocm": r"rocm|\bamd\b|aiter|hip\b",
    "model-runner-v2": r"mrv2|model runner v2|\bv2 model runner",
}.items()}
# Paths also name a method (the file of a drafter's model or proposer).
PATH_METHODS: list[tuple[re.Pattern[str], str]] = [(re.compile(p), m) for p, m in (
    (r"eagle3", "eagle3"), (r"/eagle\.py$|llama_eagle\.py$|deepseek_eagle", "eagle"), (r"_mtp\.py$|/mtp", "mtp"),
    (r"ngram_proposer_gpu|ngram_gpu", "ngram_gpu"), (r"ngram", "ngram"), (r"suffix", "suffix"),
    (r"medusa", "medusa"), (r"mlp_speculator", "mlp_speculator"), (r"dflash", "dflash"), (r"dspark", "dspark"),
    (r"draft_model", "draft_model"), (r"extract_hidden_states", "extract_hidden_states"),
)]

# The symptom class a subject states (SYMPTOM.md's vocabulary), first rule that matches. A class is never guessed
# from the paths: a subject that states none gives None (such a commit is not made a row).
SYMPTOM_RULES: list[tuple[str, re.Pattern[str]]] = [(c, re.compile(p, re.I)) for c, p in (
    ("zero-acceptance", r"(zero|0 ?%?|no) (draft )?(token )?accept|acceptance (rate )?(of |is |=)?(0\b|zero)|"
                        r"never accept|nothing (is )?accepted"),
    ("low-acceptance", r"accept(ance|ed)? (rate|length|len)|acceptance|accept rate|"
                       r"(draft|mtp|eagle|prediction|speculat\w*) accuracy"),
    ("hang", r"\bhang|\bhung\b|deadlock|stuck|freez|timeout|never (return|finish)"),
    ("memory", r"\boom\b|out of memory|memory (leak|usage|regression|blow)|\bleak|excess(ive)? memory|"
               r"memory profil"),
    # a crash the subject names outright, before the wrong-output words ("shape mismatch" is an exception)
    ("crash", r"crash|segfault|seg fault|illegal memory|\bima\b|assert|(dtype|shape|size) mismatch|"
              r"\b[A-Z]\w*Error\b|device[- ]side|cuda error"),
    ("wrong-output", r"accuracy|wrong|incorrect|garbage|gibberish|corrupt|\bnan\b|mismatch|inconsisten|"
                     r"repeat(ed|ing)? token|degenerat|misalign|stale|invalid (output|token|logprob)|"
                     r"duplicate token|output differ|off[ -]by[ -]one"),
    ("slowdown", r"perf(ormance)? regression|\bslow|throughput|speed ?up|eager fallback|falls? back to eager|"
                 r"recompil"),
    ("latency", r"latency|\bttft\b|\bitl\b|\btpot\b"),
    ("no-metrics", r"metric|prometheus|stat(s|istics)\b"),
    ("unsupported", r"not supported|unsupported|not implemented"),
    ("crash", r"\berror\b|exception|\bfail|\braise|index out of|out of (range|bounds)|none ?type"),
)]
EXCEPTION = re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception)|AssertionError|StopIteration)\b")


@dataclass
class Candidate:
    sha: str
    subject: str
    pr: int | None
    date: str
    paths: list[str]
    fixed_in: str | None
    fixed_basis: str | None
    after_newest_tag: str | None
    methods: list[str]
    features: list[str]
    symptom: str | None
    exceptions: list[str]
    source: str | None = None
    found_in: list[str] = field(default_factory=list)
    also: list[str] = field(default_factory=list)  # other commits of the same PR (cherry-picks)
    replaced_since: str | None = None  # --blame: the release the code the fix replaces first shipped in


def git(gitdir: str, *args: str) -> str:
    out = subprocess.run(["git", f"--git-dir={gitdir}", *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:2])} failed in {gitdir}: {out.stderr.strip()[:200]}")
    return out.stdout


def release_key(tag: str) -> tuple[int, ...] | None:
    m = RELEASE_TAG.match(tag)
    if not m:
        return None
    major, minor, patch, fourth, post = m.groups()
    key = (int(major), int(minor), int(patch), int(fourth or 0), int(post or 0))
    return key if key[:3] >= MIN_RELEASE else None


def release_tags(gitdir: str) -> list[str]:
    """The release tags (v0.4.0 on, no rc/dev), oldest version first."""
    tags = [t for t in git(gitdir, "tag", "--list", "v*").split() if release_key(t) is not None]
    return sorted(tags, key=lambda t: release_key(t) or ())


def first_tag_containing(gitdir: str, tags: Sequence[str]) -> dict[str, str]:
    """sha -> the first release tag (version order) whose history contains it: what `git tag --contains` lists,
    computed once per tag (`git rev-list TAG`) instead of once per commit."""
    first: dict[str, str] = {}
    for tag in tags:
        for sha in git(gitdir, "rev-list", f"{tag}^{{commit}}").split():
            first.setdefault(sha, tag)
    return first


def is_spec_path(path: str) -> bool:
    return any(p.search(path) for p in SPEC_PATHS)


def is_shared_path(path: str) -> bool:
    return any(p.search(path) for p in SHARED_PATHS)


def classify(subject: str) -> str | None:
    for name, pat in SYMPTOM_RULES:
        if pat.search(subject):
            return name
    return None


def names(subject: str, paths: Iterable[str]) -> tuple[list[str], list[str]]:
    methods = [m for m, p in METHODS.items() if p.search(subject)]
    for path in paths if not methods else ():  # the subject's method, else the drafter files it touches
        for p, m in PATH_METHODS:
            if p.search(path) and m not in methods:
                methods.append(m)
                break
    feats = [f for f, p in FEATURES.items() if p.search(subject)]
    return methods, feats


def wanted(subject: str, paths: list[str]) -> bool:
    """A user-facing bug fix that touches speculative-decoding code."""
    if not FIX_WORDS.search(subject) or NOT_USER_FACING.search(subject):
        return False
    code = [p for p in paths if p.startswith("vllm/")]
    if any(is_spec_path(p) for p in code):
        return True
    return bool(SPEC_WORDS.search(subject)) and any(is_shared_path(p) for p in code)


_PR = re.compile(r"\(#(\d+)\)\s*$")


def parse_log(text: str) -> Iterable[tuple[str, str, str, list[str]]]:
    """(sha, date, subject, paths) of each commit of `git log --name-only --format=%x00%H%x01%cs%x01%s`."""
    for chunk in text.split("\x00"):
        if not chunk.strip():
            continue
        head, _, rest = chunk.partition("\n")
        sha, date, subject = head.split("\x01", 2)
        yield sha, date, subject, [p for p in rest.splitlines() if p.strip()]


def mine(gitdirs: Sequence[str], since: str | None = None) -> list[Candidate]:
    found: dict[str, Candidate] = {}
    for gitdir in gitdirs:
        tags = release_tags(gitdir)
        first = first_tag_containing(gitdir, tags)
        newest = tags[-1] if tags else None
        args = ["log", "--all", "--no-merges", "--name-only", "--format=%x00%H%x01%cs%x01%s"]
        if since:
            args.append(f"--since={since}")
        for sha, date, subject, paths in parse_log(git(gitdir, *args, "--", "vllm/")):
            if not wanted(subject, paths):
                continue
            tag = first.get(sha)
            prev = found.get(sha)
            if prev is not None:
                prev.found_in.append(gitdir)
                if tag and (prev.fixed_in is None or (release_key("v" + prev.fixed_in) or ()) > (release_key(tag)
                                                                                                 or ())):
                    prev.fixed_in, prev.fixed_basis, prev.after_newest_tag = tag[1:], "git-tag", None
                continue
            m = _PR.search(subject)
            code = [p for p in paths if p.startswith("vllm/")]
            methods, feats = names(subject, code)
            found[sha] = Candidate(
                sha=sha, subject=subject, pr=int(m.group(1)) if m else None, date=date, paths=code,
                fixed_in=tag[1:] if tag else None, fixed_basis="git-tag" if tag else None,
                after_newest_tag=None if tag else (newest[1:] if newest else None), methods=methods, features=feats,
                symptom=classify(subject), exceptions=sorted(set(EXCEPTION.findall(subject))),
                source=f"https://github.com/vllm-project/vllm/pull/{m.group(1)}" if m else None, found_in=[gitdir])
    newest_all = max((t for d in gitdirs for t in release_tags(d)[-1:]), key=lambda t: release_key(t) or (),
                     default=None)
    for c in found.values():
        if c.fixed_in is None:
            c.after_newest_tag = newest_all[1:] if newest_all else None
    return sorted(by_pr(found.values()), key=lambda c: (c.date, c.sha), reverse=True)


def by_pr(cands: Iterable[Candidate]) -> list[Candidate]:
    """One candidate per PR: a fix cherry-picked onto a release branch is a second commit of the same PR; the
    PR's fixed_in is the first release tag containing any of its commits (the others are listed in `also`)."""
    out: dict[object, Candidate] = {}
    for c in sorted(cands, key=lambda c: (release_key("v" + c.fixed_in) if c.fixed_in else (10**9,), c.date)):
        key: object = c.pr if c.pr is not None else c.sha
        if key in out:
            out[key].also.append(c.sha)
        else:
            out[key] = c
    return list(out.values())


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? ")


def replaced_lines(gitdir: str, sha: str) -> dict[str, list[tuple[int, int]]]:
    """path -> the line ranges (in the fix's parent) of vllm/ code, not tests, that the fix removes or rewrites."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    path: str | None = None
    for line in git(gitdir, "show", "--format=", "-U0", sha, "--", "vllm/").splitlines():
        if line.startswith("--- "):
            path = line[6:] if line.startswith("--- a/") and "/tests/" not in line else None
        elif path and (m := _HUNK.match(line)):
            start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
            if count:
                ranges.setdefault(path, []).append((start, start + count - 1))
    return ranges


def replaced_since(gitdir: str, sha: str, first: dict[str, str]) -> str | None:
    """The first release (no "v") that shipped the code the fix `sha` replaces: of the commits that last touched
    those lines (`git blame` of the fix's parent), the newest one's first release tag (`first`: sha -> tag, as
    first_tag_containing gives). None when the fix only adds lines or no tag contains those commits. The bug may be
    older (the lines may have been rewritten since it came in): this only narrows the affected range."""
    tags = []
    for path, spans in replaced_lines(gitdir, sha).items():
        args = [a for lo, hi in spans for a in ("-L", f"{lo},{hi}")]
        for line in git(gitdir, "blame", "--porcelain", *args, f"{sha}^", "--", path).splitlines():
            m = re.match(r"^([0-9a-f]{40}) \d+ \d+", line)
            if m and m.group(1) in first:
                tags.append(first[m.group(1)])
    newest = max(tags, key=lambda t: release_key(t) or (), default=None)
    return newest[1:] if newest else None


def add_blame(gitdirs: Sequence[str], cands: Iterable[Candidate]) -> None:
    """Set each candidate's `replaced_since` (replaced_since in the first directory that has the commit)."""
    first: dict[str, str] = {}
    for gitdir in gitdirs:
        for sha, tag in first_tag_containing(gitdir, release_tags(gitdir)).items():
            if sha not in first or (release_key(tag) or ()) < (release_key(first[sha]) or ()):
                first[sha] = tag
    for c in cands:
        c.replaced_since = replaced_since(c.found_in[0], c.sha, first)


def table_check(gitdirs: Sequence[str], table: Path) -> tuple[list[dict[str, str | None]], dict[int, str]]:
    """For each row of release_bugs.toml whose source is a vLLM pull request: the first release tag containing a
    commit of that PR (subject ending "(#N)"), next to the row's fixed_in / fixed_basis."""
    import tomllib

    rows = tomllib.loads(table.read_text())["bug"]
    prs: dict[int, str] = {}
    for gitdir in gitdirs:
        first = first_tag_containing(gitdir, release_tags(gitdir))
        for line in git(gitdir, "log", "--all", "--no-merges", "--format=%H%x01%s").splitlines():
            sha, _, subject = line.partition("\x01")
            m = _PR.search(subject)
            tag = first.get(sha)
            if m and tag:
                pr = int(m.group(1))
                if pr not in prs or (release_key(tag) or ()) < (release_key(prs[pr]) or ()):
                    prs[pr] = tag
    out = []
    for r in rows:
        m = re.search(r"/pull/(\d+)$", str(r.get("source", "")))
        tag = prs.get(int(m.group(1))) if m else None
        out.append({"id": r["id"], "source": r.get("source"), "fixed_in": r.get("fixed_in"),
                    "fixed_basis": r.get("fixed_basis"), "git_tag": tag[1:] if tag else None})
    cited = {int(m.group(1)) for r in rows for m in [re.search(r"/pull/(\d+)$", str(r.get("source", "")))] if m}
    return out, {pr: prs[pr][1:] for pr in sorted(cited) if pr in prs}


def write(cands: list[Candidate], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "candidates.json").write_text(json.dumps([asdict(c) for c in cands], indent=1) + "\n")
    lines = ["date\tfixed_in\tsymptom\tmethods\tfeatures\tpr\tsubject"]
    for c in cands:
        fixed = c.fixed_in or f">{c.after_newest_tag}?"
        lines.append("\t".join([c.date, fixed, c.symptom or "-", ",".join(c.methods) or "-",
                                ",".join(c.features) or "-", str(c.pr or "-"), c.subject]))
    (out / "candidates.tsv").write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--git", action="append", required=True, help="a vLLM git directory (repeatable)")
    ap.add_argument("--out", required=True, help="folder for candidates.json / candidates.tsv")
    ap.add_argument("--since", help="only commits after this date (git log --since)")
    ap.add_argument("--check-table", type=Path, help="also write OUT/table_check.tsv: each row's PR vs its git tag")
    ap.add_argument("--blame", action="store_true",
                    help="also give each candidate replaced_since (git blame of the lines the fix replaces; slow)")
    ns = ap.parse_args(argv)
    if ns.check_table:
        rows, tags = table_check(ns.git, ns.check_table)
        Path(ns.out).mkdir(parents=True, exist_ok=True)
        (Path(ns.out) / "pr_tags.json").write_text(json.dumps(
            {"made_by": "scripts/mine_release_bugs.py --check-table", "git": [Path(g).parent.name for g in ns.git],
             "about": "PR -> the first release tag containing a commit of it (git tag --contains)",
             "tags": {str(k): v for k, v in tags.items()}}, indent=1) + "\n")
        lines = ["id\tfixed_in\tfixed_basis\tgit_tag\tsource"] + [
            "\t".join(str(r[k] or "-") for k in ("id", "fixed_in", "fixed_basis", "git_tag", "source")) for r in rows]
        (Path(ns.out) / "table_check.tsv").write_text("\n".join(lines) + "\n")
    cands = mine(ns.git, ns.since)
    if ns.blame:
        add_blame(ns.git, cands)
    write(cands, Path(ns.out))
    tagged = sum(1 for c in cands if c.fixed_in)
    print(f"{len(cands)} candidates ({tagged} in a release tag) -> {ns.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
