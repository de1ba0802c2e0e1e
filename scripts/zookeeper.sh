#!/usr/bin/env bash
# Runs a standalone Apache ZooKeeper in the foreground from the Debian package's jars.
# Usage: scripts/zookeeper.sh PORT DATA_DIR
# Used by `make run` (through the Procfile) and by the test suite, so both start ZooKeeper the same way.
set -euo pipefail
port=${1:?port}
data_dir=${2:?data dir}
# ZooKeeper expires sessions on tick boundaries, so a dead broker is noticed up to one tick
# after its session timeout: 1 s ticks (default 3 s) keep failover close to the timeout.
# Session timeouts must lie within 2 and 20 ticks: 2-20 s (brokers default to 18 s).
tick_ms=1000
mkdir -p "$data_dir"
conf_dir=$(cd "$(dirname "$0")" && pwd)/zookeeper-conf
exec java -Xmx256m -XX:+UseSerialGC \
  -Dzookeeper.admin.enableServer=false \
  -Dzookeeper.4lw.commands.whitelist=srvr,ruok,mntr \
  -cp "$conf_dir:/usr/share/java/zookeeper.jar" \
  org.apache.zookeeper.server.ZooKeeperServerMain "$port" "$data_dir" "$tick_ms"
