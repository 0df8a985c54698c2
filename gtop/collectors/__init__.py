"""gtop.collectors."""
