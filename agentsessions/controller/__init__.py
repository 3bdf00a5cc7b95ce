"""agentsessions.controller."""
