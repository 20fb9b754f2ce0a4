// agentlog viewer: plain JavaScript, no framework, no build step, no network
// beyond this server. Every piece of session data reaches the page through
// textContent, never innerHTML, so a record cannot inject markup.
"use strict";

const API = "/api/v1";
const NIL = "00000000-0000-0000-0000-000000000000";
const $ = (id) => document.getElementById(id);

// Bidirectional overrides, embeddings and isolates in a session's text
// are shown as marks, not obeyed: one in a message would reverse the rest
// of its line on screen, the "Trojan Source" way of making text read as
// something it is not. (The stored text is untouched.)
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;
function visible(text) {
  return String(text).replace(BIDI_CONTROLS, (c) => `\u27e6U+${c.charCodeAt(0).toString(16).toUpperCase()}\u27e7`);
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = visible(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(visible(child)));
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
function shortId(id) { return id ? String(id).slice(-8) : ""; }
function localTime(ts) {
  if (!ts) return "";
  ts = String(ts);
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
      // An image or a file is named, as the exports name it: its base64
      // drawn as JSON would bury the conversation.
      if (part && typeof part.type === "string" && part.type) return `[${part.type}]`;
      return JSON.stringify(part);
    }).join("\n");
  }
  return JSON.stringify(content, null, 2);
}

// Parts that hold a model's thinking (Anthropic's, as imported Claude Code
// and pi replies keep them): shown folded as reasoning, as the exports do,
// never inside the reply's text.
const THINKING = new Set(["thinking", "redacted_thinking"]);
const isThinking = (part) => Boolean(part) && typeof part === "object" && THINKING.has(part.type);

function answerText(content) {
  return contentText(Array.isArray(content) ? content.filter((part) => !isThinking(part)) : content);
}

function reasoningText(r) {
  const pieces = r.reasoning ? [contentText(r.reasoning)] : [];
  const thinking = Array.isArray(r.content) ? r.content.filter(isThinking) : [];
  for (const part of thinking) if (typeof part.thinking === "string" && part.thinking) pieces.push(part.thinking);
  if (!pieces.length && thinking.length) pieces.push("(the model reasoned here; its text was not recorded, or only in encrypted form)");
  return pieces.join("\n\n");
}

function prettyJson(text) {
  if (typeof text !== "string") return JSON.stringify(text, null, 2);
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
}

// --- the session list --------------------------------------------------------------
const list = { offset: 0, rows: [], cursor: -1, query: "", timer: null, seq: 0 };

async function showList() {
  $("session-view").hidden = true;
  $("list-view").hidden = false;
  $("crumb").textContent = "sessions";
  stopStream();
  // No session is shown: what is still on its way for one is dropped, and
  // opening it again starts afresh.
  view.sid = null;
  view.pathSeq += 1;
  list.seq += 1;  // a page still on its way for the list shown before is dropped
  list.offset = 0;
  list.rows = [];
  list.cursor = -1;
  $("sessions").tBodies[0].replaceChildren();
  await loadMore();
}

// The list is newest first, and a session written to moves to the top: a
// page asked for by offset after that would repeat a row and miss the
// session written to. So "More" reads the list again from the top, one
// page longer, while that is one request (the server's limit, 500); past
// that, by offset, leaving out rows already shown.
const PAGE = 50;
const WHOLE = 500;

async function loadMore() {
  const whole = list.rows.length > 0 && list.rows.length + PAGE <= WHOLE;
  const params = new URLSearchParams({
    limit: String(whole ? list.rows.length + PAGE : PAGE), offset: String(whole ? 0 : list.offset) });
  if (list.query) params.set("q", list.query);
  if ($("show-archived").checked) params.set("archived", "true");
  status("loading…");
  const seq = list.seq;
  try {
    const page = await api(`/sessions?${params}`);
    if (seq !== list.seq) return;  // the query changed meanwhile
    const body = $("sessions").tBodies[0];
    if (whole) {
      list.rows = [];
      body.replaceChildren();
    }
    const shown = new Set(list.rows.map((info) => info.id));
    for (const info of page.sessions) {
      if (shown.has(info.id)) continue;
      list.rows.push(info);
      search.titles.set(info.id, info.title || info.name || "");
      const href = `#/s/${encodeURIComponent(info.id)}`;
      const row = el("tr", { "data-id": info.id, onclick: () => { location.hash = href; } },
        el("td", { class: "title" }, el("a", { href, text: info.title || info.name || "(untitled)" }),
          el("span", { class: "id mono dim", text: info.id })),
        el("td", { class: "mono", text: info.working_dir || (info.source_cwd ? `${info.source_cwd} (imported)` : "–") }),
        el("td", { text: localTime(info.updated_at) }),
        el("td", { class: "num", text: info.event_count }),
        el("td", { text: info.archived ? `${info.status} (archived)` : info.status }));
      body.append(row);
    }
    const start = whole ? 0 : list.offset;
    list.offset = page.next_offset === null ? start + page.sessions.length : page.next_offset;
    list.cursor = Math.min(list.cursor, list.rows.length - 1);
    $("more").hidden = page.next_offset === null;
    $("list-empty").hidden = list.rows.length > 0;
    status(`${page.total} session${page.total === 1 ? "" : "s"}`);
  } catch (err) {
    if (seq === list.seq) status(`error: ${err.message}`);
  }
}

