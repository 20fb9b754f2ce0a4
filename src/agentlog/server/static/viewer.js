// agentlog viewer: plain JavaScript, no framework, no build step, no network
// beyond this server. Every piece of session data reaches the page through
// textContent, never innerHTML, so a record cannot inject markup.
"use strict";

const API = "/api/v1";
const NIL = "00000000-0000-0000-0000-000000000000";
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path) {
  const response = await fetch(API + path, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = body && body.error ? `${body.error.code}: ${body.error.message}` : response.statusText;
    throw new Error(message);
  }
  return body;
}

function status(text) { $("status").textContent = text || ""; }
function shortId(id) { return id ? id.slice(-8) : ""; }
function localTime(ts) {
  if (!ts) return "";
  const d = new Date(ts.slice(0, 23) + "Z");
  return isNaN(d) ? ts : d.toLocaleString();
}

function contentText(content) {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => {
      if (typeof part === "string") return part;
      if (part && typeof part.text === "string") return part.text;
      return JSON.stringify(part);
    }).join("\n");
  }
  return JSON.stringify(content, null, 2);
}

function prettyJson(text) {
  if (typeof text !== "string") return JSON.stringify(text, null, 2);
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
}

// --- the session list --------------------------------------------------------------
const list = { offset: 0, rows: [], cursor: -1, query: "", timer: null };

async function showList() {
  $("session-view").hidden = true;
  $("list-view").hidden = false;
  $("crumb").textContent = "sessions";
  stopStream();
  list.offset = 0;
  list.rows = [];
  $("sessions").tBodies[0].replaceChildren();
  await loadMore();
}

async function loadMore() {
  const params = new URLSearchParams({ limit: "50", offset: String(list.offset) });
  if (list.query) params.set("q", list.query);
  if ($("show-archived").checked) params.set("archived", "true");
  status("loading…");
  try {
    const page = await api(`/sessions?${params}`);
    const body = $("sessions").tBodies[0];
    for (const info of page.sessions) {
      list.rows.push(info);
      const href = `#/s/${encodeURIComponent(info.id)}`;
      const row = el("tr", { "data-id": info.id, onclick: () => { location.hash = href; } },
        el("td", { class: "title" }, el("a", { href, text: info.title || info.name || "(untitled)" }),
          el("span", { class: "id mono dim", text: info.id })),
        el("td", { class: "mono", text: info.working_dir || "–" }),
        el("td", { text: localTime(info.updated_at) }),
        el("td", { class: "num", text: info.event_count }),
        el("td", { text: info.archived ? `${info.status} (archived)` : info.status }));
      body.append(row);
    }
    list.offset = page.next_offset === null ? list.offset + page.sessions.length : page.next_offset;
    $("more").hidden = page.next_offset === null;
    $("list-empty").hidden = list.rows.length > 0;
    status(`${page.total} session${page.total === 1 ? "" : "s"}`);
  } catch (err) {
    status(`error: ${err.message}`);
  }
}

function moveListCursor(step) {
  const rows = $("sessions").tBodies[0].rows;
  if (!rows.length) return;
  list.cursor = Math.max(0, Math.min(rows.length - 1, list.cursor + step));
  for (const row of rows) row.classList.remove("selected");
  rows[list.cursor].classList.add("selected");
  rows[list.cursor].querySelector("a").focus();
}

// --- the session page ------------------------------------------------------------------
const view = {
  sid: null, head: null, entries: new Map(), children: new Map(), labels: {}, notes: {},
  at: null, lastId: null, source: null, previews: new Map(), totals: null, deltaText: "", treeCursor: null,
  treeTimer: null, shown: null, redraw: null,
};

async function showSession(sid) {
  $("list-view").hidden = true;
  $("session-view").hidden = false;
  if (view.sid !== sid) {
    stopStream();
    // Not "on" from the session shown before: this one's stream is not open yet.
    $("live-state").textContent = "connecting";
    $("live-state").className = "";
  }
  Object.assign(view, { sid, at: null, treeCursor: null });
  $("crumb").textContent = sid;
  status("loading…");
  try {
    const [session] = await Promise.all([api(`/sessions/${encodeURIComponent(sid)}`), loadTree()]);
    const info = session.session;
    $("session-title").textContent = info.title || info.name || "(untitled)";
    document.title = `${$("session-title").textContent} · agentlog`;
    await loadPath(null);
    startStream();
    status("");
  } catch (err) {
    status(`error: ${err.message}`);
    $("live-state").textContent = "off";
    $("live-state").className = "off";
  }
}

