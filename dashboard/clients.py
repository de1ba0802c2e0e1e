"""Copy-ready client settings for a new API key (pure text, shown once with the secret).

Clients connect with SASL_SSL and SCRAM-SHA-512: the key is the SASL username and the secret
its password; the brokers verify it against the salted credential published to ZooKeeper.
"""

from __future__ import annotations


def client_settings(bootstrap: str, key: str, secret: str) -> dict[str, str]:
    """One snippet per client, keyed by the client's name."""
    confluent = (
        "from confluent_kafka import Producer\n\n"
        "producer = Producer({\n"
        f'    "bootstrap.servers": "{bootstrap}",\n'
        '    "security.protocol": "SASL_SSL",\n'
        '    "sasl.mechanisms": "SCRAM-SHA-512",\n'
        f'    "sasl.username": "{key}",\n'
        f'    "sasl.password": "{secret}",\n'
        "})\n")
    kafka_python = (
        "from kafka import KafkaProducer\n\n"
        "producer = KafkaProducer(\n"
        f'    bootstrap_servers="{bootstrap}",\n'
        '    security_protocol="SASL_SSL",\n'
        '    sasl_mechanism="SCRAM-SHA-512",\n'
        f'    sasl_plain_username="{key}",\n'
        f'    sasl_plain_password="{secret}",\n'
        ")\n")
    kcat = (
        f"kcat -b {bootstrap} -X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 \\\n"
        f"     -X sasl.username={key} -X sasl.password='{secret}' -L\n")
    return {"confluent-kafka": confluent, "kafka-python": kafka_python, "kcat": kcat}
