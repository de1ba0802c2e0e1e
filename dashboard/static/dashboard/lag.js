// Live consumer lag: the pages render the latest snapshot, then this script applies every
// snapshot the server pushes over the WebSocket (no reloads). Messages are JSON:
//   {"kind": "summary", "groups": [{group, state, members, status, total_lag, …}]}  (list page)
//   {"kind": "detail", group, state, status, total_lag, max_lag, time_lag, partitions, members,
//    updated_at}                                                                  (group page)
(function () {
  "use strict";
  const MAX_POINTS = 360; // chart window: 30 min of 5 s snapshots

  // The indicator shows the socket's true state: "live" while a socket is open (and every
  // pushed snapshot proves it is), "reconnecting…" only while none is. Only the current socket
  // may change it: a replaced socket's late close event must not relabel a working connection.
  // A page restored from the back/forward cache had its socket closed: it opens a new one.
  function connect(path, onMessage) {
    const live = document.getElementById("live");
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    let current = null;
    let retry = null;
    function show(state, title) {
      live.textContent = state;
      live.dataset.state = state;
      live.title = title || "";
    }
    function open() {
      retry = null;
      const ws = new WebSocket(`${scheme}://${location.host}${path}`);
      current = ws;
      ws.onopen = () => { if (ws === current) show("live"); };
      ws.onmessage = (event) => {
        if (ws !== current) return;
        show("live", "last update " + new Date().toLocaleTimeString());
        onMessage(JSON.parse(event.data));
      };
      ws.onclose = (event) => {
        if (ws !== current) return;
        show("reconnecting…", `closed with code ${event.code}`);
        if (retry === null) retry = setTimeout(open, 2000);
      };
    }
    window.addEventListener("pageshow", (event) => {
      if (event.persisted && (current === null || current.readyState > WebSocket.OPEN)) open();
    });
    window.addEventListener("pagehide", () => { if (current) { const ws = current; current = null; ws.close(); } });
    open();
  }

  function setStatus(element, status) {
    element.textContent = status;
    element.className = "status-" + status;
  }

  function cell(row, text) {
    const td = row.insertCell();
    td.textContent = text;
    return td;
  }

  function timeLabel(epochSeconds) {
    return new Date(epochSeconds * 1000).toLocaleTimeString();
  }

  function groupPage(root) {
    const history = JSON.parse(document.getElementById("lag-history").textContent);
    const chart = new Chart(document.getElementById("lag-chart"), {
      type: "line",
      data: {
        labels: history.map((point) => timeLabel(point[0])),
        datasets: [{ label: "total lag (records)", data: history.map((point) => point[1]),
                     borderColor: "#2451a6", pointRadius: 0, tension: 0.2 }],
      },
      options: { animation: false, scales: { y: { beginAtZero: true } } },
    });
    window.lagChart = chart; // the browser test reads the chart's data from here
    connect(root.dataset.wsPath, (message) => {
      if (message.kind !== "detail") return;
      setStatus(document.getElementById("status"), message.status);
      document.getElementById("state").textContent = message.state;
      document.getElementById("total-lag").textContent = message.total_lag;
      document.getElementById("max-lag").textContent = message.max_lag;
      document.getElementById("time-lag").textContent = message.time_lag;
      const partitions = document.querySelector("#partitions tbody");
      partitions.replaceChildren();
      for (const p of message.partitions) {
        const row = partitions.insertRow();
        if (p.uncommitted) row.className = "uncommitted";
        [p.topic, p.partition].forEach((value) => cell(row, value));
        const committed = cell(row, p.uncommitted ? "none (from log start)" : p.committed);
        if (p.uncommitted) committed.title = "no commit: lag counted from the log start";
        [p.log_start, p.high_watermark, p.lag].forEach((value) => cell(row, value));
        setStatus(cell(row, ""), p.status);
      }
      const members = document.querySelector("#members tbody");
      members.replaceChildren();
      for (const m of message.members) {
        const row = members.insertRow();
        [m.member_id, m.client_id, m.host, m.assignment.map((a) => `${a[0]}-${a[1]}`).join(" ")]
          .forEach((value) => cell(row, value));
      }
      if (message.members.length === 0) {
        cell(members.insertRow(), "No members: the group is not consuming.").colSpan = 4;
      }
      if (message.partitions.length === 0) return; // no commit yet: no lag to plot
      chart.data.labels.push(timeLabel(message.updated_at));
      chart.data.datasets[0].data.push(message.total_lag);
      if (chart.data.labels.length > MAX_POINTS) {
        chart.data.labels.shift();
        chart.data.datasets[0].data.shift();
      }
      chart.update();
    });
  }

  // The list shows one page of the groups matching the search (data-query, data-first,
  // data-page-size, as the server rendered it): each snapshot is filtered and sliced the same
  // way (names compared as the database orders them), so live updates keep the page.
  function listPage(table) {
    const body = table.tBodies[0];
    const query = (table.dataset.query || "").toLowerCase();
    const first = Number(table.dataset.first || 0);
    const size = Number(table.dataset.pageSize || 25);
    connect(table.dataset.wsPath, (message) => {
      if (message.kind !== "summary") return;
      const shown = message.groups
        .filter((g) => g.group.toLowerCase().includes(query))
        .sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0))
        .slice(first, first + size);
      body.replaceChildren();
      for (const g of shown) {
        const row = body.insertRow();
        row.dataset.group = g.group;
        const link = document.createElement("a");
        link.href = table.dataset.groupUrl + encodeURIComponent(g.group) + "/";
        link.textContent = g.group;
        row.insertCell().appendChild(link);
        [g.state, g.members].forEach((value) => cell(row, value));
        setStatus(cell(row, ""), g.status);
        [g.total_lag, g.max_lag, g.time_lag].forEach((value) => cell(row, value));
      }
    });
  }

  const group = document.getElementById("group");
  const groups = document.getElementById("groups");
  if (group) groupPage(group);
  if (groups) listPage(groups);
})();
