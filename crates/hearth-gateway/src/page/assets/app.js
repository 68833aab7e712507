// hearth's page: sign in once, chat over /ws/chat, answer the tool calls
// that ask, reopen past conversations, and see the state of the box.
// Everything shown is set as text (never as HTML), and the CSRF token
// lives only in this module's memory.

const $ = (id) => document.getElementById(id);
const state = { csrf: "", chat: "", socket: null, reply: null, busy: false };

async function api(path, options = {}) {
  const headers = { "X-Hearth-CSRF": state.csrf };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method: options.method || "GET",
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    credentials: "same-origin",
  });
  const data = await response.json().catch(() => ({}));
  if (response.status === 401) signedOut("Your sign-in has ended; enter the token again.");
  if (!response.ok) throw new Error(data.error || `the gateway answered ${response.status}`);
  return data;
}

function item(kind, text) {
  const li = document.createElement("li");
  li.className = kind;
  li.textContent = text;
  $("messages").append(li);
  li.scrollIntoView({ block: "end" });
  return li;
}

function setBusy(busy) {
  state.busy = busy;
  $("stop").hidden = !busy;
  $("send").disabled = busy;
}

function signedOut(why) {
  state.csrf = "";
  if (state.socket) state.socket.close();
  state.socket = null;
  $("app").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = why || "";
  $("token").focus();
}

async function signedIn(csrf) {
  state.csrf = csrf;
  $("signin").hidden = true;
  $("app").hidden = false;
  loadQuestions();
  // A fresh conversation of the page's own: the most recent one may be a
  // script's (a chat of /v1/message), which is not the person's to continue.
  await refreshList();
  newChat();
}

/// A conversation's date as people tell them apart: the time today, the
/// weekday this week, the day and month before.
function dated(seconds) {
  const at = new Date(seconds * 1000);
  const now = new Date();
  const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (at.toDateString() === now.toDateString()) return `today ${time}`;
  if (now - at < 6 * 86400000) return `${at.toLocaleDateString([], { weekday: "short" })} ${time}`;
  const day = { day: "numeric", month: "short" };
  if (at.getFullYear() !== now.getFullYear()) day.year = "numeric";
  return at.toLocaleDateString([], day);
}

/// The page's own conversations are named `web-…`; the others are scripts'
/// and apps' (a chat of /v1/message or /ws/chat), listed apart by name.
const ownChat = (chat) => chat.startsWith("web-");

async function refreshList() {
  const list = await api("/ui/api/conversations");
  const own = $("conversations");
  const other = $("other-conversations");
  own.replaceChildren();
  other.replaceChildren();
  for (const c of list) {
    const mine = ownChat(c.chat);
    const li = document.createElement("li");
    const title = c.title || "(no words yet)";
    li.append(el("span", mine ? title : `${c.chat}: ${title}`, "title"),
      el("span", `${dated(c.updated)} · ${c.messages} messages`, "when"));
    li.title = `${c.chat} · ${c.messages} messages`;
    li.dataset.chat = c.chat;
    li.tabIndex = 0;
    li.setAttribute("role", "button");
    if (c.chat === state.chat) li.setAttribute("aria-current", "true");
    li.addEventListener("click", () => openChat(c.chat));
    li.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openChat(c.chat); } });
    (mine ? own : other).append(li);
  }
  $("other-heading").hidden = !other.children.length;
  return list;
}

function connect() {
  if (state.socket) state.socket.close();
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const url = `${scheme}://${location.host}/ws/chat?chat=${encodeURIComponent(state.chat)}`;
  const protocols = state.csrf ? ["hearth", `csrf.${state.csrf}`] : ["hearth"];
  const socket = new WebSocket(url, protocols);
  socket.addEventListener("message", (e) => heard(JSON.parse(e.data)));
  socket.addEventListener("close", (e) => {
    if (state.socket !== socket) return;
    state.socket = null;
    if (state.busy) { item("notice", `The connection closed${e.reason ? `: ${e.reason}` : ""}.`); setBusy(false); }
  });
  state.socket = socket;
  return new Promise((resolve, reject) => {
    socket.addEventListener("open", () => resolve(socket), { once: true });
    socket.addEventListener("error", () => reject(new Error("cannot open the chat connection")), { once: true });
  });
}

