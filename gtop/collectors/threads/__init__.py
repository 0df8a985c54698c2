"""gtop.collectors.threads.tiers."""
