"""Copy-ready client settings for a new API key (shown once, with the secret).

Clients connect with SASL and SCRAM-SHA-512: the key is the SASL username and the secret its
password; the brokers verify it against the salted credential published to ZooKeeper.  Over
SASL_SSL a client must trust the brokers' certificate: when the cluster's CA is not a public
one (``settings.SSL_CA_LOCATION``, e.g. the local CA of ``make run``), the console offers it
for download as :data:`CA_FILE_NAME` and every snippet names that file.

Each snippet runs as pasted (after naming a topic): it produces one record and reads it back.
:func:`snippets` is pure; :func:`client_settings` adds what the deployment's settings say.
"""

from __future__ import annotations

from django.conf import settings

CA_FILE_NAME = "kafkasaas-ca.pem"
EXAMPLE_TOPIC = "my-topic"
EXAMPLE_GROUP = "my-group"


def snippets(bootstrap: str, key: str, secret: str, *, security_protocol: str = "SASL_SSL",
             ca_file: str | None = None) -> dict[str, str]:
    """One snippet per client, keyed by the client's name; ``ca_file`` None: the system's
    trust store verifies the brokers (or the protocol has no TLS)."""
    tls_ca = ca_file if security_protocol.endswith("SSL") else None
    confluent_ca = (f'    "ssl.ca.location": "{tls_ca}",  # the cluster CA, from the console\n'
                    if tls_ca else "")
    confluent = (
        "from confluent_kafka import Consumer, Producer\n\n"
        "config = {\n"
        f'    "bootstrap.servers": "{bootstrap}",\n'
        f'    "security.protocol": "{security_protocol}",\n'
        '    "sasl.mechanisms": "SCRAM-SHA-512",\n'
        f'    "sasl.username": "{key}",\n'
        f'    "sasl.password": "{secret}",\n'
        f"{confluent_ca}"
        "}\n"
        f'topic = "{EXAMPLE_TOPIC}"\n\n'
        "producer = Producer(config)\n"
        'producer.produce(topic, b"hello")\n'
        "assert producer.flush(10) == 0\n\n"
        f'consumer = Consumer({{**config, "group.id": "{EXAMPLE_GROUP}", '
        '"auto.offset.reset": "earliest"})\n'
        "consumer.subscribe([topic])\n"
        "message = consumer.poll(15)\n"
        "print(message.value() if message is not None and not message.error() else message)\n"
        "consumer.close()\n")
    python_ca = f'    ssl_cafile="{tls_ca}",  # the cluster CA, from the console\n' if tls_ca else ""
    kafka_python = (
        "from kafka import KafkaConsumer, KafkaProducer\n\n"
        "config = dict(\n"
        f'    bootstrap_servers="{bootstrap}",\n'
        f'    security_protocol="{security_protocol}",\n'
        '    sasl_mechanism="SCRAM-SHA-512",\n'
        f'    sasl_plain_username="{key}",\n'
        f'    sasl_plain_password="{secret}",\n'
        f"{python_ca}"
        ")\n"
        f'topic = "{EXAMPLE_TOPIC}"\n\n'
        "producer = KafkaProducer(**config)\n"
        'producer.send(topic, b"hello").get(timeout=10)\n'
        "producer.close()\n\n"
        f'consumer = KafkaConsumer(topic, group_id="{EXAMPLE_GROUP}", '
        'auto_offset_reset="earliest",\n'
        "                         consumer_timeout_ms=15000, **config)\n"
        "print(next(iter(consumer)).value)\n"
        "consumer.close()\n")
    kcat_ca = f" -X ssl.ca.location={tls_ca}" if tls_ca else ""
    kcat = (
        f"auth='-X security.protocol={security_protocol} -X sasl.mechanisms=SCRAM-SHA-512\n"
        f"      -X sasl.username={key} -X sasl.password={secret}{kcat_ca}'\n"
        f"topic={EXAMPLE_TOPIC}\n"
        f'echo hello | kcat -b {bootstrap} $auth -P -t "$topic"\n'
        f'kcat -b {bootstrap} $auth -C -t "$topic" -o beginning -e\n')
    return {"confluent-kafka": confluent, "kafka-python": kafka_python, "kcat": kcat}


def ca_download_available() -> bool:
    """Whether the console offers a CA file: a private CA is configured and clients use TLS."""
    return bool(settings.SSL_CA_LOCATION) and settings.CLIENT_SECURITY_PROTOCOL.endswith("SSL")


def client_settings(bootstrap: str, key: str, secret: str) -> dict[str, str]:
    """:func:`snippets` with this deployment's listener protocol and CA file."""
    return snippets(bootstrap, key, secret, security_protocol=settings.CLIENT_SECURITY_PROTOCOL,
                    ca_file=CA_FILE_NAME if ca_download_available() else None)
