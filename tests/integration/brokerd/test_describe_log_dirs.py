"""DescribeLogDirs through kafka-python's ``KafkaAdminClient.describe_log_dirs`` (what
``kafka-log-dirs`` and topic-size pages ask) against a real broker: its one log dir, each
partition's size on disk after a produce, and the request's topic filter."""

from __future__ import annotations

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from tests.integration.brokerd.broker_process import BrokerProcess

RECORD = b"x" * 1000


def test_kafka_python_sees_each_partitions_size_in_its_log_dir(broker: BrokerProcess) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("sized", 2, 1), NewTopic("other", 1, 1)])
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
        for _ in range(100):
            producer.send("sized", RECORD, partition=0)
        producer.flush(30)
        producer.close()

        [answer] = admin.describe_log_dirs()
        assert answer["broker"] == 1
        [log_dir] = answer["log_dirs"]
        assert (log_dir["error_code"], log_dir["log_dir"]) == (0, str(broker.log_dir))
        sizes = {(topic["name"], p["partition_index"]): p["partition_size"]
                 for topic in log_dir["topics"] for p in topic["partitions"]}
        assert sizes[("sized", 0)] >= 100 * len(RECORD)
        assert sizes[("sized", 1)] == 0 and sizes[("other", 0)] == 0

        [only] = admin.describe_log_dirs({"sized": [1]})
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
                for t in only["log_dirs"][0]["topics"]] == [("sized", [1])]
    finally:
        admin.close()
