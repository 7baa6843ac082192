"""The catalogue's categories against two blind, hand-labelled samples, and the recategorize mode.

fixtures/catalogue/audit-{A,B,C}.jsonl: seeded stratified samples (scripts/catalogue_audit.py says how they were
drawn), each entry labelled with a taxonomy category from its template, kind and source path before the rules'
category was looked at. Audit A led the first rule changes and audit B, drawn after them, measured those; B then led
a second round, and audit C, drawn after that, is the honest figure for the rules as they are. The floors sit just
under the agreement measured: a rule change that breaks more than a label or two fails here.

recategorize (scripts/mine_catalogue.py --recategorize) applies RULES to the stored entries without the source:
on the stored file it changes nothing (the file is in step with RULES), and on a freshly mined catalogue it gives
back exactly what mining wrote, a cut template included.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURES, REPO, load_script, sdist_folder

mc = load_script("mine_catalogue")
audit = load_script("catalogue_audit")
DATA = REPO / "src" / "spec_doctor" / "knowledge" / "data" / "catalogue.json"
TAXONOMY = REPO / "src" / "spec_doctor" / "knowledge" / "data" / "taxonomy.md"
AUDITS = FIXTURES / "catalogue"
# file -> (agreeing labels at least, of how many). Measured 2026-12-02 with the rules of this commit: A 70/80,
# B 58/80, C 59/80 (fixtures/catalogue/README.md has the history).
FLOORS = {"audit-A.jsonl": (68, 80), "audit-B.jsonl": (56, 80), "audit-C.jsonl": (57, 80)}


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(DATA.read_text())


def _categories() -> set[str]:
    return set(re.findall(r"^\| `([a-z-]+)` \|", TAXONOMY.read_text(), re.M)) | {"none"}


# -- recategorize -------------------------------------------------------------------------------------------------
def test_recategorizing_the_stored_file_changes_no_entry(data):
    changed = [e["template"][:80] for e in data["entries"] if mc.recategorize_entry(e) != e]
    assert not changed, f"{len(changed)} entries are out of step with RULES (run --recategorize): {changed[:5]}"


def test_recategorize_is_idempotent_and_keeps_the_file_format(data, tmp_path):
    once = mc.recategorize(data)
    assert mc.recategorize(once)["entries"] == once["entries"]
    assert [e["sources"] for e in once["entries"]] == [e["sources"] for e in data["entries"]]
    out = tmp_path / "catalogue.json"
    mc.write(data, out)
    assert mc.main(["--recategorize", "--out", str(out)]) == 0
    again = json.loads(out.read_text())
    assert again["entries"] == data["entries"]
    assert again["header"]["counts"] == data["header"]["counts"]
    assert again["header"]["projects"]["vllm-ascend"]["counts"] == data["header"]["projects"]["vllm-ascend"]["counts"]
    assert set(again["header"]["rules"]) == {r.name for r in mc.RULES}
    (tmp_path / "bad.json").write_text("{not json")
    assert mc.main(["--recategorize", "--out", str(tmp_path / "bad.json")]) == 2


LONG = ("Speculative decoding with {} cannot be used with the chunked prefill setting given here " + "x" * 420
        + " because of reasons; disabling speculative decoding")
SOURCE = f'''
import logging
logger = logging.getLogger(__name__)


def check(method, k):
    if k > 9:
        raise ValueError(f"num_speculative_tokens={{k}} must be <= 9")
    logger.warning("{LONG}", method)
    assert k, "Graph already captured for the drafter"
'''


def test_recategorize_gives_back_what_mining_wrote_even_for_a_cut_template(tmp_path):
    trees = {"0.1.0": {"vllm/config/speculative.py": SOURCE}, "0.2.0": {"vllm/v1/spec_decode/eagle.py": SOURCE}}
    src = mc.SdistSource(str(sdist_folder(tmp_path / "sdists", "vllm", trees)))
    versions, aggs = mc.mine(src, min_version="0.1.0", log=False)
    mined = mc.build(versions, aggs, src.kind, src.origin)
    cut = [e for e in mined["entries"] if e["template"].endswith("…")]
    assert cut and all(len(e["text"]) > len(e["template"]) for e in cut)
    # The text past the cut decides: the template cut before "disabling speculative decoding" reads otherwise.
    assert {e["rule"] for e in cut} == {"spec-inactive"}
    shortened = mc.recategorize_entry({k: v for k, v in cut[0].items() if k != "text"})
    assert shortened["rule"] == "combo"
    assert mc.recategorize(mined)["entries"] == mined["entries"]


# -- the audits ---------------------------------------------------------------------------------------------------
def _rows(name: str) -> list[dict]:
    return audit.read_labels(AUDITS / name)


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_audit_labels_are_well_formed_and_name_catalogue_entries(name, data):
    rows = _rows(name)
    cats = _categories()
    stored = {audit.key(e): e for e in data["entries"]}
    assert len(rows) == FLOORS[name][1]
    assert sum(r["stratum"] == "spec" for r in rows) == audit.SPEC_N
    for r in rows:
        assert r["label"] in cats and r["why"].strip(), r
        e = stored.get(audit.key(r))
        assert e is not None and e["kind"] == r["kind"], r["template"][:80]
        assert audit.stratum(e) == r["stratum"]


def test_each_audit_is_fresh():
    seen: set[tuple[str, str]] = set()
    for name in sorted(FLOORS):
        keys = {audit.key(r) for r in _rows(name)}
        assert len(keys) == FLOORS[name][1] and not keys & seen, name
        seen |= keys


DRAWN_FROM = "2026-12-01T23:40:27Z"  # header.made_at of the mined catalogue the three audits were drawn from


def test_the_audits_are_the_seeded_draws(data):
    if data["header"]["made_at"] != DRAWN_FROM:
        pytest.skip("the catalogue was mined again since the audits were drawn: their draws differ now")
    earlier: set[tuple[str, str]] = set()
    for name in sorted(FLOORS):
        rows = _rows(name)
        drawn = audit.draw(data["entries"], audit.SEEDS[name[len("audit-"):-len(".jsonl")]], earlier)
        assert drawn == [{k: r[k] for k in ("template", "source", "kind", "stratum")} for r in rows], name
        earlier |= {audit.key(r) for r in rows}


def test_the_draw_is_repeatable_and_leaves_out_what_it_is_told(data):
    first = audit.draw(data["entries"], 7)
    assert first == audit.draw(data["entries"], 7)
    assert first != audit.draw(data["entries"], 8)
    left = audit.draw(data["entries"], 7, {audit.key(r) for r in first})
    assert not {audit.key(r) for r in first} & {audit.key(r) for r in left}


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_rules_agree_with_the_hand_labels(name, capsys):
    ok, n, bad = audit.score(_rows(name))
    with capsys.disabled():
        print(f"\n{name}: rules agree with {ok}/{n} hand labels")
    assert ok >= FLOORS[name][0], [(r["label"], c, rule, r["template"][:70]) for r, c, rule in bad]
