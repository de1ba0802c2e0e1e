"""The broker's network side — the only package that opens sockets: listeners,
connections, request dispatch, one handler module per API (``handlers/``), metrics."""
