"""gtop.recordings."""
