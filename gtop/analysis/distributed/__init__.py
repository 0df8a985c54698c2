"""The processes of a job and its ranks: roles, collective calls, straggler wait, one clock."""
