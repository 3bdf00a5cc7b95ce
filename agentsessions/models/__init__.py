"""agentsessions.models."""
