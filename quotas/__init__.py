"""Quota plans and Kafka quota overrides, published to ZooKeeper for the brokers."""
