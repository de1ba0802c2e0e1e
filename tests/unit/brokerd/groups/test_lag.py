from brokerd.groups.lag import LagRow, group_lag, partition_lag


def test_lag_from_committed_offset() -> None:
    assert partition_lag(40, 0, 100) == 60


def test_no_commit_counts_from_log_start() -> None:
    assert partition_lag(None, 30, 100) == 70


def test_commit_below_log_start_counts_from_log_start() -> None:
    assert partition_lag(10, 30, 100) == 70


def test_lag_is_never_negative() -> None:
    assert partition_lag(120, 0, 100) == 0


def test_group_lag_rows_sorted_and_skip_partitions_without_bounds() -> None:
    rows = group_lag(
        committed={("b", 0): 5, ("a", 1): 7, ("gone", 0): 3},
        log_bounds={("b", 0): (0, 10), ("a", 1): (8, 20), ("a", 0): (0, 4)},
    )
    assert rows == [
        LagRow("a", 0, None, 0, 4, 4),
        LagRow("a", 1, 7, 8, 20, 12),
        LagRow("b", 0, 5, 0, 10, 5),
    ]
