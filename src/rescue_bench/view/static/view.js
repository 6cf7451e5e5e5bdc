// rescue-bench view: copy buttons and sortable tables (the leaderboard). No inline script anywhere: the CSP
// forbids it. The static bundle's instance pages are drawn by bundle.js.
"use strict";

function copyButtons() {
  for (const button of document.querySelectorAll("button.copy")) {
    button.addEventListener("click", (event) => {
      event.preventDefault();
      const source = document.getElementById(button.dataset.copy);
      if (source && navigator.clipboard) {
        navigator.clipboard.writeText(source.textContent).then(() => { button.textContent = "copied"; });
      }
    });
  }
}

// A table.sortable sorts on a click of a column's button, by each cell's data-value (numbers numerically,
// empty values last whichever the direction); a second click reverses.
function sortTable(table, column, kind, descending) {
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  const key = (row) => {
    const raw = row.cells[column] ? row.cells[column].dataset.value || "" : "";
    return kind === "number" ? (raw === "" ? null : parseFloat(raw)) : (raw === "" ? null : raw.toLowerCase());
  };
  rows.sort((a, b) => {
    const x = key(a);
    const y = key(b);
    if (x === null || y === null) return (x === null) - (y === null);
    const order = kind === "number" ? x - y : x.localeCompare(y);
    return descending ? -order : order;
  });
  for (const row of rows) body.appendChild(row);
}

function sortableTables() {
  for (const table of document.querySelectorAll("table.sortable")) {
    const headers = Array.from(table.tHead.rows[0].cells);
    headers.forEach((th, column) => {
      const button = th.querySelector("button.sort");
      if (!button) return;
      button.addEventListener("click", () => {
        const descending = th.getAttribute("aria-sort") === "ascending"
          || (!th.hasAttribute("aria-sort") && button.dataset.kind === "number");
        for (const other of headers) other.removeAttribute("aria-sort");
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        sortTable(table, column, button.dataset.kind, descending);
      });
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  copyButtons();
  sortableTables();
});
