// rescue-bench view: copy buttons, and in a static bundle the instance list's filters (read from the URL
// fragment, applied to the rows' data attributes). No inline script anywhere: the CSP forbids it.
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

const EXACT = ["scenario", "sample", "gold", "pred", "correct", "prev_gold", "gold_kind", "pred_kind", "repeat"];

function rowMatches(row, wanted) {
  for (const key of EXACT) {
    if (wanted.get(key) && row.dataset[key] !== wanted.get(key)) return false;
  }
  const failure = wanted.get("failure");
  if (failure && !(failure === "any" ? row.dataset.failure : row.dataset.failure === failure)) return false;
  const disagree = parseFloat(wanted.get("disagree") || "");
  if (!Number.isNaN(disagree) && !(parseFloat(row.dataset.disagree) >= disagree)) return false;
  const needle = (wanted.get("q") || "").trim().toLowerCase();
  return !needle || row.dataset.search.includes(needle);
}

function applyFragment(form) {
  const wanted = new URLSearchParams(window.location.hash.slice(1));
  for (const element of form.elements) {
    if (element.name && element.type !== "hidden" && element.type !== "submit") {
      element.value = wanted.get(element.name) || "";
    }
  }
  let shown = 0;
  for (const row of document.querySelectorAll("#instances tbody tr")) {
    const ok = rowMatches(row, wanted);
    row.hidden = !ok;
    if (ok) shown += 1;
  }
  const count = document.getElementById("shown-count");
  if (count) count.textContent = String(shown);
}

function bundleFilters() {
  const form = document.getElementById("filters");
  if (!form || !document.body.dataset.bundle) return;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const element of form.elements) {
      if (element.name && element.type !== "hidden" && element.value) chosen.set(element.name, element.value);
    }
    window.location.hash = chosen.toString();
  });
  window.addEventListener("hashchange", () => applyFragment(form));
  applyFragment(form);
}

document.addEventListener("DOMContentLoaded", () => {
  copyButtons();
  bundleFilters();
});