function heard(frame) {
  switch (frame.type) {
    case "chunk":
      if (!state.reply) state.reply = item("assistant", "");
      state.reply.textContent += frame.text;
      state.reply.scrollIntoView({ block: "end" });
      break;
    case "reasoning":
      item("notice", "Thinking…");
      break;
    case "tool":
      item("tool", `Running ${frame.name}…`);
      state.reply = null;
      break;
    case "approval":
      ask(frame);
      break;
    case "done":
      if (frame.stopped) item("notice", "Stopped.");
      else if (state.reply) state.reply.textContent = frame.text;
      else item("assistant", frame.text);
      state.reply = null;
      setBusy(false);
      refreshList().catch(() => {});
      break;
    case "error":
      item("notice", frame.error);
      break;
  }
}

function ask(question) {
  const li = item("approval", "");
  li.dataset.id = question.id;
  const title = document.createElement("strong");
  title.textContent = `Allow ${question.tool}?`;
  const args = document.createElement("pre");
  args.textContent = question.arguments;
  const answers = document.createElement("div");
  answers.className = "answers";
  for (const [answer, label] of [["once", "Allow once"], ["always", "Always allow"], ["deny", "Deny"]]) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.dataset.answer = answer;
    button.addEventListener("click", () => {
      send({ type: "approval", id: question.id, answer });
      for (const b of answers.querySelectorAll("button")) b.disabled = true;
      const said = document.createElement("p");
      said.textContent = `You answered: ${label}.`;
      li.append(said);
    });
    answers.append(button);
  }
  li.append(title, args, answers);
  answers.querySelector("button").focus();
}

async function send(frame) {
  if (!state.socket || state.socket.readyState !== WebSocket.OPEN) await connect();
  state.socket.send(JSON.stringify(frame));
}

// The files picked: pictures (shown to the model) and documents (read on the box).
function picked() {
  const files = [...$("pictures").files];
  const isPicture = (f) => f.type.startsWith("image/");
  return { pictures: files.filter(isPicture).slice(0, 4), documents: files.filter((f) => !isPicture(f)).slice(0, 4) };
}

async function say(text) {
  const { pictures, documents } = picked();
  const li = item("user", text);
  for (const file of pictures) {
    const img = document.createElement("img");
    img.className = "picture";
    img.alt = `picture: ${file.name}`;
    img.src = URL.createObjectURL(file);
    li.append(img);
  }
  for (const file of documents) li.append(el("p", `(document: ${file.name})`, "small document"));
  $("pictures").value = "";
  $("picked").replaceChildren();
  state.reply = null;
  setBusy(true);
  try {
    // Each picture as a binary frame, each document as one announced by a
    // `file` frame, then the message that takes them.
    if ((pictures.length || documents.length) && (!state.socket || state.socket.readyState !== WebSocket.OPEN)) await connect();
    for (const file of pictures) state.socket.send(await file.arrayBuffer());
    for (const file of documents) {
      state.socket.send(JSON.stringify({ type: "file", name: file.name }));
      state.socket.send(await file.arrayBuffer());
    }
    await send({ type: "message", text });
  } catch (e) { item("notice", e.message); setBusy(false); }
}

$("pictures").addEventListener("change", () => {
  const shown = $("picked");
  shown.replaceChildren();
  const { pictures, documents } = picked();
  for (const file of pictures) {
    const img = document.createElement("img");
    img.alt = `picture to send: ${file.name}`;
    img.src = URL.createObjectURL(file);
    shown.append(img);
  }
  for (const file of documents) shown.append(el("span", `document to send: ${file.name}`, "small document"));
});

