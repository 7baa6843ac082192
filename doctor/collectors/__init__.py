"""Fact collectors, registered through the `spec_doctor.facts` entry-point group."""