// j/k walk the session rows, then the search hits.
function listItems() {
  return [...$("sessions").tBodies[0].rows, ...$("hits").querySelectorAll("li.hit")];
}

function moveListCursor(step) {
  const items = listItems();
  if (!items.length) return;
  list.cursor = Math.max(0, Math.min(items.length - 1, list.cursor + step));
  for (const item of items) item.classList.remove("selected");
  items[list.cursor].classList.add("selected");
  items[list.cursor].querySelector("a").focus();
}

// --- full-text search ----------------------------------------------------------------
// The box filters the session list at once (title, id, directory) and, a
// moment later, searches the events themselves (GET /search).
const search = { timer: null, seq: 0, titles: new Map() };

function onSearchInput() {
  clearTimeout(list.timer);
  list.timer = setTimeout(() => { list.query = $("search").value.trim(); showList(); }, 200);
  clearTimeout(search.timer);
  search.timer = setTimeout(runSearch, 300);
}

function clearSearch() {
  $("search").value = "";
  clearTimeout(search.timer);
  clearTimeout(list.timer);
  search.seq += 1;  // an answer still on its way is dropped
  $("search-results").hidden = true;
  $("hits").replaceChildren();
  if (list.query) { list.query = ""; showList(); }
}

async function runSearch() {
  const query = $("search").value.trim();
  const seq = ++search.seq;
  const box = $("search-results");
  if (!query) { box.hidden = true; $("hits").replaceChildren(); return; }
  const params = new URLSearchParams({ q: query, limit: "50" });
  $("search-state").textContent = "searching…";
  box.hidden = false;
  let found;
  try {
    found = await api(`/search?${params}`);
  } catch (err) {
    if (seq !== search.seq) return;
    $("hits").replaceChildren();
    $("hits-empty").hidden = true;
    $("search-error").hidden = false;
    $("search-error").textContent = `Search refused: ${err.message}`;
    $("search-state").textContent = "";
    return;
  }
  if (seq !== search.seq) return;  // the box changed meanwhile
  $("search-error").hidden = true;
  $("search-error").textContent = "";
  const broken = found.broken && found.broken.length ? ` (${found.broken.length} unreadable session${found.broken.length === 1 ? "" : "s"} not searched)` : "";
  $("search-state").textContent = `${found.hits.length}${found.hits.length === 50 ? "+" : ""} event${found.hits.length === 1 ? "" : "s"}${broken}`;
  $("hits-empty").hidden = found.hits.length > 0;
  $("hits").replaceChildren(...found.hits.map(hitItem));
  if (list.cursor >= $("sessions").tBodies[0].rows.length) list.cursor = -1;
  fillTitles(found.hits, seq);
}

// The snippet as text nodes, with <mark> around the highlights. The offsets
// count characters (code points), as Python does, not UTF-16 units.
function snippetNodes(snippet, highlights) {
  const chars = Array.from(String(snippet || ""));
  const spans = (Array.isArray(highlights) ? highlights : [])
    .filter((s) => Array.isArray(s) && s.length === 2 && Number.isInteger(s[0]) && Number.isInteger(s[1]))
    .map(([a, b]) => [Math.max(0, a), Math.min(chars.length, b)])
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const out = [];
  let pos = 0;
  for (const [a, b] of spans) {
    if (a < pos) continue;  // overlapping: the first one wins
    if (a > pos) out.push(document.createTextNode(visible(chars.slice(pos, a).join(""))));
    out.push(el("mark", { text: chars.slice(a, b).join("") }));
    pos = b;
  }
  if (pos < chars.length) out.push(document.createTextNode(visible(chars.slice(pos).join(""))));
  return out;
}

function hitItem(hit) {
  const href = `#/s/${encodeURIComponent(hit.session_id)}/e/${encodeURIComponent(hit.event_id)}`;
  const title = search.titles.get(hit.session_id);
  const what = hit.kind === "message" && hit.role ? hit.role : hit.role ? `${hit.kind} · ${hit.role}` : hit.kind;
  return el("li", { class: "hit", "data-session": hit.session_id, "data-event": hit.event_id },
    el("a", { href },
      el("span", { class: "hit-head" },
        el("span", { class: "hit-title", text: title || "(untitled)" }),
        el("span", { class: "mono dim", text: hit.session_id }),
        el("span", { class: "hit-kind", text: what }),
        el("time", { datetime: hit.timestamp, text: localTime(hit.timestamp) })),
      el("span", { class: "snippet" }, ...snippetNodes(hit.snippet, hit.highlights))));
}

