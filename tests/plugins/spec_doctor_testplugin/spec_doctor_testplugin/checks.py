"""A check registered from outside spec-doctor, through the same entry-point group as the built-ins."""

from spec_doctor.engine.model import Evidence, Finding, Fix
from spec_doctor.engine.registry import check


@check("testplugin.many-logs", categories=["measurement"], needs=["testplugin.log_count"],
       findings={"testplugin.many-logs.found": "more than one log was given"})
def many_logs(facts):
    """Third-party example: notes when several logs are analysed together."""
    n = facts["testplugin.log_count"]
    if n < 2:
        return []
    return [Finding(id="testplugin.many-logs.found", category="measurement", severity="info", confidence=1.0,
                    title=f"{n} logs analysed together", evidence=(Evidence("--log", f"{n} files"),),
                    fix=Fix("Analyse one server per report when comparing.", ("spec-doctor check --log one.log",)))]


@check("testplugin.only-old", categories=["env-version"], versions="<0.5",
       findings={"testplugin.only-old.hit": "never on modern vLLM"})
def only_old(facts):
    """Applies to vLLM < 0.5 only: proves version gating of plugin checks."""
    return [Finding(id="testplugin.only-old.hit", category="env-version", severity="error", confidence=1.0,
                    title="old vLLM")]
