// Topic page: bytes in/out per minute, fetched once from the page's traffic URL (read from the
// metered usage, which can take seconds, so the page itself never waits for it).
document.addEventListener("DOMContentLoaded", () => {
  const canvas = document.getElementById("traffic-chart");
  if (!canvas) return;
  const note = document.getElementById("traffic-note");
  fetch(canvas.dataset.url, { credentials: "same-origin" })
    .then((response) => response.json())
    .then((data) => {
      window.trafficData = data; // the browser test reads the series from here
      const labels = data.minutes.map((ms) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }));
      window.trafficChart = new Chart(canvas, {
        type: "line",
        data: {
          labels,
          datasets: [
            { label: "bytes in (produced)", data: data.bytes_in, borderColor: "#2451a6", pointRadius: 0 },
            { label: "bytes out (consumed)", data: data.bytes_out, borderColor: "#2e8540", pointRadius: 0 },
          ],
        },
        options: { animation: false, scales: { y: { beginAtZero: true } } },
      });
      const total = (values) => values.reduce((a, b) => a + b, 0);
      note.textContent = data.error ||
        `${total(data.bytes_in)} bytes in, ${total(data.bytes_out)} bytes out` +
        (data.truncated ? " (older minutes left out: too much usage to read)" : "") +
        "; the current minute fills in as the brokers report it.";
    })
    .catch((error) => { note.textContent = `traffic unavailable: ${error}`; });
});
