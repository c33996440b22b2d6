// The chat page client: one websocket, the protocol of docs/protocol.md, text-only rendering.
const app = document.getElementById("app");
const transcript = document.getElementById("transcript");
const statusEl = document.getElementById("status");
const notice = document.getElementById("notice");
const form = document.getElementById("composer");
const textBox = document.getElementById("text");
const stopButton = document.getElementById("stop");
const sessionsList = document.getElementById("sessions");
const maxChars = Number(app.dataset.maxChars || 32000);

let socket = null;
let retryDelay = 500;
let sessionId = location.hash.slice(1) || localStorage.getItem("lastSession") || null;
let activeRunId = null;
const pending = new Map(); // message_id -> text the user sent, kept until acknowledged
const bubbles = new Map(); // message_id -> {el, body, text}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}${app.dataset.wsPath}`);
  socket.addEventListener("open", () => {
    retryDelay = 500;
    setStatus("connected");
    if (sessionId) send({ type: "session.join", session_id: sessionId });
    for (const [messageId, item] of pending) send(item.frame); // resend: ids make it idempotent
  });
  socket.addEventListener("message", (e) => handle(JSON.parse(e.data)));
  socket.addEventListener("close", (e) => {
    if (e.code === 4401) { location.href = "/accounts/login/?next=/"; return; }
    setStatus(`reconnecting in ${Math.round(retryDelay / 100) / 10}s…`);
    setTimeout(connect, retryDelay);
    retryDelay = Math.min(retryDelay * 2, 10000);
  });
}

function send(frame) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
}

function setStatus(text) { statusEl.textContent = text; }
function showNotice(text) { notice.textContent = text; }

const handlers = {
  "session.snapshot": (ev) => {
    transcript.replaceChildren();
    bubbles.clear();
    for (const m of ev.data.messages) renderStored(m);
    setActiveRun(ev.data.active_run_id);
  },
  "message.created": (ev) => {
    const item = pending.get(ev.message_id);
    if (item) { pending.delete(ev.message_id); if (textBox.value === item.text) textBox.value = ""; }
    renderStored(ev.data);
    setActiveRun(ev.run_id);
    addSessionLink(ev.session_id, ev.data.content);
  },
  "message.started": (ev) => labelModel(bubble(ev.message_id, "agent", ev.agent), ev.data.model),
  "message.delta": (ev) => {
    const b = bubble(ev.message_id, "agent", ev.agent);
    const { text, offset } = ev.data;
    if (offset + text.length <= b.text.length) return; // already have it (snapshot + replay)
    b.text = b.text.slice(0, offset) + text;
    b.body.textContent = b.text;
    scrollDown();
  },
  "message.completed": (ev) => {
    const b = bubble(ev.message_id, "agent", ev.agent);
    b.text = ev.data.text;
    b.body.textContent = b.text;
    b.el.dataset.status = ev.data.status;
    scrollDown();
  },
  "tool.called": (ev) => renderTool(ev.message_id, ev.agent, { name: ev.data.name, arguments: ev.data.arguments }),
  "tool.result": (ev) => renderTool(ev.message_id, ev.agent, ev.data),
  "run.completed": (ev) => { if (ev.run_id === activeRunId) setActiveRun(null); },
  "error": (ev) => {
    showNotice(ev.data.message);
    if (ev.data.message_id && pending.has(ev.data.message_id)) pending.delete(ev.data.message_id);
  },
};

function handle(ev) {
  if (ev.session_id && sessionId && ev.session_id !== sessionId && ev.type !== "error") return;
  const handler = handlers[ev.type];
  if (handler) handler(ev); else console.debug("ignored event", ev.type);
}

function label(agent) {
  return agent ? agent.display_name + (agent.kind === "sub" ? " (expert)" : "") : "You";
}

function labelModel(b, model) {
  if (model === "offline" && !b.el.dataset.model) {
    b.el.dataset.model = model;
    b.el.querySelector("header").textContent += " · offline model";
  }
  return b;
}