async function loadTree() {
  const tree = await api(`/sessions/${encodeURIComponent(view.sid)}/entries`);
  view.head = tree.head;
  view.labels = tree.labels;
  view.notes = tree.notes;
  view.entries = new Map();
  view.children = new Map();
  for (const entry of tree.entries) addEntry(entry);
  view.lastId = tree.entries.length ? tree.entries[tree.entries.length - 1].id : null;
  renderTree();
}

function addEntry(entry) {
  view.entries.set(entry.id, entry);
  if (!view.children.has(entry.parent_id)) view.children.set(entry.parent_id, []);
  view.children.get(entry.parent_id).push(entry.id);
}

function pathIds(id) {
  const ids = new Set();
  for (let cur = id; cur && cur !== NIL && view.entries.has(cur); cur = view.entries.get(cur).parent_id) ids.add(cur);
  return ids;
}

function firstLine(text) {
  const line = String(text).split("\n").map((l) => l.trim()).find((l) => l && !l.startsWith("#"));
  return line ? line.slice(0, 80) : "";
}

function nodeText(entry) {
  const note = view.notes[entry.id];
  if (note && note.summary) return firstLine(note.summary);
  const preview = view.previews.get(entry.id);
  return preview ? (entry.role ? `${entry.role}: ${preview}` : preview) : entry.role || "";
}

function remember(e) {
  const r = e.record;
  if (!r || typeof r !== "object") return;
  const text = e.kind === "message" ? contentText(r.content) : e.kind === "tool_call" ? r.name :
    e.kind === "tool_result" ? r.name : e.kind === "label" ? r.name : "";
  if (text) view.previews.set(e.id, firstLine(text));
}

function renderTree() {
  const onPath = pathIds(view.head);
  const viewing = view.at || view.head;
  const root = $("tree");
  root.replaceChildren();
  // Each chain is drawn flat; only where the timeline forks does a nested
  // branch start, so a long session does not nest a thousand levels deep.
  const drawChain = (startId, container) => {
    const stack = [[startId, container]];
    while (stack.length) {
      let [id, into] = stack.pop();
      while (id) {
        const entry = view.entries.get(id);
        const kids = (view.children.get(id) || []).slice();
        into.append(treeNode(entry, onPath.has(id), id === viewing));
        if (!kids.length) break;
        // Continue along the child on the active path, else the newest.
        kids.sort((a, b) => (onPath.has(b) - onPath.has(a)) || (a < b ? 1 : -1));
        for (const other of kids.slice(1).reverse()) {
          const branch = el("ul", { class: "branch", role: "group" });
          into.append(el("li", { role: "none" }, branch));
          stack.push([other, branch]);
        }
        id = kids[0];
      }
    }
  };
  const roots = (view.children.get(NIL) || []).slice().sort();
  for (const id of roots.reverse()) {
    const ul = roots.length > 1 ? el("ul", { class: "branch", role: "group" }) : root;
    if (ul !== root) root.append(el("li", { role: "none" }, ul));
    drawChain(id, ul);
  }
  $("head-id").textContent = shortId(view.head);
  $("head-id").title = view.head;
  $("event-count").textContent = view.entries.size;
}

function treeNode(entry, onPath, viewing) {
  const badges = [];
  if (entry.id === view.head) badges.push(el("span", { class: "badge head", text: "HEAD" }));
  for (const name of view.labels[entry.id] || []) badges.push(el("span", { class: "badge label", text: name }));
  if (entry.kind === "compaction") badges.push(el("span", { class: "badge compaction", text: "compaction" }));
  if (entry.kind === "branch_summary") badges.push(el("span", { class: "badge branch-summary", text: "branch summary" }));
  if (entry.branch_from) badges.push(el("span", { class: "badge fork", text: "branch" }));
  const classes = ["node", onPath ? "on-path" : "", viewing ? "viewing" : "",
    view.treeCursor === entry.id ? "cursor" : ""].join(" ");
  return el("li", { role: "treeitem", "data-id": entry.id, class: classes, title: `${entry.kind} ${entry.id}`,
    "aria-current": viewing ? "true" : null, onclick: () => loadPath(entry.id) },
  el("span", { class: "kind", text: entry.kind }), el("span", { class: "text", text: nodeText(entry) }), ...badges);
}

