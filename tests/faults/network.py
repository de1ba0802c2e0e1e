"""A private network of Linux network namespaces for fault tests: one namespace per node,
all joined by a bridge that lives in a namespace of its own, so nothing of it touches the
machine's own interfaces.

Why namespaces: a network partition is a property of the network, not of a process;
cutting two namespaces apart drops their packets exactly as a failed switch port would
(TCP connections stall and time out; nothing is closed politely), while every node keeps
its own address and stays reachable from the others.  Cuts are blackhole routes in both
namespaces (no iptables needed): outgoing packets to the peer are dropped, and so are the
replies to the peer's packets.

Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN to create namespaces): :func:`can_create`
tells, and the fixtures skip with that reason where it is missing.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from dataclasses import dataclass, field

SUBNET = "10.77.0"  # private to the bridge's namespace; no interface outside carries it


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


def can_create() -> str | None:
    """None when this process may create namespaces, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"kfprobe{os.getpid()}"
    try:
        ip("netns", "add", probe)
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"cannot create a network namespace: {exc}"
    ip("netns", "del", probe)
    return None


@dataclass
class Network:
    """Namespaces named ``<prefix>-<node>`` on one bridge, with cuts between them."""

    prefix: str = field(default_factory=lambda: f"kf{os.getpid()}")
    addresses: dict[str, str] = field(default_factory=dict)
    _cuts: set[tuple[str, str]] = field(default_factory=set)
    _next_host: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def switch(self) -> str:
        return f"{self.prefix}-sw"

    def start(self) -> Network:
        ip("netns", "add", self.switch)
        ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        ip("-n", self.switch, "link", "set", "br0", "up")
        return self

    def namespace(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def add_node(self, node: str) -> str:
        """A namespace for ``node`` with loopback and one address on the bridge; returns
        the address."""
        number = next(self._next_host)
        namespace, address = self.namespace(node), f"{SUBNET}.{number}"
        outside, inside = f"veth{number}", "eth0"  # names are per namespace
        ip("netns", "add", namespace)
        ip("-n", namespace, "link", "set", "lo", "up")
        ip("link", "add", outside, "netns", self.switch, "type", "veth",
           "peer", "name", inside, "netns", namespace)
        ip("-n", self.switch, "link", "set", outside, "master", "br0", "up")
        ip("-n", namespace, "addr", "add", f"{address}/24", "dev", inside)
        ip("-n", namespace, "link", "set", inside, "up")
        self.addresses[node] = address
        return address

    def command(self, node: str, argv: list[str]) -> list[str]:
        """``argv`` run inside ``node``'s namespace."""
        return ["ip", "netns", "exec", self.namespace(node), *argv]

    def cut(self, a: str, b: str) -> None:
        """Drop every packet between ``a`` and ``b`` (both directions)."""
        for here, there in ((a, b), (b, a)):
            if (here, there) not in self._cuts:
                ip("-n", self.namespace(here), "route", "add", "blackhole",
                   f"{self.addresses[there]}/32")
                self._cuts.add((here, there))

    def isolate(self, node: str, from_nodes: list[str] | None = None) -> None:
        """Cut ``node`` from ``from_nodes`` (default: every other node)."""
        for other in from_nodes if from_nodes is not None else list(self.addresses):
            if other != node:
                self.cut(node, other)

    def heal(self) -> None:
        for here, there in sorted(self._cuts):
            ip("-n", self.namespace(here), "route", "del", "blackhole",
               f"{self.addresses[there]}/32")
        self._cuts.clear()

    def close(self) -> None:
        """Delete every namespace (their interfaces go with them)."""
        for node in list(self.addresses):
            subprocess.run(["ip", "netns", "del", self.namespace(node)],
                           capture_output=True, timeout=10)
        subprocess.run(["ip", "netns", "del", self.switch], capture_output=True, timeout=10)
        self.addresses.clear()
        self._cuts.clear()
