"""The codec's exceptions.

Every failure to read untrusted bytes surfaces as :class:`ProtocolError` (or a subclass), so the
network layer needs exactly one ``except`` clause to turn a bad frame into a closed connection
or an error response.
"""


class ProtocolError(Exception):
    """Malformed, truncated or oversized input, or a body that cannot be encoded."""


class UnsupportedVersionError(ProtocolError):
    """The request's (api_key, api_version) is not one this codec knows.

    Carries the header fields that could be read so the server can still answer: Kafka clients
    probe with a newer ApiVersions than the broker knows and expect error 35 in a v0 body with
    the same correlation id.
    """

    def __init__(
        self,
        api_key: int,
        api_version: int,
        correlation_id: int,
        client_id: str | None = None,
    ) -> None:
        super().__init__(f"unsupported api_key={api_key} api_version={api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id


class CorruptRecordError(ProtocolError):
    """A record batch fails validation (bad magic, length or CRC); ``str()`` says why."""
