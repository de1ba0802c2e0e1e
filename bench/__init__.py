"""The data-plane benchmark behind ``make bench`` (entry point: ``bench/run_all.py``).

Modules: ``measure`` (CPU and latency arithmetic shared by every process), ``cluster``
(private ZooKeeper + broker), ``throughput_client`` and ``latency_client`` (the load
generators, each run as its own process), ``ceiling`` (what this machine's loopback and
disk can do without a broker), ``storage_append`` (the log engine without the network),
``report`` (table and JSON).
"""
