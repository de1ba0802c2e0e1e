#!/usr/bin/env bash
# A local certificate authority and one broker certificate for the SSL / SASL_SSL listeners.
#   scripts/certs.sh [DIR]     (default var/certs; does nothing when DIR/broker.pem exists)
# Writes DIR/ca.pem (give it to clients: ssl.ca.location), DIR/ca.key (keep private), and
# DIR/broker.pem = broker private key + certificate (the broker's ssl.keystore.location).
# The broker certificate names localhost and 127.0.0.1, so clients verify the hostname, and is
# also a client certificate (clientAuth): brokers present it to SSL leaders with ssl.client.auth.
set -euo pipefail
dir=${1:-var/certs}
days=${CERT_DAYS:-825}
if [ -f "$dir/broker.pem" ]; then
  exit 0
fi
mkdir -p "$dir"
umask 077
openssl req -x509 -newkey rsa:2048 -nodes -days "$days" -subj "/CN=kafkasaas local CA" \
  -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
  -keyout "$dir/broker.key" -out "$dir/broker.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' > "$dir/broker.ext"
openssl x509 -req -in "$dir/broker.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
  -CAcreateserial -days "$days" -extfile "$dir/broker.ext" -out "$dir/broker.crt" 2>/dev/null
cat "$dir/broker.key" "$dir/broker.crt" > "$dir/broker.pem"
rm -f "$dir/broker.csr" "$dir/broker.ext" "$dir/broker.key" "$dir/ca.srl"
chmod 644 "$dir/ca.pem"
echo "certificates in $dir (CA: $dir/ca.pem)"