async function fillTitles(hits, seq) {
  const missing = [...new Set(hits.map((h) => h.session_id))].filter((sid) => !search.titles.has(sid)).slice(0, 20);
  await Promise.all(missing.map(async (sid) => {
    try {
      const info = (await api(`/sessions/${encodeURIComponent(sid)}`)).session;
      search.titles.set(sid, info.title || info.name || "");
    } catch (err) {
      search.titles.set(sid, "");
    }
  }));
  if (seq !== search.seq) return;
  for (const li of $("hits").querySelectorAll("li.hit")) {
    li.querySelector(".hit-title").textContent = visible(search.titles.get(li.dataset.session) || "(untitled)");
  }
}

// --- the session page ------------------------------------------------------------------
const CHUNK = 150;     // events drawn at a time in the conversation
const ROW = 22;        // px: the height of one tree row (viewer.css .node)
const OVERSCAN = 30;   // tree rows drawn above and below what is visible

const view = {
  sid: null, head: null, entries: new Map(), children: new Map(), labels: {}, notes: {},
  at: null, lastId: null, source: null, previews: new Map(), totals: null, deltaText: "", treeCursor: null,
  shown: null, redraw: null, pathSeq: 0, target: null,
  // what the stream has told: a count of its settled and head messages, and HEAD as it last said
  streamSeq: 0, streamHead: null,
  // the conversation: the events of the path shown, and the window of them drawn
  path: [], pathIndex: new Map(), firstKept: 0, win: { start: 0, end: 0 }, pending: [], observer: null,
  // the tree: one row per event, in display order; only the visible rows are drawn
  rows: [], rowIndex: new Map(), onPath: new Set(), treeDirty: false, treeDraw: false, frame: null,
};

async function showSession(sid, target) {
  $("list-view").hidden = true;
  $("session-view").hidden = false;
  if (view.sid !== sid) {
    stopStream();
    clearDelta();
    // Not "on" from the session shown before: this one's stream is not open yet.
    $("live-state").textContent = "connecting";
    $("live-state").className = "";
    $("tree-pane").scrollTop = 0;
    clearSession();
  }
  Object.assign(view, { sid, at: null, treeCursor: null, target: target || null, streamHead: null });
  view.pathSeq += 1;  // a path still on its way for the page shown before is dropped
  $("crumb").textContent = sid;
  for (const format of ["md", "html", "bundle"]) {
    // The server's export (what `agentlog export` writes), as a download.
    $(`export-${format}`).href = `${API}/sessions/${encodeURIComponent(sid)}/export?format=${format}`;
  }
  status("loading…");
  try {
    // The tree, the session and HEAD's path are asked for together.
    const pathWanted = fetchPath(null);
    pathWanted.catch(() => {});  // awaited below, or not needed
    const [session] = await Promise.all([api(`/sessions/${encodeURIComponent(sid)}`), loadTree()]);
    if (view.sid !== sid) return;  // another session was opened meanwhile
    const info = session.session;
    $("session-title").textContent = visible(info.title || info.name || "(untitled)");
    document.title = `${$("session-title").textContent} · agentlog`;
    const missing = target && !view.entries.has(target);
    if (missing) target = null;
    if (target && !pathIds(view.head).has(target)) {
      await loadPath(target, target);  // off the active path: show the path to it
    } else {
      let path = await pathWanted;
      // Read before the tree, and HEAD moved in between: the stream goes on
      // from the tree's last event, so this path would miss what came after.
      if (path.head !== view.head) path = await fetchPath(null);
      if (view.sid !== sid) return;
      applyPath(path, null, target);
      if (!target) scrollTreeTo(view.head, "center");  // a long tree opens where HEAD is
    }
    startStream();
    status(missing ? `event ${shortId(view.target)} is not in this session` : "");
  } catch (err) {
    status(`error: ${err.message}`);
    $("live-state").textContent = "off";
    $("live-state").className = "off";
  }
}

// Nothing of the session shown before stays on screen under another id:
// if this one cannot be loaded (deleted, a stale link), the page is empty
// but for the error.
function clearSession() {
  Object.assign(view, { head: null, entries: new Map(), children: new Map(), labels: {}, notes: {},
    lastId: null, previews: new Map(), totals: null, shown: null, path: [], pathIndex: new Map() });
  $("session-title").textContent = "";
  document.title = "agentlog";
  $("conversation").replaceChildren();
  $("viewing-note").hidden = true;
  renderTotals();
  renderTree();
}

