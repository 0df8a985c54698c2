"""gtop.analysis."""
