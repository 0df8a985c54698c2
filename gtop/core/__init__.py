"""gtop.core."""
