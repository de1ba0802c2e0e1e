"""Command line: ``brokerd serve …`` (also ``python -m brokerd serve …``).

Flags override the ``--config`` properties file, which overrides Kafka's defaults.  The
process runs one uvloop event loop; SIGTERM/SIGINT trigger the graceful shutdown
described in ``brokerd.server.broker``.  Exit status: 0 after a clean stop, 1 when the
broker could not start, 2 for a bad command line or configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from brokerd.config import BrokerConfig, ConfigError, load_config

log = logging.getLogger("brokerd")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="brokerd", description="Kafka-protocol broker")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a broker until SIGTERM")
    serve.add_argument("--broker-id", help="broker.id (unique, >= 0)")
    serve.add_argument("--listeners", help="listeners, e.g. PLAINTEXT://127.0.0.1:9092")
    serve.add_argument("--advertised-listeners", help="advertised.listeners (default: listeners)")
    serve.add_argument("--zookeeper", help="zookeeper.connect, e.g. localhost:2181/kafkasaas")
    serve.add_argument("--log-dirs", help="log.dirs, comma-separated directories")
    serve.add_argument("--config", type=Path, help="Kafka-style key=value properties file")
    serve.add_argument("--metrics-port", help="serve Prometheus metrics on this port")
    serve.add_argument("--log-level", default="INFO", help="Python logging level")
    return parser


def config_from_args(args: argparse.Namespace) -> BrokerConfig:
    return load_config(args.config, {
        "broker.id": args.broker_id,
        "listeners": args.listeners,
        "advertised.listeners": args.advertised_listeners,
        "zookeeper.connect": args.zookeeper,
        "log.dirs": args.log_dirs,
        "metrics.port": args.metrics_port,
    })


async def serve(config: BrokerConfig) -> None:
    from brokerd.server.broker import Broker

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    broker = Broker(config)
    try:
        await broker.start()
        await stop.wait()
        log.info("signal received; shutting down")
    finally:
        await broker.stop()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        print(f"brokerd: configuration error: {exc}", file=sys.stderr)
        return 2
    import uvloop

    from brokerd.malloc_tuning import tune_malloc
    from brokerd.server.gc_pauses import keep_pauses_short

    tune_malloc()
    keep_pauses_short()
    # A thread waiting for the GIL gets it after at most this long: 1 ms, not Python's
    # 5 ms, because kazoo's connection thread and the ZooKeeper worker give the GIL up at
    # every socket call, once or more per message, and behind a busy event loop each of
    # those cost up to 5 ms (a survivor re-reading 30,000 partition states in a failover;
    # bench.zk_reads, 10,000 reads beside a GIL-holding thread: 4.0 s -> 1.8 s median).
    sys.setswitchinterval(0.001)
    try:
        uvloop.run(serve(config))
    except Exception:
        log.exception("broker %d failed", config.broker_id)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
