"""Each component's settings from the broker's config keys.

Why here: only the server layer reads :class:`~brokerd.config.BrokerConfig`; the layers
below take small settings objects of their own (named after Kafka's keys), so they test
without a broker config and never see keys that are not theirs.
"""

from __future__ import annotations

from brokerd.config import BrokerConfig
from brokerd.coordination.state_push import Resolve, StatePusher
from brokerd.groups import GroupConfig
from brokerd.replication.client import InterBrokerLink
from brokerd.replication.fetcher import FetchSettings
from brokerd.replication.inter_broker_auth import inter_broker_auth
from brokerd.replication.rules import truncates_on_fetch


def group_config(config: BrokerConfig) -> GroupConfig:
    """The group coordinator's settings from the ``group.*``/``offsets.*`` keys."""
    return GroupConfig(
        num_partitions=config.offsets_topic_num_partitions,
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        offsets_retention_ms=config.offsets_retention_minutes * 60_000,
        consumer_session_timeout_ms=config.group_consumer_session_timeout_ms,
        consumer_heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
    )


def fetch_settings(config: BrokerConfig) -> FetchSettings:
    """The replica fetchers' settings from the ``replica.fetch.*`` keys and
    ``inter.broker.protocol.version``."""
    return FetchSettings(
        config.broker_id, config.replica_fetch_wait_max_ms, config.replica_fetch_max_bytes,
        config.replica_fetch_response_max_bytes, config.replica_socket_timeout_ms,
        inter_broker_link(config), truncates_on_fetch(config.inter_broker_protocol_version))


def inter_broker_link(config: BrokerConfig) -> InterBrokerLink:
    """TLS and SASL of connections to other brokers, from the inter-broker listener's
    security protocol and Kafka's ``ssl.truststore.*``/``sasl.*inter.broker*`` keys."""
    return InterBrokerLink.for_auth(
        inter_broker_auth(config.static_props, config.inter_broker_listener_name))


def state_pusher(config: BrokerConfig, resolve: Resolve) -> StatePusher:
    """The controller's LeaderAndIsr sender (used while this broker is the controller),
    over the inter-broker listener with its TLS/SASL."""
    return StatePusher(config.broker_id, resolve, config.replica_socket_timeout_ms / 1000,
                       inter_broker_link(config))