async function loadTree(reload) {
  const sid = view.sid;
  const seq = view.streamSeq;
  const tree = await api(`/sessions/${encodeURIComponent(sid)}/entries`);
  if (view.sid !== sid) return;  // another session is shown now
  const known = view.entries;
  view.head = tree.head;
  view.labels = tree.labels;
  view.notes = tree.notes;
  view.entries = new Map();
  view.children = new Map();
  for (const entry of tree.entries) addEntry(entry);
  view.lastId = tree.entries.length ? tree.entries[tree.entries.length - 1].id : null;
  if (reload && view.streamSeq !== seq) {
    // The stream brought events while the tree was read: those the tree was
    // read without (ids increase in append order) stay.
    for (const [id, entry] of known) {
      if (!view.entries.has(id) && (!view.lastId || id > view.lastId)) {
        addEntry(entry);
        view.lastId = id;
      }
    }
  }
  // HEAD as the stream last said: the tree may hold events the stream has
  // not delivered yet, and those are drawn as they arrive (onSettled), not
  // by redrawing the conversation from scratch.
  if (reload && view.streamHead) view.head = view.streamHead;
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
  const text = e.kind === "message" ? answerText(r.content).slice(0, 2000) : e.kind === "tool_call" ? r.name :
    e.kind === "tool_result" ? r.name : e.kind === "label" ? r.name : "";
  if (text) view.previews.set(e.id, firstLine(text));
}

// --- the tree: a flat list of rows, drawn only where it is visible ------------------------
function buildRows() {
  const onPath = pathIds(view.head);
  const rows = [];
  // Each chain is one run of rows; only where the timeline forks does an
  // indented branch start (drawn right after the fork, before the chain goes
  // on), so a long session does not nest a thousand levels deep.
  const roots = (view.children.get(NIL) || []).slice().sort().reverse();
  // How many events each heads: entries are kept in append order, and a
  // child comes after its parent, so one backward pass sums them.
  const size = new Map();
  const ids = Array.from(view.entries.keys());
  for (let i = ids.length - 1; i >= 0; i--) {
    const entry = view.entries.get(ids[i]);
    const mine = (size.get(ids[i]) || 0) + 1;
    size.set(ids[i], mine);
    size.set(entry.parent_id, (size.get(entry.parent_id) || 0) + mine);
  }
  const stack = [];
  for (let i = roots.length - 1; i >= 0; i--) stack.push([roots[i], roots.length > 1 ? 1 : 0]);
  while (stack.length) {
    let [id, depth] = stack.pop();
    while (id) {
      if (!view.entries.has(id)) break;
      rows.push({ id, depth });
      const kids = view.children.get(id);
      if (!kids || !kids.length) break;
      let ordered = kids;
      if (kids.length > 1) {
        // Go on along the child on the active path, else the one heading
        // the most events (the newest of those): going on with the newest,
        // a one-event retry, put the chain a level deeper at every retry.
        ordered = kids.slice().sort((a, b) => (onPath.has(b) - onPath.has(a))
          || ((size.get(b) || 0) - (size.get(a) || 0)) || (a < b ? 1 : -1));
        stack.push([ordered[0], depth]);
        for (let k = 1; k < ordered.length; k++) stack.push([ordered[k], depth + 1]);
        break;
      }
      id = ordered[0];
    }
  }
  view.rows = rows;
  view.rowIndex = new Map(rows.map((row, i) => [row.id, i]));
  view.onPath = onPath;
}

function renderTree() {
  buildRows();
  drawTree();
  $("head-id").textContent = shortId(view.head);
  $("head-id").title = view.head || "";
  $("event-count").textContent = view.entries.size;
}

function treeOffset() {
  // Where the tree's first row is, in the pane's scrolled content.
  const pane = $("tree-pane");
  return $("tree").getBoundingClientRect().top - pane.getBoundingClientRect().top + pane.scrollTop;
}

function drawTree() {
  const pane = $("tree-pane");
  const tree = $("tree");
  const total = view.rows.length;
  tree.style.height = `${total * ROW}px`;
  const top = pane.scrollTop - treeOffset();
  const height = pane.clientHeight || window.innerHeight;
  const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
  const last = Math.min(total, Math.ceil((top + height) / ROW) + OVERSCAN);
  const viewing = view.at || view.head;
  // Sizes through the CSSOM: the page's CSP forbids style attributes.
  const spacer = el("li", { role: "none", class: "spacer" });
  spacer.style.height = `${first * ROW}px`;
  const parts = [spacer];
  let run = null;
  let runDepth = -1;
  for (let i = first; i < last; i++) {
    const { id, depth } = view.rows[i];
    const node = treeNode(view.entries.get(id), view.onPath.has(id), id === viewing);
    if (depth === 0) { parts.push(node); runDepth = -1; continue; }
    if (depth !== runDepth) {
      // A run of rows of one branch: nested in as many branch lists as it is deep.
      let outer = null;
      let inner = null;
      for (let d = 0; d < depth; d++) {
        const ul = el("ul", { class: "branch", role: "group" });
        if (inner) inner.append(el("li", { role: "none" }, ul)); else outer = ul;
        inner = ul;
      }
      parts.push(el("li", { role: "none" }, outer));
      run = inner;
      runDepth = depth;
    }
    run.append(node);
  }
  tree.replaceChildren(...parts);
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
    "aria-current": viewing ? "true" : null, onclick: () => showPath(entry.id) },
  el("span", { class: "kind", text: entry.kind }), el("span", { class: "text", text: nodeText(entry) }), ...badges);
}

