"""glibc accepts the broker's malloc thresholds (the CI machine runs Debian's glibc)."""

from brokerd.malloc_tuning import tune_malloc


def test_glibc_accepts_the_thresholds() -> None:
    assert tune_malloc() is True
