"""The density benchmark's output as text: figures, never verdicts that fail anything.

``results`` is what :func:`bench.density.run` returns (the JSON in
``bench/results/density.json``); any phase may hold ``{"error": …}`` instead of figures.
Peers' figures are printed beside ours as ``ours/peer`` ratios: above 1 means ours is
slower (latency) or faster (throughput).
"""

from __future__ import annotations

from typing import Any

from bench.report import ratio

ERROR_CHARS = 300
PEERS = (("nats_jetstream", "JetStream"), ("redis_streams", "Redis Streams"))


def render(results: dict[str, Any]) -> str:
    lines = [f"brokerd density benchmark  ({results['started_at']}, {results['cpus']} CPUs, "
             f"load average {results['load_average']:.1f} before, {results.get('seconds')} s)"]
    lines += [f"limits: {change}" for change in results["limits"]["changes"]]
    lines += [f"limits now: ulimit -n {results['limits']['open_files']:,}, "
              f"vm.max_map_count {results['limits']['max_map_count']:,}", ""]
    default_path = results.get("default_path", {})
    peers = results.get("peers", {})
    lines += _default_path_section(default_path, peers)
    lines += _partitions_section(results.get("partitions", {}))
    lines += _connections_section(results.get("connections", {}))
    lines += _peers_section(peers, default_path)
    return "\n".join(lines)


def _short(error: str) -> str:
    """An error's first line, cut: a broker's start-up failure carries its whole log (the
    JSON keeps all of it)."""
    first = error.splitlines()[0] if error else ""
    return first if len(first) <= ERROR_CHARS else first[:ERROR_CHARS] + " …"


def _missing(name: str, section: dict[str, Any]) -> list[str] | None:
    """The lines for a phase that failed ("FAILED: …") or did not run (none); None when
    it has figures to print."""
    if not section:
        return []
    return [f"{name}: FAILED: {_short(section['error'])}", ""] if "error" in section else None


def _latency(consumer: dict[str, Any]) -> str:
    if not consumer.get("records"):
        return "no record arrived"
    return (f"p50 {consumer['p50_ms']:.2f} ms, p99 {consumer['p99_ms']:.2f} ms, "
            f"max {consumer['max_ms']:.2f} ms over {consumer['records']:,} records")


def _requests(per_second: int | None) -> str:
    return "requests/s -" if per_second is None else f"{per_second:,} requests/s"


def _default_path_section(section: dict[str, Any], peers: dict[str, Any]) -> list[str]:
    if (missing := _missing("default-client path", section)) is not None:
        return missing
    lines = ["default-client path (3 brokers, RF 3, min.insync.replicas=2, acks=all, "
             "idempotence, 1 KiB, end to end):"]
    for key, figures in section.items():
        if key.startswith("latency"):
            if "error" in figures:
                lines.append(f"  {key}: FAILED: {_short(figures['error'])}")
                continue
            producer = figures["producer"]
            lines.append(f"  {key} at {producer['records_per_second']:,}/s: "
                         f"{_latency(figures['consumer'])}; leader CPU "
                         f"{producer['broker_cpu_share']:.2f}, other CPU "
                         f"{producer['other_cpu_share']:.2f}")
        elif key.startswith("search"):
            if "error" in figures:
                lines.append(f"  {key}: FAILED: {_short(figures['error'])}")
                continue
            steps = "; ".join(
                f"{s['rate']:,}/s {s['skipped']}" if "skipped" in s else
                f"{s['rate']:,}/s ({s['producers']}p, the first {s.get('producer_cpu', '-')} cores, "
                f"{_requests(s.get('produce_requests_per_second'))}, brokers "
                f"{s.get('brokers_cpu_us_per_request', '-')} µs/request) "
                f"p99 {s['consumer'].get('p99_ms', '-')} ms "
                f"{'ok' if s['sustained'] else 'MISSED'}" for s in figures["steps"])
            best = (f"{figures['best_rate']:,} records/s" if figures["best_rate"]
                    else "none, the first step missed")
            lines.append(f"  {key}: highest rate with p99 <= {figures['p99_bound_ms']:g} ms: "
                         f"{best}  [{steps}]")
    lines += _ceiling_lines(section)
    ratio_figures = section.get("ratio", {})
    if "error" in ratio_figures:
        lines.append(f"  throughput ratio: FAILED: {_short(ratio_figures['error'])}")
    elif ratio_figures:
        replicated, baseline = ratio_figures["acks=all RF=3"], ratio_figures["acks=1 RF=1"]
        lines.append(f"  throughput acks=all RF 3 {replicated.get('mb_per_second')} MB/s / "
                     f"acks=1 RF 1 {baseline.get('mb_per_second')} MB/s = "
                     f"{ratio_figures.get('ratio')} ({ratio_figures.get('partitions')} "
                     f"partitions; brokers' memory: {ratio_figures.get('brokers_memory')})")
    return lines + [""]


def _ceiling_lines(section: dict[str, Any]) -> list[str]:
    """The several-producer searches against the null broker (``bench.request_ceiling``),
    each beside the cluster's search at the same priority, as ours / ceiling."""
    ceiling = section.get("ceiling", {})
    if "error" in ceiling:
        return [f"  ceiling (null broker): FAILED: {_short(ceiling['error'])}"]
    lines = []
    for key, figures in ceiling.items():
        nice = figures["nice"]
        ours = section.get("search linger.ms=0, several producers"
                           + (f" at nice {nice}" if nice else ""), {})
        sustained = [s for s in figures["steps"] if s.get("sustained")]
        top = sustained[-1] if sustained else {}
        requests = _requests(top["produce_requests_per_second"]) if top else "-"
        ratio = (f"{ours['best_rate'] / figures['best_rate']:.2f}"
                 if figures["best_rate"] and "best_rate" in ours else "-")
        lines.append(f"  ceiling, {key} against a null broker (produce round trip p99 <= "
                     f"{figures['p99_bound_ms']:g} ms): {figures['best_rate']:,} records/s "
                     f"({requests}; producers {top.get('producers_cores', '-')} cores, null "
                     f"broker {top.get('null_broker_cpu_us_per_request', '-')} µs/request)"
                     f"; ours / ceiling = {ratio}")
    return lines


