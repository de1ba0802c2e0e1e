"""The REST admin API (DRF), versioned under /api/v1/."""
