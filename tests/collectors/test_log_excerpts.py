"""Two --log excerpts of one server are one server: same process, no overlap in time."""

from __future__ import annotations

from spec_doctor.engine.facts import FactStore, load_providers
from spec_doctor.engine.inputs import Inputs

LINE = ("(APIServer pid={pid}) INFO 06-06 {hh}:{mm:02d}:00 [loggers.py:1] Engine 000: Avg prompt throughput: 10.0 "
        "tokens/s, Avg generation throughput: 50.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: "
        "1.0%, Prefix cache hit rate: 0.0%\n"
        "(APIServer pid={pid}) INFO 06-06 {hh}:{mm:02d}:00 [metrics.py:1] SpecDecoding metrics: Mean acceptance "
        "length: 2.00, Accepted throughput: 10.00 tokens/s, Drafted throughput: 30.00 tokens/s, Accepted: 100 tokens, "
        "Drafted: 300 tokens, Per-position acceptance rate: 0.600, 0.300, 0.100, Avg Draft acceptance rate: 33.3%\n")


def files(tmp_path, a: str, b: str) -> list:
    pa, pb = tmp_path / "a.log", tmp_path / "b.log"
    pa.write_text(a)
    pb.write_text(b)
    providers, _ = load_providers()
    return FactStore(Inputs(logs=[str(pb), str(pa)]), providers).get("logs.files")


def test_two_excerpts_of_one_server_become_one_stream(tmp_path):
    first = "".join(LINE.format(pid=7, hh="10", mm=m) for m in range(0, 3))
    later = "".join(LINE.format(pid=7, hh="11", mm=m) for m in range(0, 2))
    later_file, first_file = files(tmp_path, first, later)  # given out of order: merged in time order
    assert later_file.merged_into is not None and "pid=7" in first_file.merged_from[0][1]
    (s,) = first_file.spec_streams
    assert s.n_spec == 5 and s.accepted == 500 and "b.log" in s.lines_range() and not later_file.spec_streams


def test_overlapping_or_different_processes_stay_apart(tmp_path):
    one = "".join(LINE.format(pid=7, hh="10", mm=m) for m in range(0, 3))
    other = "".join(LINE.format(pid=9, hh="11", mm=m) for m in range(0, 2))
    assert all(f.merged_into is None and not f.merged_from for f in files(tmp_path, one, other))
    same_time = "".join(LINE.format(pid=7, hh="10", mm=m) for m in range(1, 3))
    assert all(f.merged_into is None for f in files(tmp_path, one, same_time))


def test_spec_line_before_the_first_stats_line_joins_the_engine(tmp_path):
    spec_first = LINE.format(pid=7, hh="10", mm=0).split("\n")[1] + "\n"
    from spec_doctor.parsers.logparse import parse_text

    lf = parse_text(spec_first + LINE.format(pid=7, hh="10", mm=1), "x.log")
    (s,) = lf.streams.values()
    assert s.engine == 0 and s.n_spec == 2 and s.n_stats == 1 and s.lines_range() == "x.log:1-3"


def test_zero_prefix_hits_over_a_handful_of_prompt_tokens_say_nothing():
    from spec_doctor.checks import logs as checks
    from spec_doctor.parsers.logparse import parse_text

    few = LINE.replace("Avg prompt throughput: 10.0", "Avg prompt throughput: 2.0")
    lf = parse_text("".join(few.format(pid=7, hh="10", mm=m) for m in range(2)), "x.log")
    assert checks.prefix_cache.fn({"logs.files": [lf], "vllm.version": None, "config.deployment": None}) == []
    lf = parse_text("".join(LINE.replace("10.0 tokens/s, Avg gen", "300.0 tokens/s, Avg gen").format(
        pid=7, hh="10", mm=m) for m in range(2)), "x.log")
    assert checks.prefix_cache.fn({"logs.files": [lf], "vllm.version": None, "config.deployment": None})
