"""Low acceptance at a hot temperature is reported as a sampling question first."""

from spec_doctor.checks.sampling import temperature
from spec_doctor.knowledge.deployment import DeploymentConfig, SpecConfig


def _cfg(t):
    return DeploymentConfig(origin="cmd", temperature=t, sources={"temperature": "--temperature"},
                            speculative=SpecConfig(method="draft_model", model="d", num_speculative_tokens=3))


LOG_LOW = [{"acceptance_rate": 0.022, "mean_acceptance_length": 1.07, "source": "log.txt:138-180",
            "formats": ["v1"], "drafted": 14292}]
LOG_OK = [{"acceptance_rate": 0.81, "mean_acceptance_length": 3.4, "source": "log.txt:1-9", "formats": ["v1"],
           "drafted": 5000}]


def test_hot_and_low_is_high_temperature():
    out = temperature.fn({"config.deployment": _cfg(1.0), "logs.acceptance": LOG_LOW, "metrics.deltas": None})
    assert [f.id for f in out] == ["sampling.temperature.low-acceptance"]
    f = out[0]
    assert f.category.value == "high-temperature" and f.severity.value == "warning"
    assert any(e.source == "log.txt:138-180" for e in f.evidence)
    assert any("--temperature 0" in c for c in f.fix.commands)


def test_cool_or_fine_is_silent():
    assert temperature.fn({"config.deployment": _cfg(0.0), "logs.acceptance": LOG_LOW, "metrics.deltas": None}) == []
    assert temperature.fn({"config.deployment": _cfg(None), "logs.acceptance": LOG_LOW, "metrics.deltas": None}) == []
    assert temperature.fn({"config.deployment": _cfg(1.0), "logs.acceptance": LOG_OK, "metrics.deltas": None}) == []
