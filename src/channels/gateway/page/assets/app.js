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
  const list = await refreshList();
  if (list.length) await openChat(list[0].chat);
  else newChat();
}

async function refreshList() {
  const list = await api("/ui/api/conversations");
  const ul = $("conversations");
  ul.replaceChildren();
  for (const c of list) {
    const li = document.createElement("li");
    li.textContent = c.title || c.chat;
    li.title = `${c.chat} · ${c.messages} messages`;
    li.dataset.chat = c.chat;
    li.tabIndex = 0;
    li.setAttribute("role", "button");
    if (c.chat === state.chat) li.setAttribute("aria-current", "true");
    li.addEventListener("click", () => openChat(c.chat));
    li.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openChat(c.chat); } });
    ul.append(li);
  }
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

async function say(text) {
  item("user", text);
  state.reply = null;
  setBusy(true);
  try { await send({ type: "message", text }); }
  catch (e) { item("notice", e.message); setBusy(false); }
}

async function openChat(chat) {
  state.chat = chat;
  state.reply = null;
  setBusy(false);
  closeMenu();
  $("messages").replaceChildren();
  for (const li of $("conversations").children) li.toggleAttribute("aria-current", li.dataset.chat === chat);
  try {
    for (const m of await api(`/ui/api/conversations/${encodeURIComponent(chat)}`)) {
      item(m.role === "tool" ? "tool" : m.role, m.text);
    }
    await connect();
  } catch (e) { item("notice", e.message); }
  $("input").focus();
}

function newChat() {
  const stamp = new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14);
  const suffix = Math.random().toString(36).slice(2, 6);
  state.chat = `web-${stamp}-${suffix}`;
  state.reply = null;
  setBusy(false);
  closeMenu();
  $("messages").replaceChildren();
  for (const li of $("conversations").children) li.removeAttribute("aria-current");
  connect().catch((e) => item("notice", e.message));
  $("input").focus();
}

function closeMenu() {
  $("app").classList.remove("menu-open");
  $("menu").setAttribute("aria-expanded", "false");
}

function showTab(box) {
  $("chat").hidden = box;
  $("box").hidden = !box;
  $("tab-chat").setAttribute("aria-pressed", String(!box));
  $("tab-box").setAttribute("aria-pressed", String(box));
  if (box) loadBox();
}

async function loadBox() {
  $("box-error").textContent = "";
  try {
    const box = await api("/ui/api/box");
    const facts = [["Model", box.model], ["Replies in progress", box.in_flight],
      ["Running since", box.started ? new Date(box.started * 1000).toLocaleString() : ""]];
    const dl = $("box-facts");
    dl.replaceChildren();
    for (const [name, value] of facts) {
      const dt = document.createElement("dt");
      dt.textContent = name;
      const dd = document.createElement("dd");
      dd.textContent = String(value ?? "");
      dl.append(dt, dd);
    }
    const ul = $("box-channels");
    ul.replaceChildren();
    for (const c of box.channels || []) {
      const li = document.createElement("li");
      li.textContent = `${c.name}: ${c.state}${c.last_error ? ` (last error: ${c.last_error})` : ""}`;
      ul.append(li);
    }
  } catch (e) { $("box-error").textContent = e.message; }
}

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
  if (!text || state.busy) return;
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
$("tab-chat").addEventListener("click", () => showTab(false));
$("tab-box").addEventListener("click", () => showTab(true));
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