function bubble(id, role, agent) {
  let b = bubbles.get(id);
  if (b) return b;
  const el = document.createElement("article");
  el.className = `msg ${role}`;
  el.dataset.messageId = id;
  el.dataset.depth = agent ? agent.depth : 0;
  el.style.setProperty("--depth", agent ? agent.depth : 0);
  const head = document.createElement("header");
  head.textContent = label(agent);
  const body = document.createElement("div");
  body.className = "body";
  el.append(head, body);
  transcript.append(el);
  b = { el, body, text: "" };
  bubbles.set(id, b);
  return b;
}

function renderStored(m) {
  if (m.role === "tool") { renderTool(m.id, m.agent, m.tool || {}); return; }
  const b = labelModel(bubble(m.id, m.role, m.role === "user" ? null : m.agent), m.model);
  b.text = m.content;
  b.body.textContent = m.content;
  b.el.dataset.status = m.status;
  scrollDown();
}

function renderTool(id, agent, tool) {
  const b = bubble(id, "tool", agent);
  const args = typeof tool.arguments === "string" ? tool.arguments : JSON.stringify(tool.arguments ?? {});
  const details = document.createElement("details");
  const summary = document.createElement("summary");
  const state = tool.ok === undefined ? "running…" : tool.ok ? "done" : "error";
  summary.textContent = `tool ${tool.name}(${args.length > 80 ? args.slice(0, 80) + "…" : args}) · ${state}`;
  const pre = document.createElement("pre");
  const result = tool.ok === undefined ? "" : JSON.stringify(tool.ok ? tool.result : tool.error, null, 2);
  pre.textContent = `arguments: ${args}\n${result ? "result: " + result : ""}`;
  details.append(summary, pre);
  b.body.replaceChildren(details);
  b.el.dataset.status = state;
  scrollDown();
}

function setActiveRun(runId) {
  activeRunId = runId || null;
  stopButton.hidden = !activeRunId;
}

function addSessionLink(id, title) {
  if (sessionsList.querySelector(`[data-session-id="${id}"]`)) return;
  const li = document.createElement("li");
  const a = document.createElement("a");
  a.href = `#${id}`;
  a.dataset.sessionId = id;
  a.textContent = (title || "Untitled chat").split("\n")[0].slice(0, 80);
  li.append(a);
  sessionsList.prepend(li);
}

function openSession(id) {
  sessionId = id;
  if (id) { localStorage.setItem("lastSession", id); history.replaceState(null, "", `#${id}`); }
  transcript.replaceChildren();
  bubbles.clear();
  setActiveRun(null);
  showNotice("");
  if (id) send({ type: "session.join", session_id: id });
}

function scrollDown() { transcript.scrollTop = transcript.scrollHeight; }

form.addEventListener("submit", (e) => {
  e.preventDefault();
  const text = textBox.value.trim();
  if (!text) return;
  if (text.length > maxChars) { showNotice(`Messages are limited to ${maxChars} characters.`); return; }
  if (!sessionId) openSession(crypto.randomUUID());
  const messageId = crypto.randomUUID();
  const frame = {
    type: "message.send", session_id: sessionId, message_id: messageId, text,
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  };
  pending.set(messageId, { frame, text });
  showNotice("");
  send(frame);
});

textBox.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
});
stopButton.addEventListener("click", () => { if (activeRunId) send({ type: "run.cancel", run_id: activeRunId }); });
document.getElementById("new-chat").addEventListener("click", () => {
  localStorage.removeItem("lastSession");
  history.replaceState(null, "", location.pathname);
  openSession(null);
  textBox.focus();
});
sessionsList.addEventListener("click", (e) => {
  const a = e.target.closest("a[data-session-id]");
  if (!a) return;
  e.preventDefault();
  openSession(a.dataset.sessionId);
});

connect();
