"""Fact collectors, registered through the `spec_doctor.engine.facts` entry-point group."""
