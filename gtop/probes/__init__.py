"""gtop.probes."""