async function openChat(chat) {
  showTab("chat");
  state.chat = chat;
  state.reply = null;
  setBusy(false);
  closeMenu();
  $("messages").replaceChildren();
  for (const li of document.querySelectorAll("#sidebar li")) li.toggleAttribute("aria-current", li.dataset.chat === chat);
  try {
    for (const m of await api(`/ui/api/conversations/${encodeURIComponent(chat)}`)) {
      const li = item(m.role === "tool" ? "tool" : m.role, m.text);
      if (m.pictures) li.append(el("p", `(${m.pictures} picture${m.pictures > 1 ? "s" : ""})`, "small"));
    }
    await connect();
  } catch (e) { item("notice", e.message); }
  $("input").focus();
}

function newChat() {
  showTab("chat");
  const stamp = new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14);
  const suffix = Math.random().toString(36).slice(2, 6);
  state.chat = `web-${stamp}-${suffix}`;
  state.reply = null;
  setBusy(false);
  closeMenu();
  $("messages").replaceChildren();
  item("notice", "A new conversation: what you write below starts it. Earlier ones are in the list (☰ on a phone).");
  for (const li of document.querySelectorAll("#sidebar li")) li.removeAttribute("aria-current");
  connect().catch((e) => item("notice", e.message));
  $("input").focus();
}

function closeMenu() {
  $("app").classList.remove("menu-open");
  $("menu").setAttribute("aria-expanded", "false");
}

function showTab(tab) {
  for (const name of ["chat", "questions", "box"]) {
    $(name).hidden = name !== tab;
    $(`tab-${name}`).setAttribute("aria-pressed", String(name === tab));
  }
  if (tab === "box") { loadBox(); loadMemories(); loadDocuments(); loadBrief(); }
  if (tab === "questions") loadQuestions();
}

async function loadQuestions() {
  if ($("app").hidden) return;
  let open;
  try { open = await api("/ui/api/questions"); } catch { return; }
  $("question-count").textContent = open.length ? String(open.length) : "";
  if ($("questions").hidden) return;
  const ul = $("question-list");
  const shown = [...ul.children].map((li) => li.dataset.id).join();
  if (shown === open.map((q) => q.id).join() && open.length) return;
  ul.replaceChildren();
  if (!open.length) ul.append(el("li", "Nothing is waiting for you."));
  for (const q of open) {
    const li = el("li", undefined, "question");
    li.dataset.id = q.id;
    const args = el("pre", q.arguments);
    const answers = el("div", undefined, "answers");
    for (const [answer, label] of [["once", "Allow once"], ["always", "Always allow"], ["deny", "Deny"]]) {
      answers.append(button(label, async () => {
        for (const b of answers.querySelectorAll("button")) b.disabled = true;
        try { await api(`/ui/api/questions/${encodeURIComponent(q.id)}`, { method: "POST", body: { answer } }); li.append(el("p", `You answered: ${label}.`)); }
        catch (e) { li.append(el("p", e.message, "error")); }
        setTimeout(loadQuestions, 800);
      }, { answer }));
    }
    li.append(el("strong", `Allow ${q.tool}?`),
      el("p", `Asked on ${q.channel} in chat ${q.chat} (by ${q.sender}); open until ${new Date(q.expires_at * 1000).toLocaleTimeString()}.`, "small"),
      args, answers);
    ul.append(li);
  }
}

setInterval(loadQuestions, 3000);

function el(tag, text, className) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (className) e.className = className;
  return e;
}

function button(label, onClick, data = {}) {
  const b = el("button", label);
  b.type = "button";
  Object.assign(b.dataset, data);
  b.addEventListener("click", onClick);
  return b;
}

const when = (secs) => (secs ? new Date(secs * 1000).toLocaleString() : "never");
const mib = (n) => (n === null || n === undefined ? "?" : n >= 1024 ? `${(n / 1024).toFixed(1)} GiB` : `${n} MiB`);

function facts(id, pairs) {
  const dl = $(id);
  dl.replaceChildren();
  for (const [name, value] of pairs) {
    if (value === undefined || value === null || value === "") continue;
    dl.append(el("dt", name), el("dd", value));
  }
}

