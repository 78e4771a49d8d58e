// safeshare workbench: the page's behaviour (no library). Polls runs, draws nothing itself:
// every figure and chart comes from the server; this only fetches, shows and sorts.
"use strict";

const project = document.body.dataset.project;

function api(path, options) {
  return fetch(path, Object.assign({ credentials: "same-origin", headers: { "Accept": "application/json" } }, options || {}));
}

// ---------------------------------------------------------------- runs: progress, cancel
function showState(box, state) {
  const status = box.querySelector("[data-testid=run-status]");
  if (status) {
    status.textContent = state.status + (state.verified ? " · release verified" : "");
    status.className = "status-" + state.status;
  }
  const progress = state.progress || {};
  const phase = box.querySelector("[data-testid=run-phase]");
  if (phase) { phase.textContent = progress.phase || ""; }
  const bar = box.querySelector("progress");
  if (bar) {
    if (progress.total) { bar.max = progress.total; bar.value = progress.done || 0; }
    else if (state.status === "running") { bar.removeAttribute("value"); }
    else { bar.max = 1; bar.value = 1; }
  }
  const notes = box.querySelector("[data-testid=run-notes]");
  if (notes && progress.notes) {
    notes.replaceChildren(...progress.notes.map((n) => { const li = document.createElement("li"); li.textContent = n; return li; }));
  }
  const error = box.querySelector(".run-error");
  if (error) { error.hidden = !state.error; error.textContent = state.error || ""; }
  const cancel = box.querySelector("[data-cancel]");
  if (cancel) { cancel.disabled = state.status !== "running"; }
  const after = box.querySelector(".after");
  if (after) { after.hidden = state.status !== "done"; }
}

// Elements with data-poll-run follow a run; with data-reload the page reloads once the run's
// status differs from the one it was rendered with (data-status), to show the results.
function poll(box) {
  const run = box.dataset.pollRun;
  if (!run || !project) { return; }
  const tick = () => {
    api(`/api/projects/${project}/runs/${run}`).then((r) => r.json()).then((state) => {
      showState(box, state);
      if (state.status === "running") { setTimeout(tick, 400); }
      else if (box.dataset.reload && box.dataset.status !== state.status) { window.location.reload(); }
    }).catch(() => setTimeout(tick, 1500));
  };
  tick();
}

document.querySelectorAll("[data-poll-run]").forEach(poll);

document.querySelectorAll("[data-cancel]").forEach((button) => {
  button.addEventListener("click", () => {
    button.disabled = true;
    api(`/api/projects/${project}/runs/${button.dataset.cancel}/cancel`, { method: "POST" });
  });
});

// ---------------------------------------------------------------- explore: hover, click, compare
const diagram = document.querySelector(".diagram");
const tooltip = document.querySelector(".tooltip");
const detail = document.getElementById("node");
const tray = [];

function runOf() { return diagram ? diagram.dataset.run : null; }

function showNode(levels) {
  if (!detail) { return; }
  fetch(`/p/${project}/runs/${runOf()}/node?levels=${encodeURIComponent(levels)}`, { credentials: "same-origin" })
    .then((r) => r.text()).then((html) => {
      detail.innerHTML = html;  // rendered (and escaped) by the server
      document.querySelectorAll(".hasse circle.selected").forEach((c) => c.classList.remove("selected"));
      const circle = document.querySelector(`.hasse circle[data-node="${levels}"]`);
      if (circle) { circle.classList.add("selected"); }
    });
}

function drawTray() {
  const list = document.getElementById("tray-nodes");
  if (!list) { return; }
  list.replaceChildren(...tray.map((key) => { const li = document.createElement("li"); li.textContent = key; return li; }));
  document.getElementById("compare").disabled = tray.length < 2;
}

if (diagram) {
  diagram.addEventListener("mousemove", (event) => {
    const circle = event.target.closest("circle[data-node]");
    if (!circle || !tooltip) { if (tooltip) { tooltip.hidden = true; } return; }
    tooltip.textContent = `${circle.dataset.node} · ${circle.dataset.status} · loss ${circle.dataset.loss || "?"} · suppressed ${circle.dataset.suppressed || "?"}`;
    const box = diagram.getBoundingClientRect();
    tooltip.style.left = (event.clientX - box.left + diagram.scrollLeft + 12) + "px";
    tooltip.style.top = (event.clientY - box.top + diagram.scrollTop + 12) + "px";
    tooltip.hidden = false;
  });
  diagram.addEventListener("mouseleave", () => { if (tooltip) { tooltip.hidden = true; } });
  diagram.addEventListener("click", (event) => {
    const circle = event.target.closest("circle[data-node]");
    if (circle) { showNode(circle.dataset.node); }
  });
}

document.querySelectorAll("table[data-testid=node-list] tbody tr[data-node]").forEach((row) => {
  row.addEventListener("click", () => showNode(row.dataset.node));
});

document.addEventListener("click", (event) => {
  const add = event.target.closest("[data-add]");
  if (add && !tray.includes(add.dataset.add) && tray.length < 4) { tray.push(add.dataset.add); drawTray(); }
});

const compare = document.getElementById("compare");
if (compare) {
  compare.addEventListener("click", () => {
    fetch(`/p/${project}/runs/${runOf()}/compare?nodes=${encodeURIComponent(tray.join(";"))}`, { credentials: "same-origin" })
      .then((r) => r.text()).then((html) => { document.getElementById("comparison").innerHTML = html; });
  });
  document.getElementById("tray-clear").addEventListener("click", () => { tray.length = 0; drawTray(); });
}

// ---------------------------------------------------------------- sortable tables
document.querySelectorAll("table.sortable").forEach((table) => {
  table.querySelectorAll("th[data-sort]").forEach((th, index) => {
    th.addEventListener("click", () => {
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      const numeric = th.dataset.sort === "num";
      const dir = th.dataset.dir === "asc" ? -1 : 1;
      th.dataset.dir = dir === 1 ? "asc" : "desc";
      rows.sort((a, b) => {
        const x = a.cells[index].textContent.trim(), y = b.cells[index].textContent.trim();
        return dir * (numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y));
      });
      body.replaceChildren(...rows);
    });
  });
});

// ---------------------------------------------------------------- copy as YAML / CLI / Python
document.querySelectorAll("[data-copy]").forEach((button) => {
  button.addEventListener("click", () => {
    const text = document.getElementById(button.dataset.copy).textContent;
    const done = () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy"; }, 1500); };
    if (navigator.clipboard) { navigator.clipboard.writeText(text).then(done, () => {}); }
  });
});
