"""docker-compose.yml is accepted by docker-compose and runs every process from one image."""

import subprocess

import yaml

from tests.support.services import REPO_ROOT


def test_compose_file_is_valid() -> None:
    result = subprocess.run(["docker-compose", "config", "-q"], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_compose_runs_the_whole_service_from_one_build() -> None:
    services = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())["services"]
    assert {"zookeeper1", "zookeeper2", "zookeeper3", "redis", "postgres", "web", "worker", "beat",
            "broker1", "broker2", "broker3"} <= services.keys()
    app_services = ["web", "worker", "beat", "broker1", "broker2", "broker3"]
    assert {services[name]["image"] for name in app_services} == {"kafkasaas:latest"}
    assert all("brokerd serve" in services[f"broker{i}"]["command"] for i in (1, 2, 3))


def test_compose_brokers_replicate_by_default() -> None:
    services = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())["services"]
    for name in ("broker1", "broker2", "broker3"):
        broker = services[name]
        script = " ".join(broker["entrypoint"])
        assert "--config /tmp/broker.properties" in broker["command"]
        for setting in ("default.replication.factor=3", "offsets.topic.replication.factor=3",
                        "min.insync.replicas=2", "> /tmp/broker.properties"):
            assert setting in script, (name, setting)


def test_compose_brokers_have_a_memory_limit_for_their_page_cache() -> None:
    """docs/brokerd.md, "Memory limits and the page cache on VMs": a limit above the
    broker's resident size, so that its page cache recycles instead of growing."""
    services = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())["services"]
    assert {services[f"broker{i}"].get("mem_limit") for i in (1, 2, 3)} == {"2g"}


def test_compose_runs_a_zookeeper_ensemble_that_every_client_lists() -> None:
    """Three members with distinct ids, the same server list, and every ZooKeeper client
    (brokers, control plane) given all three, so losing one member loses nothing."""
    services = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())["services"]
    members = [services[f"zookeeper{i}"]["environment"] for i in (1, 2, 3)]
    assert [member["ZOO_MY_ID"] for member in members] == [1, 2, 3]
    assert len({member["ZOO_SERVERS"] for member in members}) == 1
    assert all(f"server.{i}=zookeeper{i}:2888:3888" in members[0]["ZOO_SERVERS"]
               for i in (1, 2, 3))
    every_member = "zookeeper1:2181,zookeeper2:2181,zookeeper3:2181/kafkasaas"
    assert services["web"]["environment"]["ZOOKEEPER_CONNECT"] == every_member
    assert all(f"--zookeeper {every_member}" in services[f"broker{i}"]["command"]
               for i in (1, 2, 3))


def _option(command: str, flag: str) -> list[str]:
    """The comma-separated values of ``--flag`` in a broker's command line."""
    words = command.split()
    return words[words.index(flag) + 1].split(",")


def test_the_listeners_the_console_names_exist_and_reach_the_host() -> None:
    """The console's client snippets name BOOTSTRAP_SERVERS with CLIENT_SECURITY_PROTOCOL
    (SASL_SSL) and MTLS_BOOTSTRAP_SERVERS with SSL: each address is a broker's advertised
    listener of that protocol, listened on and published on the same port; the listeners
    the control plane uses (operator PLAINTEXT, the message browser's SASL_PLAINTEXT) are
    advertised under the brokers' compose names and stay on the compose network."""
    services = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())["services"]
    web = services["web"]["environment"]
    brokers = [services[f"broker{i}"] for i in (1, 2, 3)]
    advertised = {url for b in brokers for url in _option(b["command"], "--advertised-listeners")}
    for protocol, servers in ((web["CLIENT_SECURITY_PROTOCOL"], web["BOOTSTRAP_SERVERS"]),
                              ("SSL", web["MTLS_BOOTSTRAP_SERVERS"]),
                              ("PLAINTEXT", web["OPERATOR_BOOTSTRAP_SERVERS"]),
                              (web["BROWSER_SECURITY_PROTOCOL"], web["BROWSER_BOOTSTRAP_SERVERS"])):
        for address in servers.split(","):
            assert f"{protocol}://{address}" in advertised, (protocol, address)
    assert web["CLIENT_SECURITY_PROTOCOL"] == "SASL_SSL"
    assert web["BROWSER_SECURITY_PROTOCOL"].startswith("SASL_")  # reads as the tenant
    assert not any(address.startswith("localhost:")
                   for address in web["BROWSER_BOOTSTRAP_SERVERS"].split(","))
    for broker in brokers:
        listeners = _option(broker["command"], "--listeners")
        published = {mapping.split(":")[0] for mapping in broker.get("ports", [])}
        for url in _option(broker["command"], "--advertised-listeners"):
            protocol, port = url.split("://")[0], url.rsplit(":", 1)[1]
            assert f"{protocol}://0.0.0.0:{port}" in listeners, url
            assert (port in published) == protocol.endswith("SSL"), url


def test_compose_brokers_start_from_their_command_and_properties(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each broker's entrypoint writes properties (TLS from the certs volume) that, with its
    command line, make a valid broker config; the certs service runs scripts/certs.sh."""
    from brokerd.__main__ import build_parser, config_from_args
    from tests.integration.secure.secure_cluster import make_certs

    services = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())["services"]
    assert services["certs"]["command"] == "scripts/certs.sh /certs"
    certs = make_certs(tmp_path / "certs")
    for name in ("broker1", "broker2", "broker3"):
        broker = services[name]
        properties = tmp_path / f"{name}.properties"
        script = (broker["entrypoint"][2].replace("$$", "$").replace("/certs/", f"{certs}/")
                  .replace("/tmp/broker.properties", str(properties)))
        subprocess.run(["sh", "-c", script, "broker", "true"], check=True, timeout=30)
        command = broker["command"].replace("/tmp/broker.properties", str(properties))
        config = config_from_args(build_parser().parse_args(command.split()[1:]))
        assert {endpoint.name for endpoint in config.listeners} == {
            "PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL"}
        assert config.static_props["ssl.client.auth"] == "required"
        assert config.inter_broker_listener_name == "PLAINTEXT"
