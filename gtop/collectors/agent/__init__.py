"""gtop.collectors.agent."""
