"""Message schemas, one module per API, each exposing ``MESSAGE``; ``ALL_MESSAGES`` is every
module of this package, found by listing it (adding an API's schema module is all it takes).

Each module was transcribed from Kafka's published JSON message schema of that API: fields
in wire order, Kafka's names in snake_case, version/nullable/tagged ranges and explicit
defaults as Kafka states them.  Ranges are clipped to the versions we support ("0-12" in a
schema whose newest supported version is 10 reads "0+"), and fields that only exist in newer
versions are left out.  To support a newer version: raise ``max_version`` and add the fields
Kafka added; tests/unit/brokerd/protocol/test_kafka_schemas.py checks every version against
an independent description of Kafka's messages.
"""

import importlib
import pkgutil

from brokerd.protocol.schema import ApiMessage

ALL_MESSAGES: tuple[ApiMessage, ...] = tuple(sorted(
    (importlib.import_module(f"{__name__}.{info.name}").MESSAGE
     for info in pkgutil.iter_modules(__path__)),
    key=lambda message: message.api_key))
