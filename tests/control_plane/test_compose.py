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