function scrollTreeTo(id, block) {
  const index = view.rowIndex.get(id);
  if (index === undefined) return;
  const pane = $("tree-pane");
  const y = treeOffset() + index * ROW;
  if (block === "nearest") {
    if (y < pane.scrollTop) pane.scrollTop = y;
    else if (y + ROW > pane.scrollTop + pane.clientHeight) pane.scrollTop = y + ROW - pane.clientHeight;
  } else {
    pane.scrollTop = Math.max(0, y - pane.clientHeight / 2);
  }
  drawTree();
}

// --- redraws are batched: at most one per animation frame -------------------------------
function scheduleFrame() {
  if (view.frame) return;
  view.frame = requestAnimationFrame(() => {
    view.frame = null;
    flushConversation();
    if (!view.at && view.shown && view.head !== view.shown) scheduleRedraw();
    if (view.treeDirty) { view.treeDirty = false; view.treeDraw = false; renderTree(); }
    else if (view.treeDraw) { view.treeDraw = false; drawTree(); }
  });
}

function scheduleTreeRender() { view.treeDirty = true; scheduleFrame(); }
function scheduleTreeDraw() { view.treeDraw = true; scheduleFrame(); }

// --- the conversation: a window of the path, grown in chunks as it is scrolled ---------
function fetchPath(at) {
  const query = at ? `?at=${encodeURIComponent(at)}` : "";
  return api(`/sessions/${encodeURIComponent(view.sid)}/path${query}`);
}

async function loadPath(at, target) {
  const wanted = at && at !== view.head ? at : null;
  const seq = ++view.pathSeq;
  const streamSeq = view.streamSeq;
  const path = await fetchPath(wanted);
  if (seq !== view.pathSeq) return;  // another path (or session) was asked for meanwhile
  applyPath(path, wanted, target);
  // The stream moved HEAD while the path was read, and the path may have been
  // read before that: what settled meanwhile was not drawn (it did not extend
  // the path shown then), so ask again.
  if (view.streamSeq !== streamSeq && view.streamHead && path.head !== view.streamHead) {
    view.head = view.streamHead;
    scheduleRedraw();
  }
}

// loadPath for a click or a key: a failure is said in the status line.
function showPath(at) {
  loadPath(at).catch((err) => status(`error: ${err.message}`));
}

function applyPath(path, at, target) {
  view.pathSeq += 1;
  view.at = at;
  view.head = path.head;
  view.totals = path.totals;
  path.events.forEach(remember);
  renderTotals();
  renderConversation(path.events, target || at);
  // The last event drawn in the live conversation: a settled event whose
  // parent it is extends it. (Not HEAD: events that settle together all
  // carry the HEAD after the last of them.)
  view.shown = view.at ? null : (path.events.length ? path.events[path.events.length - 1].id : NIL);
  $("path-title").textContent = view.at ? "Path to the selected event" : "Active path (HEAD)";
  const note = $("viewing-note");
  note.hidden = !view.at;
  note.textContent = view.at ? `Viewing the path to ${shortId(view.at)}, not HEAD. Press h for HEAD.` : "";
  if (target) view.treeCursor = target;
  renderTree();
  if (target || at) scrollTreeTo(target || at, "center");
  if (target) revealEvent(target);
}

function renderTotals() {
  const t = view.totals || { input_tokens: 0, output_tokens: 0, cost_usd: 0 };
  $("tokens").textContent = `${t.input_tokens.toLocaleString()} / ${t.output_tokens.toLocaleString()}`;
  $("cost").textContent = `$${t.cost_usd.toFixed(4)}`;
}

function addUsage(record) {
  const usage = record && record.usage;
  if (!usage || !view.totals) return;
  // As the server counts them (its totals): numbers only, anything else is 0.
  const tokens = (value) => (Number.isInteger(value) ? value : 0);
  view.totals.input_tokens += tokens(usage.input_tokens);
  view.totals.output_tokens += tokens(usage.output_tokens);
  view.totals.cost_usd += typeof usage.cost_usd === "number" && Number.isFinite(usage.cost_usd) ? usage.cost_usd : 0;
  renderTotals();
}

function renderConversation(events, focus) {
  const out = $("conversation");
  if (view.observer) view.observer.disconnect();
  view.pending = [];
  view.path = events.slice();
  view.pathIndex = new Map(events.map((e, i) => [e.id, i]));
  // History a compaction summarized stays readable: the events before its
  // first kept event are shown in a collapsible section above it.
  const firstKept = firstKeptIndex(events);
  view.firstKept = firstKept;
  const top = el("li", { class: "sentinel", "aria-hidden": "true" });
  const bottom = el("li", { class: "sentinel", "aria-hidden": "true" });
  view.preInner = null;
  view.preItem = null;
  const parts = [top];
  if (firstKept > 0) parts.push(preCompactionSection(firstKept));
  parts.push(bottom);
  out.replaceChildren(...parts);
  view.top = top;
  view.bottom = bottom;
  // The window drawn first: the end of the path, or the chunk around the event asked for.
  const n = events.length;
  const index = focus ? view.pathIndex.get(focus) : undefined;
  let start = Math.max(0, n - CHUNK);
  if (index !== undefined && index < start) start = Math.max(0, index - Math.floor(CHUNK / 2));
  const end = Math.min(n, start + CHUNK);
  view.win = { start, end: start };
  drawDown(end);
  view.win.start = start;
  // A long path opens at its end (the newest events), unless an event was asked for.
  if (start > 0 && index === undefined) {
    const last = view.bottom.previousElementSibling;
    if (last) last.scrollIntoView({ block: "end" });
  }
  view.observer = new IntersectionObserver(onSentinel, { rootMargin: "1200px 0px" });
  view.observer.observe(top);
  view.observer.observe(bottom);
}

