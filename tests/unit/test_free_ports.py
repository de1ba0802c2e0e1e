"""The test suite's listening ports: below the ephemeral range (no outgoing connection can
take one between its pick and the bind) and apart for each xdist worker."""

from __future__ import annotations

from tests.support.services import LISTEN_PORTS_FROM, ephemeral_port_range, free_port, port_slice


def test_worker_slices_are_disjoint_and_below_the_ephemeral_range() -> None:
    slices = [port_slice(32768, worker, pid=4242)[0] for worker in ("", "gw0", "gw1", "gw20")]
    taken = [set(ports) for ports in slices]
    assert sum(map(len, taken)) == len(set().union(*taken))
    assert all(LISTEN_PORTS_FROM <= ports.start and ports.stop <= 32768 for ports in slices)


def test_the_first_port_is_inside_the_slice_and_chosen_by_pid() -> None:
    ports, first = port_slice(32768, "gw2", pid=1234567)
    assert first in ports and first == ports.start + 567


def test_more_workers_than_slices_wrap_around_inside_the_range() -> None:
    ports, _ = port_slice(12000, "gw7", pid=0)
    assert LISTEN_PORTS_FROM <= ports.start and ports.stop <= 12000


def test_a_process_never_hands_out_the_same_port_twice_in_a_row_of_fifty() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50 and all(port < ephemeral_port_range()[0] for port in ports)