def _partitions_section(section: dict[str, Any]) -> list[str]:
    if (missing := _missing("idle partitions", section)) is not None:
        return missing
    widths = [8, 9, 9, 9, 8, 20, 20, 14, 8]
    lines = ["idle partitions (RF 3, three brokers, no traffic; per broker: cores, "
             "cores per 1,000 partitions, RSS, descriptors, mappings):",
             "".join(h.rjust(w) for h, w in zip(
                 ["count", "reached", "created", "in sync", "grow s", "cores", "/1000",
                  "RSS MB", "fds"], widths, strict=True)) + "    maps"]
    for count in section["counts"]:
        brokers = count["brokers"].values()
        cells = [f"{count['target']:,}", "yes" if count["reached"] else "NO",
                 f"{count['created']:,}", f"{count['in_sync']:,}", f"{count['grow_seconds']:g}"]
        if brokers:
            cells += ["/".join(f"{b['cores']:.3f}" for b in brokers),
                      "/".join(f"{b['cores_per_1000_partitions']:.3f}" for b in brokers),
                      "/".join(f"{b['rss_mb']:.0f}" for b in brokers),
                      str(max(b["open_files"] for b in brokers))]
            tail = f"    {max(b['memory_maps'] for b in brokers)}  (other CPU " \
                   f"{count['other_cores']:.2f})"
        else:
            cells += ["-"] * 4
            tail = f"    {count.get('error') or ''}"
        lines.append("".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) + tail)
    failover = section.get("failover", {})
    if "led_by_victim" in failover:  # measured, perhaps only up to a failed step
        lines.append(
            f"failover of the broker leading {failover['led_by_victim']:,} of "
            f"{failover['partitions']:,} partitions: kill -9 -> new leaders everywhere "
            f"{failover['kill_s']} s, sampled partitions writable (acks=all) "
            f"{failover['writable_s']} s (median {failover['writable_p50_s']} s); "
            f"restart -> preferred leaders {failover['preferred_s']} s;"
            f" controlled shutdown {failover['controlled_s']} s (exited after "
            f"{failover['shutdown_s']} s), produce errors {len(failover['produce_errors'])}"
            + (" (0 s: a step not reached)" if "error" in failover else ""))
    if "error" in failover:
        lines.append(f"failover: FAILED: {_short(failover['error'])}")
    return lines + [""]


def _connections_section(section: dict[str, Any]) -> list[str]:
    if (missing := _missing("idle connections", section)) is not None:
        return missing
    return [
        f"idle connections on one broker: {section['connections']:,} of "
        f"{section['connections_wanted']:,} ({section['sasl']:,} SASL_PLAINTEXT logins, the "
        f"rest PLAINTEXT after one ApiVersions) opened in {section['open_seconds']} s; "
        f"idle CPU {section['idle_cpu_cores_without']:.3f} cores without, "
        f"{section['idle_cpu_cores_with']:.3f} with; RSS {section['rss_before_mb']} -> "
        f"{section['rss_after_mb']} MB = {section['bytes_per_connection']:,} bytes per "
        f"connection", ""]


def _ours(default_path: dict[str, Any]) -> dict[str, float | None]:
    """Our figures the peers are compared with: linger.ms=0 latency, and throughput."""
    latency = default_path.get("latency linger.ms=0", {}).get("consumer", {})
    ratio_figures = default_path.get("ratio", {})
    return {"p50_ms": latency.get("p50_ms"), "p99_ms": latency.get("p99_ms"),
            "all_mb": ratio_figures.get("acks=all RF=3", {}).get("mb_per_second"),
            "one_mb": ratio_figures.get("acks=1 RF=1", {}).get("mb_per_second")}


def _peers_section(section: dict[str, Any], default_path: dict[str, Any]) -> list[str]:
    if (missing := _missing("peers", section)) is not None:
        return missing
    ours = _ours(default_path)
    lines = ["peers, same work (1 KiB at 2,000/s end to end; max throughput), ratios "
             "ours/peer (ours: acks=all RF 3 linger.ms=0 latency; acks=all RF 3 and "
             "acks=1 RF 1 throughput):"]
    for key, name in PEERS:
        peer = section.get(key, {})
        if "error" in peer:
            lines.append(f"  {name}: FAILED: {_short(peer['error'])}")
            continue
        latency, rate = peer["latency"], peer["throughput"]
        mode = (f"file storage, replicas {peer['replicas']}" if "storage" in peer else
                f"appendonly {peer['appendonly']}, appendfsync {peer['appendfsync']}, "
                f"WAIT {peer['wait']}")
        lines.append(
            f"  {name} ({peer['server']}{', private' if peer['private_server'] else ''}; "
            f"{mode}): {_latency(latency)} -> ratio p50 "
            f"{ratio(ours['p50_ms'], latency.get('p50_ms'))}, p99 "
            f"{ratio(ours['p99_ms'], latency.get('p99_ms'))}; "
            f"{rate['mb_per_second']} MB/s ({rate['messages_per_second']:,} msg/s) -> ratio "
            f"{ratio(ours['all_mb'], rate['mb_per_second'])} (acks=all), "
            f"{ratio(ours['one_mb'], rate['mb_per_second'])} (acks=1)")
    return lines + [""]
