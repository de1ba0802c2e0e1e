#!/usr/bin/env bash
# Installs the Debian packages the service and its tests need when they are missing
# (docker-compose only validates docker-compose.yml in the tests; no engine is needed;
# chromium and chromium-driver run the console's browser tests headless).
# As root it runs apt-get itself; otherwise it prints the one command to run and fails.
set -euo pipefail
packages=(zookeeper redis-server kcat openjdk-17-jre-headless docker-compose chromium chromium-driver)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "Missing Debian packages. Run this once, then try again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