function chart(id, samples, unit) {
  const svg = $(id);
  svg.replaceChildren();
  const values = samples.map((s) => s.value);
  $(`${id}-last`).textContent = values.length
    ? `last ${values[values.length - 1].toFixed(2)} ${unit}, ${values.length} replies, highest ${Math.max(...values).toFixed(2)}`
    : "no reply yet";
  if (!values.length) return;
  if (values.length === 1) values.push(values[0]);
  const top = Math.max(...values) || 1;
  const points = values.map((v, i) => `${(i * 300) / (values.length - 1)},${58 - (v / top) * 54}`).join(" ");
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", points);
  svg.append(line);
}

function renderEngine(box) {
  const m = box.model;
  const b = box.backend || {};
  facts("box-engine", [
    ["Model", m ? m.file : `${box.model_file} (not loaded yet)`],
    ["Architecture", m && `${m.architecture}, ${(m.params / 1e6).toFixed(0)} M parameters`],
    ["Context", m && `${m.context} tokens per conversation, ${m.slots} at once`],
    ["Layers on a GPU", m && `${m.gpu_layers} of ${m.layers + 1}`],
    ["Backends", (b.names || []).join(", ") + (b.cpu ? ` (CPU code: ${b.cpu})` : "")],
    ["Devices", (b.devices || []).map((d) => `${d.description || d.name}`).join("; ")],
    ["Threads", m && m.threads],
    ["Drafting", m && m.drafting],
    ["Replies in progress", box.in_flight],
    ["Running since", when(box.started)],
  ]);
  const r = box.memory || {};
  const gpus = (r.gpus || []).map((g) => [`VRAM ${g.name}`, `${mib(g.total_mib - g.free_mib)} used of ${mib(g.total_mib)}`]);
  facts("box-ram", [
    ["hearth uses", mib(r.process_mib)],
    ["RAM free", `${mib(r.available_mib)} of ${mib(r.total_mib)}`],
    ...(gpus.length ? gpus : [["VRAM", "no GPU in use"]]),
  ]);
  chart("chart-ttft", box.speed.first_token_secs, "s");
  chart("chart-decode", box.speed.decode_tokens_per_sec, "tokens/s");
}

/// A cached conversation as a person names it: `gateway_kitchen_kitchen`
/// is the chat "kitchen", the page's own `web-20261129121320-ab12` is "this
/// page" and when it began; other keys are shown as they are.
function kvName(key) {
  const m = key.match(/^([a-z]+)_(.+)_(.+)$/);
  if (!m || m[2] !== m[3]) return key.replaceAll("_", " ");
  const [, channel, chat] = m;
  const stamp = chat.match(/^web-(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})-/);
  if (channel === "gateway" && stamp) {
    const [, y, mo, d, h, mi, sec] = stamp.map(Number);
    return `this page, ${dated(Date.UTC(y, mo - 1, d, h, mi, sec) / 1000)}`;
  }
  return channel === "gateway" ? `chat ${chat}` : `${channel} ${chat}`;
}

function renderCache(box) {
  const tbody = $("box-cache").querySelector("tbody");
  tbody.replaceChildren();
  const tiers = { slot: "in the context", ram: "RAM", disk: "disk" };
  const size = (bytes) => (bytes === null ? "" : mib(Math.round((bytes / 1048576) * 10) / 10));
  // API clients' conversations (`api-…`, one per distinct prompt) are many
  // and nameless: one row says how many and what they hold.
  const api = box.cache.filter((c) => c.conversation.startsWith("api-"));
  for (const c of box.cache.filter((c) => !c.conversation.startsWith("api-"))) {
    const tr = el("tr");
    tr.title = c.conversation;
    tr.append(el("td", kvName(c.conversation), "name"), el("td", tiers[c.tier] || c.tier), el("td", c.tokens), el("td", size(c.bytes)));
    tbody.append(tr);
  }
  if (api.length) {
    const tr = el("tr");
    const tokens = api.reduce((n, c) => n + c.tokens, 0);
    const bytes = api.some((c) => c.bytes !== null) ? api.reduce((n, c) => n + (c.bytes || 0), 0) : null;
    const where = [...new Set(api.map((c) => tiers[c.tier] || c.tier))].join(", ");
    tr.append(el("td", `API clients (${api.length})`, "name"), el("td", where), el("td", tokens), el("td", size(bytes)));
    tbody.append(tr);
  }
  if (!box.cache.length) {
    const tr = el("tr");
    tr.append(el("td", "nothing cached yet"));
    tbody.append(tr);
  }
}

