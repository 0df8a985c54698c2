"""What the host threads did: time by state, folded stacks, stacks carried to unsampled waits."""
