// dlbench results site: sortable and filterable tables, and the record panel that a click on a cell's row,
// table cell or chart point opens. No network, no library beyond the page's plotly.min.js.
"use strict";

(function () {
  const records = JSON.parse(document.getElementById("records").textContent || "{}");
  const panel = document.getElementById("record");

  // a cell's text as a number when it starts with one ("12.64 · 1.39 s/epoch" -> 12.64, "+0.06 (epoch)" -> 0.06,
  // "25.0 %" -> 25), else null ("2026-11-23 07:38" is text: ISO dates sort as text)
  function numberOf(text) {
    const m = /^\s*\[?\s*([+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?)(?=$|[\s,\]x%·/])/i.exec(text);
    return m ? parseFloat(m[1]) : null;
  }

  function sortBy(table, column, th) {
    const body = table.tBodies[0];
    const ascending = th.getAttribute("aria-sort") !== "ascending";
    for (const other of table.tHead.rows[0].cells) other.removeAttribute("aria-sort");
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const rows = Array.from(body.rows);
    const key = (row) => (row.cells[column] ? row.cells[column].textContent.trim() : "");
    rows.sort((a, b) => {
      const x = key(a), y = key(b), nx = numberOf(x), ny = numberOf(y);
      let order;
      if (nx !== null && ny !== null) order = nx - ny;
      else if (nx !== null || ny !== null) order = nx === null ? 1 : -1; // numbers before text
      else order = x.localeCompare(y);
      return ascending ? order : -order;
    });
    for (const row of rows) body.appendChild(row);
  }

  function setUpTables() {
    for (const table of document.querySelectorAll("table.sortable")) {
      Array.from(table.tHead.rows[0].cells).forEach((th, i) => {
        th.tabIndex = 0;
        th.title = "sort by this column";
        th.addEventListener("click", () => sortBy(table, i, th));
      });
    }
    for (const box of document.querySelectorAll("input.filter")) {
      const table = document.getElementById(box.dataset.table);
      box.addEventListener("input", () => {
        const words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
        for (const row of table.tBodies[0].rows) {
          const text = row.textContent.toLowerCase();
          row.hidden = !words.every((w) => text.includes(w));
        }
      });
    }
  }

  function valueText(value) {
    return typeof value === "object" && value !== null ? JSON.stringify(value) : String(value);
  }

  function showRecord(key) {
    const record = records[String(key)];
    if (!record) return;
    const cell = record.cell || {};
    panel.querySelector(".record-title").textContent = cell.cell_id || `record ${key}`;
    const body = panel.querySelector(".record-body");
    body.replaceChildren();
    for (const [block, fields] of Object.entries(record)) {
      const details = document.createElement("details");
      details.open = ["cell", "metrics", "repeats", "settings"].includes(block);
      const summary = document.createElement("summary");
      summary.textContent = `${block} (${Object.keys(fields).length})`;
      const table = document.createElement("table");
      table.className = "record-fields";
      for (const [name, value] of Object.entries(fields)) {
        const row = table.insertRow();
        row.insertCell().textContent = name;
        row.insertCell().textContent = valueText(value);
      }
      details.append(summary, table);
      body.append(details);
    }
    panel.dataset.record = String(key);
    panel.hidden = false;
    panel.scrollTop = 0;
  }

  function setUpRecords() {
    document.addEventListener("click", (event) => {
      const link = event.target.closest("tr[data-href]");
      if (link && !event.target.closest("a")) {
        window.location.href = link.dataset.href;
        return;
      }
      const ref = event.target.closest("[data-record]");
      if (ref && ref !== panel) showRecord(ref.dataset.record);
    });
    panel.querySelector(".close").addEventListener("click", () => { panel.hidden = true; });
    document.addEventListener("keydown", (event) => { if (event.key === "Escape") panel.hidden = true; });
    for (const plot of document.querySelectorAll(".js-plotly-plot")) {
      plot.on("plotly_click", (data) => {
        const point = data.points && data.points[0];
        if (point && point.customdata !== undefined) showRecord(point.customdata);
      });
    }
  }

  setUpTables();
  setUpRecords();
})();
