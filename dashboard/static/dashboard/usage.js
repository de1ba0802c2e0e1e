// Daily usage chart of the invoices page: GiB in/out per day from the embedded JSON.
document.addEventListener("DOMContentLoaded", () => {
  const source = document.getElementById("usage-data");
  if (!source) return;
  const data = JSON.parse(source.textContent);
  new Chart(document.getElementById("usage-chart"), {
    type: "bar",
    data: {
      labels: data.days,
      datasets: [
        { label: "GiB in", data: data.gib_in, backgroundColor: "#2451a6" },
        { label: "GiB out", data: data.gib_out, backgroundColor: "#8fb3e8" },
      ],
    },
    options: { animation: false, scales: { y: { beginAtZero: true } } },
  });
});
