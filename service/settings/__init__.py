"""Settings split by environment: ``base`` holds everything, ``dev``/``test``/``prod`` override."""