async function loadPath(at) {
  view.at = at && at !== view.head ? at : null;
  const query = view.at ? `?at=${view.at}` : "";
  const path = await api(`/sessions/${encodeURIComponent(view.sid)}/path${query}`);
  view.head = path.head;
  view.totals = path.totals;
  path.events.forEach(remember);
  renderTotals();
  renderConversation(path.events);
  // The last event drawn in the live conversation: a settled event whose
  // parent it is extends it. (Not HEAD: events that settle together all
  // carry the HEAD after the last of them.)
  view.shown = view.at ? null : (path.events.length ? path.events[path.events.length - 1].id : NIL);
  $("path-title").textContent = view.at ? "Path to the selected event" : "Active path (HEAD)";
  const note = $("viewing-note");
  note.hidden = !view.at;
  note.textContent = view.at ? `Viewing the path to ${shortId(view.at)}, not HEAD. Press h for HEAD.` : "";
  renderTree();
}

function renderTotals() {
  const t = view.totals || { input_tokens: 0, output_tokens: 0, cost_usd: 0 };
  $("tokens").textContent = `${t.input_tokens.toLocaleString()} / ${t.output_tokens.toLocaleString()}`;
  $("cost").textContent = `$${t.cost_usd.toFixed(4)}`;
}

function addUsage(record) {
  const usage = record && record.usage;
  if (!usage || !view.totals) return;
  view.totals.input_tokens += usage.input_tokens || 0;
  view.totals.output_tokens += usage.output_tokens || 0;
  view.totals.cost_usd += usage.cost_usd || 0;
  renderTotals();
}

function renderConversation(events) {
  const out = $("conversation");
  out.replaceChildren();
  // History a compaction summarized stays readable: the events before its
  // first kept event are shown in a collapsible section above it.
  let lastCompaction = -1;
  events.forEach((e, i) => { if (e.kind === "compaction") lastCompaction = i; });
  let firstKept = events.length;
  if (lastCompaction >= 0) {
    const record = events[lastCompaction].record || {};
    const kept = events.findIndex((e) => e.id === record.first_kept_event_id);
    firstKept = kept >= 0 && kept < lastCompaction ? kept : lastCompaction;
  }
  if (lastCompaction >= 0 && firstKept > 0) {
    const inner = el("ol");
    for (const e of events.slice(0, firstKept)) inner.append(renderEvent(e));
    out.append(el("li", {}, el("details", { class: "pre-compaction", open: true },
      el("summary", { text: `History before compaction (${firstKept} events, summarized for the model)` }), inner)));
  }
  for (const e of events.slice(lastCompaction >= 0 ? firstKept : 0)) out.append(renderEvent(e));
}

function blobLoader(e) {
  const box = el("details", { class: "blob" }, el("summary", { text: `payload in a blob (${e.digest.slice(0, 19)}…): open to load` }));
  box.addEventListener("toggle", async () => {
    if (!box.open || box.dataset.loaded) return;
    box.dataset.loaded = "1";
    try {
      const record = await api(`/sessions/${encodeURIComponent(view.sid)}/events/${e.id}/blob`);
      const body = recordBody({ ...e, record });
      if (body.tagName === "DETAILS") body.open = true;  // the user asked to see it
      box.append(body);
    } catch (err) {
      box.append(el("p", { class: "dim", text: `could not load: ${err.message}` }));
    }
  });
  return box;
}

