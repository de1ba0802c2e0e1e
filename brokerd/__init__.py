"""brokerd: a Kafka-protocol broker node. Never imports Django."""
