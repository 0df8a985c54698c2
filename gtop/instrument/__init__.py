"""gtop.instrument."""
