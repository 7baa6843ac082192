"""The vLLM release range inferred from what the inputs show (flags, module paths, metrics and header formats)."""

from __future__ import annotations

from packaging.version import Version

from spec_doctor.checks import config as config_checks
from spec_doctor.engine.facts import FactStore, load_providers
from spec_doctor.engine.inputs import Inputs
from spec_doctor.engine.model import Severity
from spec_doctor.knowledge.eras import infer_range, observe, observe_flag

V0_LOG = """\
INFO 11-20 14:03:21 metrics.py:371] Speculative metrics: Draft acceptance rate: 0.672, System efficiency: 0.571, \
Number of speculative tokens: 5, Number of accepted tokens: 16832, Number of draft tokens: 25045, \
Number of emitted tokens: 17155.
ERROR 11-20 14:03:22 engine.py:135] Traceback (most recent call last):
ERROR 11-20 14:03:22 engine.py:135]   File "/usr/lib/python3.10/dist-packages/vllm/spec_decode/spec_decode_worker.py", \
line 500, in execute_model
ERROR 11-20 14:03:22 engine.py:135] IndexError: list index out of range
"""
V1_LOG = """\
(APIServer pid=1) INFO 11-20 14:03:21 [loggers.py:123] Engine 000: Avg prompt throughput: 10.0 tokens/s, \
Avg generation throughput: 50.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, \
Prefix cache hit rate: 0.0%
(APIServer pid=1) INFO 11-20 14:03:21 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.50, \
Accepted throughput: 12.50 tokens/s, Drafted throughput: 24.69 tokens/s, Accepted: 125 tokens, Drafted: 246 tokens, \
Per-position acceptance rate: 0.700, 0.500, 0.300, Avg Draft acceptance rate: 50.0%
"""


def store(tmp_path, log: str | None = None, **kw) -> FactStore:
    providers, _ = load_providers()
    logs = []
    if log is not None:
        p = tmp_path / "vllm.log"
        p.write_text(log)
        logs = [str(p)]
    return FactStore(Inputs(logs=logs, **kw), providers)


def test_range_intersection_and_contradiction():
    v0 = observe("module", "vllm/spec_decode/spec_decode_worker.py", "log:2")
    v1c = observe("spec-format", "v1c", "log:9")
    assert v0 and v1c
    r = infer_range(v0 + observe("spec-format", "v0", "log:1"))
    assert (r.low, r.high, r.high_open) == (Version("0.4.1"), Version("0.9.2"), False)
    flag = observe_flag("--speculative-model", "--cmd")
    assert flag is not None and flag.weight < v1c[0].weight
    # A V1 metrics format contradicts the V0 flag the user typed: the flag (less trusted) is dropped.
    r = infer_range(v1c + [flag])
    assert r.low == Version("0.10.2") and r.high_open and [o.signal_id for o in r.dropped] == [flag.signal_id]
    assert observe_flag("--max-num-seqs", "--cmd") is None  # every release has it: says nothing
    assert infer_range([]) is None


def test_v0_paths_and_metrics_pin_the_v0_era(tmp_path):
    s = store(tmp_path, V0_LOG)
    v = s.get("vllm.version")
    # V0 metrics and a vllm/spec_decode/ frame: 0.4.1-0.9.2; headers without `[` narrow it to <= 0.7.3.
    assert getattr(v, "inferred", False) and v.low == Version("0.4.1") and v.high == Version("0.7.3")
    assert "inferred" in v.source and 0 < v.confidence <= 0.9


def test_v1_format_is_open_ended_and_less_sure(tmp_path):
    rng = store(tmp_path, V1_LOG).get("vllm.version_range")
    assert rng.low == Version("0.10.2") and rng.high_open
    closed = store(tmp_path, V0_LOG).get("vllm.version_range")
    assert rng.confidence < closed.confidence


def test_stated_version_wins(tmp_path):
    s = store(tmp_path, "INFO 11-20 14:03:21 api_server.py:1] vLLM API server version 0.6.3\n" + V0_LOG)
    v = s.get("vllm.version")
    assert v.value == Version("0.6.3") and not getattr(v, "inferred", False)


def _legacy(tmp_path, log: str | None):
    s = store(tmp_path, log, cmd="vllm serve m --speculative-model d --num-speculative-tokens 5")
    facts = {"config.deployment": s.get("config.deployment"), "vllm.version": s.maybe("vllm.version")}
    return {f.id: f for f in config_checks.flags.fn(facts)}["config.flags.legacy-spec"]


def test_legacy_flags_are_not_called_removed_for_their_own_era(tmp_path):
    f = _legacy(tmp_path, None)
    # Only the flags say anything: they pin 0.4.1-0.8.2, where they are valid.
    assert f.severity is Severity.INFO and "valid in the releases" in f.title
    # A V1 0.10.2+ log shows they were typed into a release without them.
    f = _legacy(tmp_path, V1_LOG)
    assert f.severity is Severity.ERROR and "unrecognized arguments" in f.title and f.confidence < 0.95


def test_catalogued_messages_bound_the_range():
    from spec_doctor.knowledge.catalogue import releases
    from spec_doctor.knowledge.eras import observe_message

    order = releases()
    assert order, "the message catalogue lists the releases it was mined from"
    text = "Speculative decoding with this drafter is not supported on this path"
    everywhere = observe_message(text, order[0], order[-1], "log:1", "src")
    assert everywhere is None  # printed by every release: says nothing
    mid = observe_message(text, order[len(order) // 3], order[2 * len(order) // 3], "log:1", "src")
    assert mid is not None and mid.first is not None and mid.last is not None and mid.first <= mid.last
    r = infer_range([mid] + observe("spec-format", "v1c", "log:2"))
    assert r is not None and r.low is not None and r.high is not None


def test_a_message_made_mostly_of_placeholders_says_nothing_about_the_era():
    from spec_doctor.knowledge.catalogue import releases
    from spec_doctor.knowledge.eras import observe_message

    order = releases()
    assert observe_message("{type(self).__name__} object has no attribute {name}", order[1], order[2], "l", "s") is None
