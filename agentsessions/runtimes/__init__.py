"""agentsessions.runtimes."""
