#!/usr/bin/env bash
# Runs Apache ZooKeeper in the foreground from the Debian package's jars.
# Usage: scripts/zookeeper.sh PORT DATA_DIR        a standalone server
#        scripts/zookeeper.sh --ensemble ZOO_CFG   one member of an ensemble (its zoo.cfg
#                                                  names the members; myid in its dataDir)
# Used by `make run` (through the Procfile) and by the test suite (standalone; the fault
# tests run a three-node ensemble), so every caller starts ZooKeeper the same way.
set -euo pipefail
conf_dir=$(cd "$(dirname "$0")" && pwd)/zookeeper-conf
# Heap: ZooKeeper's own default (zkEnv.sh's 1000 MB).  256 MB left little room at density:
# at 30,000 RF 3 partitions 141-148 MB stayed live after each young collection (of 247 MB),
# the old generation 83 % full (bench.density --phase partitions, 2026-12-06), so a
# cluster a little larger would have run into full collections.
java_command=(java -Xmx1000m -XX:+UseSerialGC
  -Dzookeeper.admin.enableServer=false
  -Dzookeeper.4lw.commands.whitelist=srvr,ruok,mntr
  -cp "$conf_dir:/usr/share/java/zookeeper.jar")
if [ "${1:-}" = "--ensemble" ]; then
  exec "${java_command[@]}" org.apache.zookeeper.server.quorum.QuorumPeerMain "${2:?zoo.cfg}"
fi
port=${1:?port}
data_dir=${2:?data dir}
# ZooKeeper expires sessions on tick boundaries, so a dead broker is noticed up to one tick
# after its session timeout: 1 s ticks (default 3 s) keep failover close to the timeout.
# Session timeouts must lie within 2 and 20 ticks: 2-20 s (brokers default to 18 s).
tick_ms=1000
mkdir -p "$data_dir"
exec "${java_command[@]}" org.apache.zookeeper.server.ZooKeeperServerMain "$port" "$data_dir" "$tick_ms"
