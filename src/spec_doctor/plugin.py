"""The one public surface for plugin authors: everything a third-party check or fact provider imports.

    from spec_doctor.plugin import Evidence, Finding, Fix, check

Checks are pure functions of facts (`@check`); fact providers collect one named fact each (`@provides`). Both are
registered through the entry points `spec_doctor.checks` and `spec_doctor.facts` (README, "Plugins").
"""

from spec_doctor.engine.facts import FactStore, FactUnavailable, InputError, Sourced, provides
from spec_doctor.engine.model import Category, Evidence, Finding, Fix, Severity
from spec_doctor.engine.registry import check
from spec_doctor.knowledge.data import threshold

__all__ = ["Category", "Evidence", "FactStore", "FactUnavailable", "Finding", "Fix", "InputError", "Severity",
           "Sourced", "check", "provides", "threshold"]
