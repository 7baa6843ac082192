"""A model-specific MTP type written as the method ("glm4_moe_mtp", "qwen3_5_mtp"): known through its drafter module
(knowledge/data/model_support.json drafters) and vLLM's rewrite of every MTP type to 'mtp' from 0.11.0."""

from __future__ import annotations

from packaging.version import Version

from spec_doctor.knowledge.specdata import known_method, method_support, renamed_method


def test_an_mtp_drafter_type_is_a_known_method_run_as_mtp():
    assert known_method("glm4_moe_mtp") and known_method("qwen3_5_mtp")
    assert method_support("glm4_moe_mtp", Version("0.20.0")).status == "supported"
    new, row = renamed_method("qwen3_5_mtp", Version("0.20.0"))
    assert new == "mtp" and "speculative.py@v0.11.0" in row["rename_source"]


def test_before_its_drafter_module_the_type_is_not_yet_there_and_before_the_rename_unknown():
    assert method_support("qwen3_5_mtp", Version("0.10.1")).status == "not-yet"  # drafter module from 0.17.0
    assert method_support("glm4_moe_mtp", Version("0.10.1")).status == "no-data"  # module from 0.10.0, names not mined
    assert renamed_method("glm4_moe_mtp", Version("0.10.1")) is None


def test_a_made_up_mtp_name_stays_unknown():
    assert not known_method("foo_mtp")
    assert method_support("foo_mtp", Version("0.20.0")).status == "unknown-method"