// The index of the first event the latest compaction of `events` kept (0
// without a compaction): the events before it are the history it summarized.
function firstKeptIndex(events) {
  let lastCompaction = -1;
  events.forEach((e, i) => { if (e.kind === "compaction") lastCompaction = i; });
  if (lastCompaction < 0) return 0;
  const record = events[lastCompaction].record || {};
  const kept = events.findIndex((e) => e.id === record.first_kept_event_id);
  return kept >= 0 && kept < lastCompaction ? kept : lastCompaction;
}

function preCompactionTitle(firstKept) {
  return `History before compaction (${firstKept} events, summarized for the model)`;
}

function preCompactionSection(firstKept) {
  view.preInner = el("ol");
  view.preSummary = el("summary", { text: preCompactionTitle(firstKept) });
  view.preItem = el("li", {}, el("details", { class: "pre-compaction", open: true }, view.preSummary, view.preInner));
  return view.preItem;
}

// A compaction that arrived live: the events drawn before its first kept
// event move into the section above, as they are (an opened blob stays
// open), and the event read at the top of the screen stays where it was.
function foldBefore(firstKept) {
  const drawn = Array.from($("conversation").children).filter((node) => node.dataset.id);
  const anchor = drawn.find((node) => node.getBoundingClientRect().bottom > 0);
  const before = anchor ? anchor.getBoundingClientRect().top : 0;
  if (!view.preItem) view.top.after(preCompactionSection(firstKept));
  for (const node of drawn) {
    const index = view.pathIndex.get(node.dataset.id);
    if (index !== undefined && index < firstKept) view.preInner.append(node);
  }
  view.firstKept = firstKept;
  view.preSummary.textContent = preCompactionTitle(firstKept);
  if (anchor) window.scrollBy(0, anchor.getBoundingClientRect().top - before);
}

function placeBelow(index, node) {
  // The event at `index` goes after everything drawn before it.
  if (index < view.firstKept) view.preInner.append(node);
  else view.bottom.before(node);
}

function drawDown(end) {
  const fragment = [];
  for (let i = view.win.end; i < end; i++) fragment.push([i, renderEvent(view.path[i])]);
  for (const [i, node] of fragment) placeBelow(i, node);
  view.win.end = Math.max(view.win.end, end);
}

function drawUp(start) {
  // Drawn above what is on screen: keep what is on screen where it is.
  const first = $("conversation").querySelector("li[data-id]");
  const before = first ? first.getBoundingClientRect().top : 0;
  for (let i = view.win.start - 1; i >= start; i--) {
    const node = renderEvent(view.path[i]);
    if (i < view.firstKept) view.preInner.prepend(node);
    else (view.preItem || view.top).after(node);
  }
  view.win.start = start;
  if (first) {
    const shift = first.getBoundingClientRect().top - before;
    if (shift) window.scrollBy(0, shift);
  }
}

function onSentinel(records) {
  let grew = false;
  for (const record of records) {
    if (!record.isIntersecting) continue;
    if (record.target === view.top && view.win.start > 0) {
      drawUp(Math.max(0, view.win.start - CHUNK));
      grew = true;
    } else if (record.target === view.bottom && view.win.end < view.path.length) {
      drawDown(Math.min(view.path.length, view.win.end + CHUNK));
      grew = true;
    }
  }
  if (grew) {
    // Observed afresh: a sentinel still in reach reports again, and the next chunk is drawn.
    for (const s of [view.top, view.bottom]) { view.observer.unobserve(s); view.observer.observe(s); }
  }
}

// Draw (if need be) and show the event asked for, marked.
function revealEvent(id) {
  const index = view.pathIndex.get(id);
  if (index === undefined) return;
  if (index < view.win.start || index >= view.win.end) renderConversation(view.path, id);
  for (const old of $("conversation").querySelectorAll("li.target")) old.classList.remove("target");
  const node = $("conversation").querySelector(`li[data-id="${CSS.escape(id)}"]`);
  if (!node) return;
  node.classList.add("target");
  const details = node.closest("details");
  if (details) details.open = true;
  node.scrollIntoView({ block: "center" });
}

