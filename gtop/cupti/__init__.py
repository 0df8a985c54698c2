"""gtop.cupti."""