function renderChannels(box) {
  const ul = $("box-channels");
  ul.replaceChildren();
  for (const c of box.channels) {
    ul.append(el("li", `${c.name}: ${c.state}${c.last_error ? ` (last error: ${c.last_error})` : ""}`));
  }
  const q = box.queue || {};
  $("box-queue").textContent = `Waiting for the model: ${q.interactive ?? 0} replies, ${q.background ?? 0} background tasks.`;
}

function renderLms(box) {
  const ul = $("box-lms");
  const upcoming = $("box-upcoming");
  ul.replaceChildren();
  upcoming.replaceChildren();
  if (!box.lms) { ul.append(el("li", "No LMS source is configured ([lms] sources).")); return; }
  for (const s of box.lms.sources || []) {
    const li = el("li", undefined, "source");
    li.dataset.source = s.source;
    li.append(el("strong", s.source),
      el("p", `Last poll ${when(s.last_poll)}, next about ${when(s.next_poll)}; ${s.tracked} items tracked, ${s.waiting} notices waiting.`, "small"));
    if (s.last_error) li.append(el("p", s.last_error, "error"));
    for (const note of s.notes || []) li.append(el("p", note, "small"));
    ul.append(li);
  }
  for (const i of box.lms.upcoming || []) {
    upcoming.append(el("li", `${when(i.due)} · ${i.title}${i.course ? ` (${i.course})` : ""} · ${i.source}`));
  }
  if (!upcoming.children.length) upcoming.append(el("li", "nothing due"));
}

function renderJobs(box) {
  const ul = $("box-jobs");
  ul.replaceChildren();
  if (!Array.isArray(box.jobs)) { ul.append(el("li", box.jobs ? box.jobs.error : "The scheduler is off ([scheduler] enabled).")); return; }
  if (!box.jobs.length) ul.append(el("li", "No job is scheduled."));
  for (const j of box.jobs) {
    const li = el("li", undefined, j.paused ? "job paused" : "job");
    li.dataset.job = j.id;
    li.append(el("strong", `#${j.id}${j.name ? ` ${j.name}` : ""} · ${j.schedule}`),
      el("p", `${j.what} → ${j.to}`, "small"),
      el("p", j.paused ? "Paused." : `Next: ${when(j.next_run)}`, "small"));
    if (j.last_error) li.append(el("p", `Last run failed: ${j.last_error}`, "error"));
    const actions = el("div", undefined, "actions");
    const act = (action) => async () => {
      try { await api(`/ui/api/jobs/${j.id}/${action}`, { method: "POST", body: {} }); }
      catch (e) { $("box-error").textContent = e.message; }
      loadBox();
    };
    actions.append(j.paused ? button("Resume", act("resume"), { action: "resume" }) : button("Pause", act("pause"), { action: "pause" }),
      button("Delete", act("delete"), { action: "delete" }));
    li.append(actions);
    ul.append(li);
  }
}

function renderErrors(box) {
  const ul = $("box-errors");
  ul.replaceChildren();
  for (const e of box.errors || []) ul.append(el("li", `${when(e.at)} · ${e.level} · ${e.target}: ${e.text}`, e.level === "error" ? "error" : ""));
  if (!(box.errors || []).length) ul.append(el("li", "None since hearth started."));
}

