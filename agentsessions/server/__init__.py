"""agentsessions.server."""
