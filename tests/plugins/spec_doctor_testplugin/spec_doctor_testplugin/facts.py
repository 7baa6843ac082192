"""A fact this plugin contributes: the number of --log files given."""

from spec_doctor.engine.facts import FactUnavailable, provides


@provides("testplugin.log_count")
def log_count(store):
    if not store.inputs.logs:
        raise FactUnavailable("no --log given")
    return len(store.inputs.logs)