function recordBody(e) {
  const r = e.record;
  if (e.kind === "message" && r && typeof r === "object") {
    const parts = [el("div", { class: "body", text: contentText(r.content) })];
    if (r.reasoning) parts.unshift(el("details", {}, el("summary", { text: "reasoning" }), el("div", { class: "body dim", text: contentText(r.reasoning) })));
    if (r.usage) {
      const u = r.usage;
      parts.push(el("div", { class: "usage", text: `${u.input_tokens || 0} in · ${u.output_tokens || 0} out${u.cost_usd ? ` · $${Number(u.cost_usd).toFixed(4)}` : ""}${r.model ? ` · ${r.model}` : ""}` }));
    }
    return el("div", {}, ...parts);
  }
  if (e.kind === "tool_call" && r) {
    return el("details", { class: "tool" }, el("summary", { text: `call ${r.name || "?"}` }), el("pre", { text: prettyJson(r.arguments) }));
  }
  if (e.kind === "tool_result" && r) {
    return el("details", { class: "tool" }, el("summary", { text: `result of ${r.name || r.tool_call_id || "?"}${r.is_error ? " (error)" : ""}` }), el("pre", { text: contentText(r.content) }));
  }
  if ((e.kind === "compaction" || e.kind === "branch_summary") && r) {
    return el("div", { class: "body", text: r.summary || "" });
  }
  if (e.kind === "label" && r) return el("div", { text: `label “${r.name}” on ${shortId(r.target)}` });
  return el("details", {}, el("summary", { text: e.kind }), el("pre", { text: JSON.stringify(r, null, 2) }));
}

function renderEvent(e, fresh) {
  const classes = ["ev", `kind-${e.kind}`, e.role ? `role-${e.role}` : "", fresh ? "fresh" : "",
    e.record && e.record.is_error ? "is-error" : ""].join(" ");
  const who = e.kind === "message" ? e.role : e.kind === "compaction" ? "compaction" :
    e.kind === "branch_summary" ? "branch summary" : e.kind.replace("_", " ");
  return el("li", { class: classes, "data-id": e.id, "data-kind": e.kind },
    el("header", {}, el("span", { class: "who", text: who }), el("span", { class: "mono", text: shortId(e.id) }),
      el("time", { datetime: e.timestamp, text: localTime(e.timestamp) })),
    e.blob && e.record === null ? blobLoader(e) : recordBody(e));
}

// --- the live stream -------------------------------------------------------------------
function stopStream() {
  if (view.source) view.source.close();
  view.source = null;
}

function startStream() {
  stopStream();
  const after = view.lastId ? `?after=${view.lastId}` : "";
  const source = new EventSource(`${API}/sessions/${encodeURIComponent(view.sid)}/stream${after}`);
  view.source = source;
  const live = $("live-state");
  source.addEventListener("open", () => { live.textContent = "on"; live.className = "on"; });
  source.addEventListener("error", () => { live.textContent = "reconnecting"; live.className = "off"; });
  source.addEventListener("settled", (msg) => onSettled(JSON.parse(msg.data)));
  source.addEventListener("head", (msg) => { view.head = JSON.parse(msg.data).head; loadPath(view.at); });
  source.addEventListener("delta", (msg) => onDelta(JSON.parse(msg.data).item));
  source.addEventListener("dropped", () => { live.textContent = "catching up"; live.className = "off"; });
  source.addEventListener("problem", (msg) => status(`stream: ${JSON.parse(msg.data).message}`));
}

function onSettled(e) {
  if (view.entries.has(e.id)) return;
  const followsShown = !view.at && view.shown && e.parent_id === view.shown;
  addEntry({ id: e.id, parent_id: e.parent_id, branch_from: e.branch_from, kind: e.kind, role: e.role,
    timestamp: e.timestamp, blob: e.blob });
  view.lastId = e.id;
  remember(e);
  view.head = e.head;
  if (e.kind === "label" || e.kind === "compaction" || e.kind === "branch_summary") {
    scheduleTreeReload();
  }
  if (followsShown) {
    view.shown = e.id;
    $("conversation").append(renderEvent(e, true));
    if (e.kind === "message" && e.role === "assistant") {
      clearDelta();
      addUsage(e.record);
    }
    const last = $("conversation").lastElementChild;
    if (last && window.scrollY + window.innerHeight >= document.body.scrollHeight - 200) last.scrollIntoView({ block: "end" });
  } else if (!view.at && e.head !== view.shown) {
    scheduleRedraw();  // HEAD is not at the end of what is drawn: redraw the active path
  }
  scheduleTreeRender();
}

