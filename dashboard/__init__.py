"""The self-service web console."""
