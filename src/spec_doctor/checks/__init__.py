"""Built-in spec-doctor checks, registered through the `spec_doctor.checks` entry-point group."""