function scheduleRedraw() {
  if (view.redraw) return;  // once for all the events that settled together
  view.redraw = setTimeout(() => {
    view.redraw = null;
    loadPath(view.at).catch((err) => status(`error: ${err.message}`));
  }, 50);
}

function scheduleTreeRender() {
  if (view.treeTimer) return;
  view.treeTimer = setTimeout(() => { view.treeTimer = null; renderTree(); }, 100);
}

let treeReload = null;
function scheduleTreeReload() {
  if (treeReload) return;
  treeReload = setTimeout(() => { treeReload = null; loadTree().catch((err) => status(`error: ${err.message}`)); }, 200);
}

function onDelta(item) {
  const box = $("live-delta");
  let piece = "";
  if (item.text) piece = item.text;
  else if (item.reasoning) piece = item.reasoning;
  else if (item.tool_call_delta) piece = item.tool_call_delta.name ? `\n[tool ${item.tool_call_delta.name}] ` : (item.tool_call_delta.arguments || "");
  else if (typeof item.value === "string") piece = item.value;
  view.deltaText += piece;
  box.textContent = view.deltaText;
  box.hidden = false;
}

function clearDelta() {
  view.deltaText = "";
  $("live-delta").hidden = true;
  $("live-delta").textContent = "";
}

// --- keyboard --------------------------------------------------------------------------
function treeItems() { return Array.from($("tree").querySelectorAll("li.node")); }

function moveTreeCursor(step) {
  const items = treeItems();
  if (!items.length) return;
  let index = items.findIndex((li) => li.dataset.id === view.treeCursor);
  if (index < 0) index = items.findIndex((li) => li.dataset.id === (view.at || view.head));
  index = Math.max(0, Math.min(items.length - 1, index + step));
  for (const li of items) li.classList.remove("cursor");
  items[index].classList.add("cursor");
  view.treeCursor = items[index].dataset.id;
  items[index].scrollIntoView({ block: "nearest" });
}

function toggleAllTools() {
  const boxes = Array.from(document.querySelectorAll("#conversation details.tool"));
  const open = !boxes.every((d) => d.open);
  for (const d of boxes) d.open = open;
}

document.addEventListener("keydown", (event) => {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (typing) {
    if (event.key === "Escape") document.activeElement.blur();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const onList = !$("list-view").hidden;
  const key = event.key;
  let handled = true;
  if (key === "?") $("help").hidden = !$("help").hidden;
  else if (onList && key === "/") $("search").focus();
  else if (onList && (key === "j" || key === "ArrowDown")) moveListCursor(1);
  else if (onList && (key === "k" || key === "ArrowUp")) moveListCursor(-1);
  else if (!onList && (key === "u" || key === "Escape")) location.hash = "#/";
  else if (!onList && key === "t") $("tree").focus();
  else if (!onList && key === "c") $("conversation").focus();
  else if (!onList && key === "e") toggleAllTools();
  else if (!onList && key === "h") loadPath(null);
  else if (!onList && document.activeElement === $("tree") && (key === "j" || key === "ArrowDown")) moveTreeCursor(1);
  else if (!onList && document.activeElement === $("tree") && (key === "k" || key === "ArrowUp")) moveTreeCursor(-1);
  else if (!onList && document.activeElement === $("tree") && key === "Enter" && view.treeCursor) loadPath(view.treeCursor);
  else handled = false;
  if (handled) event.preventDefault();
});

// --- routing ---------------------------------------------------------------------------
function route() {
  const match = location.hash.match(/^#\/s\/(.+)$/);
  if (!match) { showList(); return; }
  let sid = match[1];
  // A mistyped address (a stray "%") is not a reason to throw: the server
  // names what is wrong with the id instead.
  try { sid = decodeURIComponent(sid); } catch (err) { /* kept as typed */ }
  showSession(sid);
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", () => {
  $("help-button").addEventListener("click", () => { $("help").hidden = !$("help").hidden; });
  $("more").addEventListener("click", loadMore);
  $("show-archived").addEventListener("change", showList);
  $("search").addEventListener("input", () => {
    clearTimeout(list.timer);
    list.timer = setTimeout(() => { list.query = $("search").value.trim(); showList(); }, 200);
  });
  route();
});
