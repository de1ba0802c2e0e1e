import pytest

from brokerd.storage.config import LONG_MAX, LogConfig


def test_defaults_are_kafkas() -> None:
    config = LogConfig()
    assert config.segment_bytes == 1073741824
    assert config.retention_ms == 604800000
    assert config.retention_bytes == -1
    assert config.index_interval_bytes == 4096
    assert config.max_message_bytes == 1048588
    assert config.flush_messages == LONG_MAX
    assert config.cleanup_policy == ("delete",)


def test_from_props_parses_kafka_names_and_ignores_foreign_ones() -> None:
    config = LogConfig.from_props(
        {
            "segment.bytes": "1024",
            "retention.ms": "-1",
            "cleanup.policy": "compact, delete",
            "unclean.leader.election.enable": "TRUE",
            "message.timestamp.type": "LogAppendTime",
            "compression.type": "zstd",
        }
    )
    assert config.segment_bytes == 1024
    assert config.retention_ms == -1
    assert config.cleanup_policy == ("compact", "delete")
    assert config.deletes_old_segments
    assert config.unclean_leader_election_enable is True
    assert config.log_append_time


def test_legacy_timestamp_difference_sets_both_windows_unless_overridden() -> None:
    config = LogConfig.from_props(
        {
            "message.timestamp.difference.max.ms": "5000",
            "message.timestamp.after.max.ms": "100",
        }
    )
    assert config.message_timestamp_before_max_ms == 5000
    assert config.message_timestamp_after_max_ms == 100


def test_props_round_trip() -> None:
    config = LogConfig(segment_ms=1, cleanup_policy=("compact",), min_insync_replicas=2)
    assert LogConfig.from_props(config.to_props()) == config
    assert not config.deletes_old_segments


@pytest.mark.parametrize(
    "props",
    [
        {"segment.bytes": "big"},
        {"message.timestamp.type": "WallClock"},
        {"cleanup.policy": "shred"},
        {"unclean.leader.election.enable": "yes"},
        {"min.insync.replicas": "0"},
    ],
)
def test_invalid_values_are_rejected(props: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        LogConfig.from_props(props)