async function loadMemories() {
  const ul = $("box-memories");
  try {
    const found = await api(`/ui/api/memory?q=${encodeURIComponent($("memory-q").value)}`);
    ul.replaceChildren();
    for (const m of found) {
      const li = el("li", undefined, "memory");
      li.append(el("p", m.content), el("p", `${m.scope} · ${m.category} · ${when(m.updated)}`, "small"));
      const actions = el("div", undefined, "actions");
      actions.append(button("Delete", async () => {
        try { await api("/ui/api/memory/forget", { method: "POST", body: { scope: m.scope, key: m.key } }); }
        catch (e) { $("box-error").textContent = e.message; }
        loadMemories();
      }, { action: "forget" }));
      li.append(actions);
      ul.append(li);
    }
    if (!found.length) ul.append(el("li", "Nothing found."));
  } catch (e) { ul.replaceChildren(el("li", e.message, "error")); }
}

// The morning brief as it stands now (the daemon sends it at its hour).
async function loadBrief() {
  const pre = $("box-brief");
  try {
    const { brief } = await api("/ui/api/brief");
    pre.textContent = brief || "Nothing to tell today (or no brief on this box: it needs LMS sources).";
  } catch (e) { pre.textContent = e.message; }
}

async function loadDocuments() {
  const ul = $("box-documents");
  try {
    const kept = await api("/ui/api/documents");
    ul.replaceChildren();
    for (const d of kept) {
      const li = el("li", undefined, "kept-document");
      const pages = `${d.pages} page${d.pages === 1 ? "" : "s"}`;
      li.append(el("p", d.name), el("p", `${d.scope} · ${d.kind}, ${pages} · ${d.source} · ${when(d.added)}`, "small"));
      const actions = el("div", undefined, "actions");
      actions.append(button("Delete", async () => {
        try { await api("/ui/api/documents/forget", { method: "POST", body: { scope: d.scope, id: d.id } }); }
        catch (e) { $("box-error").textContent = e.message; }
        loadDocuments();
      }, { action: "forget-document" }));
      li.append(actions);
      ul.append(li);
    }
    if (!kept.length) ul.append(el("li", "No documents yet: send one in a chat."));
  } catch (e) { ul.replaceChildren(el("li", e.message, "error")); }
}

let boxAsked = 0;

async function loadBox() {
  // Only the latest answer is shown: an older one may arrive after a change.
  const asked = ++boxAsked;
  try {
    const box = await api("/ui/api/box");
    if (asked !== boxAsked) return;
    $("box-error").textContent = "";
    renderEngine(box);
    renderCache(box);
    renderChannels(box);
    renderLms(box);
    renderJobs(box);
    renderErrors(box);
  } catch (e) { $("box-error").textContent = e.message; }
}

setInterval(() => { if (!$("box").hidden && state.csrf !== undefined && !$("app").hidden) loadBox(); }, 5000);

$("memory-search").addEventListener("submit", (e) => { e.preventDefault(); loadMemories(); });

$("signin-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const token = $("token").value;
  $("signin-error").textContent = "";
  try {
    const response = await fetch("/ui/login", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token }), credentials: "same-origin",
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || `the gateway answered ${response.status}`);
    $("token").value = "";
    await signedIn(data.csrf);
  } catch (err) { $("signin-error").textContent = err.message; }
});

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("input").value.trim();
  if ((!text && !$("pictures").files.length) || state.busy) return;
  $("input").value = "";
  say(text);
});
$("input").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); }
});
$("stop").addEventListener("click", () => send({ type: "stop" }).catch(() => {}));
$("new-chat").addEventListener("click", newChat);
$("menu").addEventListener("click", () => {
  const open = $("app").classList.toggle("menu-open");
  $("menu").setAttribute("aria-expanded", String(open));
});
$("tab-chat").addEventListener("click", () => showTab("chat"));
$("tab-questions").addEventListener("click", () => showTab("questions"));
$("tab-box").addEventListener("click", () => showTab("box"));
$("signout").addEventListener("click", async () => {
  try { await api("/ui/logout", { method: "POST", body: {} }); } catch { /* signed out either way */ }
  signedOut("");
});

(async () => {
  const response = await fetch("/ui/session", { credentials: "same-origin" });
  const data = await response.json().catch(() => ({}));
  if (response.ok && data.signed_in) await signedIn(data.csrf);
  else signedOut("");
})();
