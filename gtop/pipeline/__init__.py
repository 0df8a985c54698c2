"""gtop.pipeline."""
