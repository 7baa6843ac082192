"""A minimal third-party spec-doctor plugin (tests only)."""
