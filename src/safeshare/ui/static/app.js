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
  // the run's disclosure warnings, once it has ended (rendered by the server: ui/run_warnings.py)
  const warnings = box.querySelector("[data-warnings]");
  if (warnings && state.status !== "running" && !warnings.dataset.loaded) {
    warnings.dataset.loaded = "1";
    fetch(warnings.dataset.warnings, { credentials: "same-origin" }).then((r) => r.text())
      .then((html) => { warnings.innerHTML = html; });
  }
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
      else if (box.dataset.lattice === "exploring") {
        // a done run whose lattice for Explore is still evaluated in its child: reload when it is
        if (state.lattice === "exploring") { setTimeout(tick, 400); } else { window.location.reload(); }
      }
      else if ((box.dataset.reload || state.acknowledge) && box.dataset.status !== state.status) {
        // a release refused until its warnings are acknowledged: the page draws the boxes
        window.location.reload();
      }
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
  row.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); showNode(row.dataset.node); }
  });
});

const statusFilter = document.querySelector("select[data-testid=status]");
if (statusFilter) { statusFilter.addEventListener("change", () => statusFilter.form.submit()); }

// ---------------------------------------------------------------- explore: zoom, pan, keyboard
// The server draws the lattice with a viewBox centred on the optimum (ui/hasse.py); here the
// window is fitted to the frame, zoomed (the viewBox shrinks or grows about its centre) and
// panned (dragged, the buttons, or following the keyboard's focus).
const hasse = document.querySelector("svg.hasse");
if (hasse && diagram) {
  const full = hasse.dataset.full.split(" ").map(Number);
  let [vx, vy, vw, vh] = hasse.getAttribute("viewBox").split(" ").map(Number);
  let scale = 1;  // screen px per drawing px
  const frame = () => [Math.max(diagram.clientWidth - 2, 200), Math.min(Math.max(window.innerHeight * 0.7, 300), full[1] * 4)];
  const apply = () => {
    const [fw, fh] = frame();
    vw = Math.min(fw / scale, full[0] * 1.0); vh = Math.min(fh / scale, full[1]);
    vx = Math.min(Math.max(vx, 0), Math.max(full[0] - vw, 0));
    vy = Math.min(Math.max(vy, 0), Math.max(full[1] - vh, 0));
    hasse.setAttribute("viewBox", `${vx} ${vy} ${vw} ${vh}`);
    hasse.setAttribute("width", Math.round(vw * scale));
    hasse.setAttribute("height", Math.round(vh * scale));
  };
  const centreOn = (circle) => {
    const cx = Number(circle.getAttribute("cx")), cy = Number(circle.getAttribute("cy"));
    vx = cx - vw / 2; vy = cy - vh / 2; apply();
  };
  const inView = (circle) => {
    const cx = Number(circle.getAttribute("cx")), cy = Number(circle.getAttribute("cy"));
    return cx >= vx && cx <= vx + vw && cy >= vy && cy <= vy + vh;
  };
  const zoomBy = (factor) => {
    const cx = vx + vw / 2, cy = vy + vh / 2;
    scale = Math.min(Math.max(scale * factor, 0.02), 8);
    const [fw, fh] = frame();
    vw = fw / scale; vh = fh / scale; vx = cx - vw / 2; vy = cy - vh / 2; apply();
  };
  const optimumNode = hasse.querySelector("circle[data-testid=optimum]");
  const [fw0, fh0] = frame();
  vx = vx + vw / 2 - fw0 / 2;  // the server's window, re-fitted to the frame about its centre
  vy = vy + vh / 2 - Math.min(fh0, full[1]) / 2;
  apply();
  if (optimumNode && !inView(optimumNode)) { centreOn(optimumNode); }
  document.querySelectorAll("[data-zoom]").forEach((button) => {
    button.addEventListener("click", () => {
      const what = button.dataset.zoom;
      if (what === "in") { zoomBy(1.5); }
      else if (what === "out") { zoomBy(1 / 1.5); }
      else if (what === "left") { vx -= vw / 3; apply(); }
      else if (what === "right") { vx += vw / 3; apply(); }
      else if (what === "up") { vy -= vh / 3; apply(); }
      else if (what === "down") { vy += vh / 3; apply(); }
      else if (what === "optimum" && optimumNode) { centreOn(optimumNode); optimumNode.focus(); }
      else if (what === "all") { scale = Math.min(frame()[0] / full[0], frame()[1] / full[1]); vx = 0; vy = 0; apply(); }
    });
  });
  let drag = null;
  hasse.addEventListener("pointerdown", (event) => {
    if (event.target.closest("circle[data-node]")) { return; }
    drag = { x: event.clientX, y: event.clientY, vx, vy };
    hasse.setPointerCapture(event.pointerId);
  });
  hasse.addEventListener("pointermove", (event) => {
    if (!drag) { return; }
    vx = drag.vx - (event.clientX - drag.x) / scale; vy = drag.vy - (event.clientY - drag.y) / scale; apply();
  });
  hasse.addEventListener("pointerup", () => { drag = null; });
  // keyboard: one tab stop (roving tabindex); arrows along a row (by loss) and between rows
  const at = (row, col) => hasse.querySelector(`circle[data-row="${row}"][data-col="${col}"]`);
  const nearest = (row, cx) => {
    let best = null, gap = Infinity;
    hasse.querySelectorAll(`circle[data-row="${row}"]`).forEach((c) => {
      const d = Math.abs(Number(c.getAttribute("cx")) - cx);
      if (d < gap) { gap = d; best = c; }
    });
    return best;
  };
  hasse.addEventListener("keydown", (event) => {
    const circle = event.target.closest("circle[data-node]");
    if (!circle) { return; }
    const row = Number(circle.dataset.row), col = Number(circle.dataset.col), cx = Number(circle.getAttribute("cx"));
    let next = null;
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); showNode(circle.dataset.node); return; }
    if (event.key === "ArrowLeft") { next = at(row, col - 1); }
    else if (event.key === "ArrowRight") { next = at(row, col + 1); }
    else if (event.key === "ArrowUp") { next = nearest(row + 1, cx); }
    else if (event.key === "ArrowDown") { next = nearest(row - 1, cx); }
    else { return; }
    event.preventDefault();
    if (next) {
      circle.setAttribute("tabindex", "-1"); next.setAttribute("tabindex", "0"); next.focus();
      if (!inView(next)) { centreOn(next); }
    }
  });
  window.addEventListener("resize", apply);
}

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
  table.querySelectorAll("th[data-sort]").forEach((th) => {
    const index = th.cellIndex;
    th.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); th.click(); }
    });
    th.addEventListener("click", () => {
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      const numeric = th.dataset.sort === "num";
      const dir = th.dataset.dir === "asc" ? -1 : 1;
      th.dataset.dir = dir === 1 ? "asc" : "desc";
      table.querySelectorAll("th[data-sort]").forEach((other) => other.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
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

// ---------------------------------------------------------------- the hierarchy wizard
// Only the chosen builder's fieldset is shown; each change of a field posts the form to the
// preview address and swaps in what the server renders (the mapping with its records, or the
// one line of what is wrong): nothing is saved until "Save hierarchy".
document.querySelectorAll("form[data-preview]").forEach((form) => {
  const type = form.querySelector("[name=builder_type]");
  const target = document.getElementById("hierarchy-preview");
  const show = () => {
    form.querySelectorAll("fieldset[data-builder]").forEach((set) => {
      set.hidden = set.dataset.builder !== type.value;
      set.disabled = set.hidden;
    });
  };
  let timer = null, sent = 0;
  const failed = (why) => {
    if (target) {
      target.innerHTML = "";
      const p = document.createElement("p");
      p.className = "error";
      p.dataset.testid = "preview-failed";
      p.textContent = `The preview could not be loaded (${why}): change a field to try again.`;
      target.appendChild(p);
    }
  };
  const preview = () => {
    const mine = ++sent;
    fetch(form.dataset.preview, { method: "POST", credentials: "same-origin", body: new FormData(form) })
      // 400 is the fragment with the one line of what is wrong; anything else is no preview
      .then((r) => (r.ok || r.status === 400 ? r.text() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then((html) => { if (mine === sent && target) { target.innerHTML = html; } })
      .catch((e) => { if (mine === sent) { failed(e.message || "no answer"); } });
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(preview, 350); };
  type.addEventListener("change", () => { show(); later(); });
  form.addEventListener("input", later);
  form.addEventListener("change", later);
  show();
  // Fields changed before this script ran (a quick hand, a form restored by the browser's back
  // button) fired their events unheard: preview them now, so the mapping shown is the form's.
  const changed = [...form.elements].some((el) =>
    (el.type === "checkbox" || el.type === "radio") ? el.checked !== el.defaultChecked
      : el.tagName === "SELECT" ? [...el.options].some((o) => o.selected !== o.defaultSelected)
        : ("defaultValue" in el && el.type !== "hidden" && el.value !== el.defaultValue));
  if (changed) { later(); }
});