// A settled event that extends the path shown: drawn in the next frame,
// together with every other event of that frame.
function appendToPath(e) {
  view.path.push(e);
  view.pathIndex.set(e.id, view.path.length - 1);
  if (e.kind === "compaction") {
    // The history it summarized folds into the section above it, as a
    // reload draws it (a boundary earlier than the one drawn: drawn again).
    const firstKept = firstKeptIndex(view.path);
    if (firstKept < view.firstKept) {
      renderConversation(view.path);
      return;
    }
    if (firstKept > view.firstKept) foldBefore(firstKept);
  }
  // Drawn only if the window reaches the end of the path (with what waits for this frame).
  if (view.win.end + view.pending.length === view.path.length - 1) {
    view.pending.push(e);
    scheduleFrame();
  }
}

function flushConversation() {
  if (!view.pending.length) return;
  const pending = view.pending;
  view.pending = [];
  const atBottom = window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 200;
  let last = null;
  for (const e of pending) {
    const index = view.pathIndex.get(e.id);
    if (index !== view.win.end) continue;  // redrawn meanwhile
    last = renderEvent(e, true);
    placeBelow(index, last);
    view.win.end += 1;
  }
  if (last && atBottom) last.scrollIntoView({ block: "end" });
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
    const parts = [el("div", { class: "body", text: answerText(r.content) })];
    const reasoning = reasoningText(r);
    if (reasoning) parts.unshift(el("details", {}, el("summary", { text: "reasoning" }), el("div", { class: "body dim", text: reasoning })));
    if (r.usage) {
      const u = r.usage;
      // Numbers only, as the totals count them: a string or an object in a
      // usage was drawn as "$NaN" or "[object Object] in".
      const count = (value) => (Number.isInteger(value) ? value : 0);
      const cost = typeof u.cost_usd === "number" && Number.isFinite(u.cost_usd) && u.cost_usd ? ` · $${u.cost_usd.toFixed(4)}` : "";
      const model = typeof r.model === "string" && r.model ? ` · ${r.model}` : "";
      parts.push(el("div", { class: "usage", text: `${count(u.input_tokens)} in · ${count(u.output_tokens)} out${cost}${model}` }));
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
    return el("div", { class: "body", text: contentText(r.summary) });
  }
  if (e.kind === "label" && r) return el("div", { text: `label “${contentText(r.name)}” on ${shortId(r.target)}` });
  return el("details", {}, el("summary", { text: e.kind }), el("pre", { text: JSON.stringify(r, null, 2) }));
}

// A record is whatever its writer stored: one that the drawing above does not
// expect is shown as its JSON, never allowed to stop the events after it.
function safeBody(e) {
  try {
    return e.blob && e.record === null ? blobLoader(e) : recordBody(e);
  } catch (err) {
    let raw;
    try { raw = JSON.stringify(e.record, null, 2); } catch (inner) { raw = String(e.record); }
    return el("details", {}, el("summary", { text: `${e.kind} (drawn as JSON: ${err.message})` }), el("pre", { text: raw }));
  }
}

function renderEvent(e, fresh) {
  const classes = ["ev", `kind-${e.kind}`, e.role ? `role-${e.role}` : "", fresh ? "fresh" : "",
    e.record && e.record.is_error ? "is-error" : ""].join(" ");
  const who = e.kind === "message" ? e.role : e.kind === "compaction" ? "compaction" :
    e.kind === "branch_summary" ? "branch summary" : e.kind.replace("_", " ");
  return el("li", { class: classes, "data-id": e.id, "data-kind": e.kind },
    el("header", {}, el("span", { class: "who", text: who }), el("span", { class: "mono", text: shortId(e.id) }),
      el("time", { datetime: e.timestamp, text: localTime(e.timestamp) })),
    safeBody(e));
}

// --- the live stream -------------------------------------------------------------------
function stopStream() {
  if (view.source) view.source.close();
  view.source = null;
}

function startStream() {
  stopStream();
  // Always from a place in the log, the start (NIL) for a session that was
  // empty when its tree was read: without one, the stream starts when the
  // server subscribes, and an event that landed in between was never shown.
  const after = view.lastId || NIL;
  const source = new EventSource(`${API}/sessions/${encodeURIComponent(view.sid)}/stream?after=${after}`);
  view.source = source;
  const live = $("live-state");
  source.addEventListener("open", () => { live.textContent = "on"; live.className = "on"; });
  source.addEventListener("error", () => {
    // CLOSED: the browser gave up (the session was deleted: a 404); else it retries.
    live.textContent = source.readyState === EventSource.CLOSED ? "off" : "reconnecting";
    live.className = "off";
  });
  source.addEventListener("ready", (msg) => {
    const head = JSON.parse(msg.data).head;
    if (head && head !== view.head) { view.head = view.streamHead = head; view.streamSeq += 1; showPath(view.at); }
  });
  source.addEventListener("settled", (msg) => onSettled(JSON.parse(msg.data)));
  source.addEventListener("head", (msg) => {
    view.head = view.streamHead = JSON.parse(msg.data).head;
    view.streamSeq += 1;
    showPath(view.at);
  });
  source.addEventListener("delta", (msg) => onDelta(JSON.parse(msg.data).item));
  source.addEventListener("dropped", () => { live.textContent = "catching up"; live.className = "off"; });
  source.addEventListener("problem", (msg) => status(`stream: ${JSON.parse(msg.data).message}`));
}

