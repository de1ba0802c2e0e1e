#!/usr/bin/env bash
# `make run`: the whole service in the foreground under scripts/supervise.py (Ctrl-C stops every
# child, last started first, each with STOP_GRACE_S seconds (45) for a clean shutdown).
# Writes var/Procfile from the current environment: ZooKeeper, Redis (unless one already
# answers on REDIS_URL), web (migrate + bootstrap + daphne), Celery worker and beat, brokers.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
export DJANGO_SETTINGS_MODULE=service.settings.dev
export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
export ZOOKEEPER_PORT=${ZOOKEEPER_PORT:-2181}
export ZOOKEEPER_CONNECT=${ZOOKEEPER_CONNECT:-127.0.0.1:$ZOOKEEPER_PORT/kafkasaas}
brokers=${BROKERS:-3}
# Operators (and the control plane's admin client) use PLAINTEXT 909x; tenants SASL_SSL 929x
# (API keys) or SSL 939x (client certificates).
export OPERATOR_BOOTSTRAP_SERVERS=${OPERATOR_BOOTSTRAP_SERVERS:-$(seq -s, -f "127.0.0.1:%g" 9092 $((9091 + brokers)))}
export BOOTSTRAP_SERVERS=${BOOTSTRAP_SERVERS:-$(seq -s, -f "127.0.0.1:%g" 9292 $((9291 + brokers)))}
export SSL_CA_LOCATION=${SSL_CA_LOCATION:-var/certs/ca.pem}
# Signs tenants' mTLS client certificates (console / REST); tenants use them on SSL 939x.
export SSL_CA_KEY_LOCATION=${SSL_CA_KEY_LOCATION:-var/certs/ca.key}
export MTLS_BOOTSTRAP_SERVERS=${MTLS_BOOTSTRAP_SERVERS:-$(seq -s, -f "127.0.0.1:%g" 9392 $((9391 + brokers)))}

scripts/certs.sh var/certs  # local CA + broker certificate for SASL_SSL (first start only)
# Replication: RF 3 with min.insync.replicas 2 (acks=all survives one broker down); fewer local
# brokers get RF = their number and min.insync.replicas 1, or no topic could be created.
replication=$(( brokers < 3 ? brokers : 3 ))
cat > var/broker.properties <<EOF
ssl.keystore.location=var/certs/broker.pem
ssl.truststore.location=var/certs/ca.pem
ssl.client.auth=required
ssl.principal.mapping.rules=RULE:^CN=([a-z0-9.-]+)(,.*)?\$/\$1/,DEFAULT
default.replication.factor=$replication
offsets.topic.replication.factor=$replication
min.insync.replicas=$(( replication >= 3 ? 2 : 1 ))
controlled.shutdown.enable=true
EOF

procfile=var/Procfile
{
  echo "zookeeper: scripts/zookeeper.sh $ZOOKEEPER_PORT var/zookeeper"
  if ! .venv/bin/python -c "import redis,sys; redis.Redis.from_url('$REDIS_URL', socket_timeout=1).ping()" 2>/dev/null; then
    port=$(.venv/bin/python -c "from urllib.parse import urlparse; print(urlparse('$REDIS_URL').port or 6379)")
    mkdir -p var/redis
    echo "redis: redis-server --bind 127.0.0.1 --port $port --dir var/redis --save 60 1 --appendonly no"
  fi
  echo "web: scripts/web.sh"
  echo "worker: .venv/bin/celery -A service worker --loglevel INFO --concurrency 2"
  echo "beat: .venv/bin/celery -A service beat --loglevel INFO --schedule var/celerybeat-schedule"
  for id in $(seq 1 "$brokers"); do
    listeners="PLAINTEXT://127.0.0.1:$((9091 + id)),SASL_PLAINTEXT://127.0.0.1:$((9191 + id)),SASL_SSL://127.0.0.1:$((9291 + id)),SSL://127.0.0.1:$((9391 + id))"
    echo "broker$id: scripts/await-zookeeper.sh $ZOOKEEPER_PORT .venv/bin/brokerd serve --broker-id $id --listeners $listeners" \
         "--config var/broker.properties" \
         "--zookeeper $ZOOKEEPER_CONNECT --log-dirs var/brokers/$id --metrics-port $((9100 + id))"
  done
} > "$procfile"
echo "starting: $(cut -d: -f1 "$procfile" | tr '\n' ' ')"
exec .venv/bin/python scripts/supervise.py "$procfile"
