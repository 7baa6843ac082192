"""The streaming log parser on every format vLLM printed, real issue logs and real-world noise."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest

from spec_doctor.parsers.logparse import parse_log, parse_spec, parse_stats, parse_text, split_records
from spec_doctor.parsers.logparse.lines import parse_envelope

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "fixtures" / "cases"
LOGS = ROOT / "fixtures" / "logs"

# Rendered from the verbatim format strings (vllm-signals.md §3, cited per line).
V0_TYPO = ("INFO 06-01 10:00:00 metrics.py:345] Speculative metrics: Draft acceptance rate: 0.672, System efficiency: "
           "0.571, Number of speculative tokens: 5, Number of accepted tokens: 16832, Number of draft tokens tokens: "
           "25045, Number of emitted tokens tokens: 17155.")  # vllm/engine/metrics.py@v0.4.1..v0.5.2
V1A = ("INFO 04-01 10:00:00 [metrics.py:53] SpecDecoding metrics: Draft acceptance rate: 50.0%, Accepted: 12345 tokens, "
       "Drafted: 24690 tokens")  # vllm/v1/spec_decode/metrics.py@v0.8.3
V1B_085 = ("INFO 05-01 10:00:00 [metrics.py:82] SpecDecoding metrics: Draft acceptance rate: 50.0%, Mean acceptance "
           "length: 1.50, Accepted: 12345 tokens, Drafted: 24690 tokens, Per-position acceptance rate: 0.700, 0.500, "
           "0.300")  # @v0.8.5: mean length without the bonus token
V1C = ("(APIServer pid=1234) INFO 11-20 14:03:21 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.50, "
       "Accepted throughput: 1234.50 tokens/s, Drafted throughput: 2469.00 tokens/s, Accepted: 12345 tokens, Drafted: "
       "24690 tokens, Per-position acceptance rate: 0.700, 0.500, 0.300, Avg Draft acceptance rate: 50.0%")
V0_STATS = ("INFO 11-20 14:03:21 metrics.py:349] Avg prompt throughput: 1523.4 tokens/s, Avg generation throughput: "
            "412.3 tokens/s, Running: 32 reqs, Swapped: 0 reqs, Pending: 7 reqs, GPU KV cache usage: 96.2%, CPU KV "
            "cache usage: 0.0%.")
V1_FIRST = ("INFO 11-20 14:03:21 loggers.py:72] Avg prompt throughput: 1523.4 tokens/s, Avg generation throughput: "
            "412.3 tokens/s, Running: 32 reqs, Waiting: 7 reqs GPU KV cache usage: 96.2%.")  # 0.7.1: no comma
V1_COMPOSED = ("(APIServer pid=1234) INFO 11-20 14:03:21 [loggers.py:335] Engine 000: Avg prompt throughput: 1523.4 "
               "tokens/s, Avg generation throughput: 412.3 tokens/s, Running: 32 reqs, Waiting: 7 reqs, Preemptions: "
               "12, GPU KV cache usage: 99.1%, Prefix cache hit rate: 43.2%, MM cache hit rate: 6.5%")


def test_v0_formats_cumulative_and_typo():
    sp = parse_spec(parse_envelope(V0_TYPO).msg)
    assert sp.fmt == "v0" and sp.k == 5 and sp.accepted == 16832 and sp.drafted == 25045 and sp.emitted == 17155
    assert sp.rate == pytest.approx(0.672) and sp.mean_len == pytest.approx(0.571 * 6)


def test_v1_formats():
    a = parse_spec(parse_envelope(V1A).msg)
    assert (a.fmt, a.rate, a.accepted, a.drafted) == ("v1a", 0.5, 12345, 24690)
    b = parse_spec(parse_envelope(V1B_085).msg)
    # 0.8.5 printed accepted/drafts; normalized to include the bonus token like 0.9+.
    assert b.fmt == "v1b" and b.mean_len == pytest.approx(2.5) and b.per_position == (0.7, 0.5, 0.3) and b.k == 3
    c = parse_spec(parse_envelope(V1C).msg)
    assert c.fmt == "v1c" and c.mean_len == 2.5 and c.rate == 0.5 and c.accepted_tps == 1234.5 and not c.cut


def test_stats_formats():
    v0 = parse_stats(parse_envelope(V0_STATS).msg)
    assert v0.v0 and v0.running == 32 and v0.waiting == 7 and v0.kv_usage == 96.2 and v0.cpu_kv_usage == 0.0
    first = parse_stats(parse_envelope(V1_FIRST).msg)
    assert first.waiting == 7 and first.kv_usage == 96.2
    comp = parse_stats(parse_envelope(V1_COMPOSED).msg)
    assert comp.engine == 0 and comp.preemptions == 12 and comp.prefix_hit == 43.2 and comp.kv_usage == 99.1


def test_real_v1_log_cut_line_and_windows():
    lf = parse_log(str(CASES / "vllm-issue-19254" / "log.txt"))
    (s,) = lf.spec_streams
    assert s.n_stats == 3 and s.n_spec == 3 and s.k == 3
    assert s.accepted == 150 + 725 + 5306 and s.drafted == 387 + 1488 + 8703
    assert s.max_running == 629 and s.max_kv == 17.6
    # The last line stops at "0.730, 0.5": it still counts, but not in the per-position curve.
    assert s.windows[-1].spec.cut and len(s.per_position) == 3


def test_real_v0_log():
    lf = parse_log(str(CASES / "vllm-issue-9539" / "log.txt"))
    (s,) = lf.spec_streams
    assert s.spec_formats == {"v0"} and s.k == 3 and s.accepted == 8547 and s.emitted == 10616
    assert s.mean_acceptance_length == pytest.approx(0.598 * 4)


def test_two_servers_in_one_file_kept_apart():
    lf = parse_log(str(CASES / "vllm-issue-39680" / "log.txt"))
    by_pid = {s.pid: s for s in lf.streams.values()}
    assert set(by_pid) == {1422509, 1409788}
    assert by_pid[1422509].n_spec == 0 and by_pid[1409788].n_spec == 1


def test_noise_docker_ansi_crlf_glued_cut_gz():
    lf = parse_log(str(LOGS / "noisy_v1.log.gz"))
    assert lf.gz and lf.vllm_version.value == "0.9.0.1"
    assert lf.startup["gpu_kv_cache_tokens"].value == 434368
    (s,) = lf.streams.values()
    # The glued spec line still counts, and so does the last one, cut after "Mean acceptance length: 2.16, Ac":
    # read as far as it goes (its mean length), never as counts.
    assert s.prefix == "vllm-1" and s.n_stats == 6 and s.n_spec == 7
    assert s.k == 3 and s.accepted == 2 * (150 + 725 + 5306) and s.partial_mean_lens == [2.16]


def test_data_parallel_engines_and_servers():
    lf = parse_log(str(LOGS / "noisy_dp.log"))
    keys = sorted((s.pid, s.engine) for s in lf.streams.values())
    assert keys == [(10, 0), (10, 1), (20, 0)]
    e0 = lf.streams[("", 10, 0)]
    assert e0.per_position[-1] == 0.0 and e0.n_spec == 6


def test_split_glued_records_and_prefix():
    glued = V1C + V0_STATS
    assert len(split_records(glued)) == 2
    assert len(split_records("vllm-1  | " + V0_STATS)) == 1
    assert len(split_records("a\rb\r")) == 2


def test_chunk_boundaries_do_not_change_results(tmp_path):
    text = (CASES / "vllm-issue-19254" / "log.txt").read_text() * 50
    p = tmp_path / "x.log"
    p.write_text(text)
    ref = parse_log(str(p))
    small = parse_log(str(p), chunk_size=97)
    a, b = ref.spec_streams[0], small.spec_streams[0]
    assert (a.accepted, a.drafted, a.n_stats, a.last_line) == (b.accepted, b.drafted, b.n_stats, b.last_line)


def test_huge_single_line_is_truncated_in_constant_memory(tmp_path):
    p = tmp_path / "one-line.log"
    with open(p, "wb") as f:
        f.write(b"INFO 01-01 00:00:00 [x.py:1] Error " + b"y" * (48 << 20) + b"\n" + V1C.encode() + b"\n")
    tracemalloc.start()
    lf = parse_log(str(p), chunk_size=1 << 20, max_line=1 << 16)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert lf.truncated_lines == 1 and lf.lines == 2
    assert lf.spec_streams and lf.spec_streams[0].last_line == 2
    assert peak < 8 << 20, peak  # a few chunks, never the 48 MB line


def test_line_numbers_and_crlf():
    lf = parse_text("noise\r\n" + V0_STATS + "\r\nmore noise\r\n" + V1C + "\r\n")
    stats = [s for s in lf.streams.values() if s.n_stats][0]
    spec = lf.spec_streams[0]
    assert stats.first_line == 2 and spec.first_line == 4


def test_non_utf8_and_truncated_gzip(tmp_path):
    p = tmp_path / "bad.log.gz"
    import random

    rnd = random.Random(0)
    text = "".join(V1C.replace("12345", str(rnd.randrange(10**6))) + "\n" + "".join(
        chr(rnd.randrange(32, 127)) for _ in range(200)) + "\n" for _ in range(3000))
    data = gzip.compress(text.encode() + b"\xff\xfe\n")
    p.write_bytes(data[: len(data) // 2])
    lf = parse_log(str(p))  # a cut .gz keeps what was readable
    assert 100 < lf.spec_streams[0].n_spec < 3000


def test_startup_facts_v1():
    text = "\n".join([
        "(EngineCore_DP0 pid=5) INFO 11-20 14:00:01 [core.py:93] Initializing a V1 LLM engine (v0.11.2) with config: "
        "model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=SpeculativeConfig(method='eagle3', "
        "model='yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', num_spec_tokens=3), tokenizer='x'",
        "(APIServer pid=4) INFO 11-20 14:00:00 [utils.py:233] non-default args: {'model': 'x', 'speculative_config': "
        "{'method': 'eagle3', 'num_speculative_tokens': 3}}",
        "(EngineCore_DP0 pid=5) INFO 11-20 14:00:30 [gpu_worker.py:440] Available KV cache memory: 52.13 GiB",
        "(EngineCore_DP0 pid=5) INFO 11-20 14:00:31 [kv_cache_utils.py:1147] GPU KV cache size: 434,368 tokens, "
        "Maximum concurrency for 8,192 tokens per request: 53.02x",
        "(EngineCore_DP0 pid=5) INFO 11-20 14:00:20 [gpu_model_runner.py:2000] Model loading took 15.0 GiB memory and "
        "12.5 seconds",
    ])
    lf = parse_text(text, "t.log")
    assert lf.vllm_version.value == "0.11.2" and lf.engine.value == "v1"
    assert lf.spec_config == {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "k": 3,
                              "source": "t.log:1"}
    kinds = [c["kind"] for c in lf.config_lines]
    assert kinds == ["engine-config", "non-default-args"]
    st = lf.startup
    assert st["available_kv_memory_gib"].value == 52.13 and st["gpu_kv_cache_tokens"].value == 434368
    assert st["max_concurrency"].value == 53.02 and st["max_model_len"].value == 8192
    assert st["model_weights_gib"].value == 15.0 and st["model_weights_gib"].source == "t.log:5"


PYDANTIC_CONFIG_ERROR = """INFO 04-01 10:00:01 [api_server.py:1043] vLLM API server version 0.16.0
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1520, in create_speculative_config
    return SpeculativeConfig(**self.speculative_config)
pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig
  Value error, Eagle3 is only supported for ['llama', 'qwen'] models. Got self.target_model_config.hf_text_config.\
model_type='deepseek_v3' [type=value_error, input_value=ArgsKwargs((), {'method': 'eagle3'}), input_type=ArgsKwargs]
    For further information visit https://errors.pydantic.dev/2.11/v/value_error
"""


@pytest.mark.parametrize("reference", [False, True])
def test_a_pydantic_validation_error_keeps_the_validators_message(reference: bool) -> None:
    """The message vLLM's config validator raised is on the line under `ValidationError: 1 validation error for X`
    (pydantic's `Value error, ...`): it joins the traceback's message, without pydantic's `[type=...]` tail."""
    lf = parse_text(PYDANTIC_CONFIG_ERROR, reference=reference)
    [tb] = lf.ev.tracebacks
    assert tb.short_type == "ValidationError"
    assert tb.exc_msg is not None and tb.exc_msg.startswith("1 validation error for SpeculativeConfig: Value error, "
                                                            "Eagle3 is only supported for ['llama', 'qwen'] models.")
    assert tb.exc_msg.endswith("model_type='deepseek_v3'")
    # a `Value error, ...` line far from any ValidationError is not joined to an unrelated traceback
    lf = parse_text(PYDANTIC_CONFIG_ERROR.replace("  Value error", "\n\n\n\n  Value error"), reference=reference)
    assert lf.ev.tracebacks[0].exc_msg == "1 validation error for SpeculativeConfig"