function onSettled(e) {
  view.streamSeq += 1;
  view.streamHead = e.head;
  // What streamed settled (or another writer's event came between): the
  // preview goes, whichever path is shown, so it never outlives its reply.
  clearDelta();
  const followsShown = !view.at && view.shown && e.parent_id === view.shown;
  // An event a tree reload read before the stream brought it is in the tree
  // already; it is still drawn when it extends the path shown.
  const known = view.entries.has(e.id);
  if (known && !followsShown) return;
  if (!known) {
    addEntry({ id: e.id, parent_id: e.parent_id, branch_from: e.branch_from, kind: e.kind, role: e.role,
      timestamp: e.timestamp, blob: e.blob });
    view.lastId = e.id;
    if (e.kind === "label" || e.kind === "compaction" || e.kind === "branch_summary") {
      scheduleTreeReload();
    }
  }
  remember(e);
  view.head = e.head;
  if (followsShown) {
    view.shown = e.id;
    appendToPath(e);
    if (e.kind === "message" && e.role === "assistant") addUsage(e.record);
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

let treeReload = null;
function scheduleTreeReload() {
  if (treeReload) return;
  const sid = view.sid;
  treeReload = setTimeout(() => {
    treeReload = null;
    if (view.sid === sid) loadTree(true).catch((err) => status(`error: ${err.message}`));
  }, 200);
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
function moveTreeCursor(step) {
  if (!view.rows.length) return;
  let index = view.rowIndex.get(view.treeCursor);
  if (index === undefined) index = view.rowIndex.get(view.at || view.head);
  if (index === undefined) index = step > 0 ? -1 : view.rows.length;
  index = Math.max(0, Math.min(view.rows.length - 1, index + step));
  view.treeCursor = view.rows[index].id;
  scrollTreeTo(view.treeCursor, "nearest");
}

function toggleAllTools() {
  const boxes = Array.from(document.querySelectorAll("#conversation details.tool"));
  const open = !boxes.every((d) => d.open);
  for (const d of boxes) d.open = open;
}

document.addEventListener("keydown", (event) => {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (typing) {
    if (event.key === "Escape") {
      // Leave the box, the query kept (j/k then walk what it found); a
      // second Escape clears it. (Not the browser's own clearing.)
      event.preventDefault();
      document.activeElement.blur();
    }
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const onList = !$("list-view").hidden;
  const key = event.key;
  let handled = true;
  if (key === "?") $("help").hidden = !$("help").hidden;
  else if (key === "Escape" && !$("help").hidden) $("help").hidden = true; // closes help first, wherever it is
  else if (onList && key === "/") $("search").focus();
  else if (onList && key === "Escape") clearSearch();
  else if (onList && (key === "j" || key === "ArrowDown")) moveListCursor(1);
  else if (onList && (key === "k" || key === "ArrowUp")) moveListCursor(-1);
  else if (!onList && (key === "u" || key === "Escape")) location.hash = "#/";
  else if (!onList && key === "t") $("tree").focus();
  else if (!onList && key === "c") $("conversation").focus();
  else if (!onList && key === "e") toggleAllTools();
  else if (!onList && key === "h") showPath(null);
  else if (!onList && document.activeElement === $("tree") && (key === "j" || key === "ArrowDown")) moveTreeCursor(1);
  else if (!onList && document.activeElement === $("tree") && (key === "k" || key === "ArrowUp")) moveTreeCursor(-1);
  else if (!onList && document.activeElement === $("tree") && key === "Enter" && view.treeCursor) showPath(view.treeCursor);
  else handled = false;
  if (handled) event.preventDefault();
});

// --- routing ---------------------------------------------------------------------------
function decoded(text) {
  // A mistyped address (a stray "%") is not a reason to throw: the server
  // names what is wrong with the id instead.
  try { return decodeURIComponent(text); } catch (err) { return text; }
}

function route() {
  const match = location.hash.match(/^#\/s\/(.+)$/);
  if (!match) { showList(); return; }
  // #/s/<session> or #/s/<session>/e/<event> (a search hit); ids are encoded, so "/" splits.
  const hit = match[1].match(/^([^/]+)\/e\/([^/]+)$/);
  if (hit) showSession(decoded(hit[1]), decoded(hit[2]));
  else showSession(decoded(match[1]));
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", () => {
  $("help-button").addEventListener("click", () => { $("help").hidden = !$("help").hidden; });
  $("more").addEventListener("click", loadMore);
  $("show-archived").addEventListener("change", showList);
  $("search").addEventListener("input", onSearchInput);
  $("tree-pane").addEventListener("scroll", scheduleTreeDraw, { passive: true });
  window.addEventListener("resize", scheduleTreeDraw);
  route();
});
