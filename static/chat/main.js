// The chat page: wires the socket (docs/protocol.md), the transcript, the sidebar and the
// composer together. Everything shown comes from events; the saved snapshot is the truth.

import { PassageDialog } from "./citations.js";
import { MemoryPanel } from "./memory.js";
import { Transcript } from "./render.js";
import { Sidebar } from "./sessions.js";
import { ChatSocket } from "./socket.js";
import {
  announcer,
  confirmDelete,
  forget,
  setupDrawer,
  setupExpertToggle,
  setupThemeToggle,
  store,
  stored,
  toast,
} from "./ui.js";

const $ = (id) => document.getElementById(id);
const app = $("app");
const box = $("text");
const form = $("composer");
const sendButton = $("send");
const stopButton = $("stop");
const notice = $("notice");
const maxChars = Number(app.dataset.maxChars || 32000);
const announce = announcer($("announcer"));

const state = {
  sessionId: null,
  sessionKnown: false, // the server has it: join it on (re)connect
  activeRunId: null, // the turn running in the open session
  resyncTimer: null,
  stopRequested: null, // a run to stop once the socket is back
};

const passage = new PassageDialog($("passage"));
const memory = new MemoryPanel($("memory"), {
  sessionId: () => (state.sessionKnown ? state.sessionId : null),
  announce: (text) => announce(text),
});
const transcript = new Transcript($("transcript"), {
  announce,
  cite: (citation, answer, opener) => passage.open(citation, answer, opener),
  changed: () => {
    const empty = transcript.isEmpty() && !(state.sessionId && state.sessionKnown);
    $("empty").hidden = !empty;
    $("open-memory").hidden = !(state.sessionId && state.sessionKnown);
    app.classList.toggle("is-empty", empty);
  },
});

const drawer = setupDrawer(app, $("menu"), $("close-drawer"), $("backdrop"));
setupThemeToggle($("toggle-theme"));
setupExpertToggle($("toggle-experts"));

const sidebar = new Sidebar(
  {
    list: $("sessions"),
    search: $("session-search"),
    more: $("sessions-more"),
    empty: $("sessions-empty"),
  },
  {
    open: (id) => {
      openSession(id);
      drawer.close();
    },
    deleted: (id) => {
      if (id === state.sessionId) newChat();
      if (stored("lastSession") === id) forget("lastSession");
    },
    error: showNotice,
    confirm: (title) => confirmDelete($("confirm-delete"), title),
  }
);

const scheme = location.protocol === "https:" ? "wss" : "ws";
const socket = new ChatSocket(`${scheme}://${location.host}${app.dataset.wsPath}`, {
  onOpen: () => {
    if (state.sessionId && state.sessionKnown) join();
    if (state.stopRequested) socket.sendNow({ type: "run.cancel", run_id: state.stopRequested });
    state.stopRequested = null;
  },
  onEvent: handle,
  onStatus: (status, delay) => {
    const words = {
      connecting: "connecting…",
      connected: "connected",
      reconnecting: `reconnecting in ${Math.max(1, Math.round(delay / 1000))}s…`,
    };
    $("status").dataset.state = status;
    $("status").textContent = words[status];
  },
  onUnauthenticated: () => {
    const next = encodeURIComponent(location.pathname + location.hash);
    location.href = `/accounts/login/?next=${next}`;
  },
});

// ---- storage and ids ------------------------------------------------------------------

function uuid4() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16)); // plain-http pages lack randomUUID
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  const parts = [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20)];
  return `${parts.join("-")}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function titleOf(text) {
  const line = (text || "").trim().split("\n")[0] || "";
  return line.length > 80 ? `${line.slice(0, 77)}…` : line;
}

// ---- sessions -------------------------------------------------------------------------

function join() {
  socket.sendNow({ type: "session.join", session_id: state.sessionId });
}

function openSession(id) {
  if (id === state.sessionId && state.sessionKnown) return;
  state.sessionId = id;
  state.sessionKnown = true;
  store("lastSession", id);
  if (location.hash.slice(1) !== id) history.pushState(null, "", `#${id}`);
  transcript.clear();
  setActiveRun(null);
  showNotice("");
  sidebar.setActive(id);
  join();
}

function newChat() {
  state.sessionId = null;
  state.sessionKnown = false;
  forget("lastSession");
  if (location.hash) history.pushState(null, "", location.pathname);
  transcript.clear();
  setActiveRun(null);
  showNotice("");
  sidebar.setActive(null);
  document.title = app.dataset.title;
  box.focus();
}

function setActiveRun(runId) {
  state.activeRunId = runId || null;
  const running = Boolean(state.activeRunId);
  stopButton.hidden = !running;
  stopButton.disabled = false;
  stopButton.textContent = "Stop";
  sendButton.hidden = running;
  app.classList.toggle("turn-running", running);
}

function showNotice(text) {
  notice.textContent = text || "";
  notice.hidden = !text;
}

/** Deltas went missing (a dropped event): ask for the snapshot again. */
function resync() {
  clearTimeout(state.resyncTimer);
  state.resyncTimer = setTimeout(() => {
    if (state.sessionId && state.sessionKnown) join();
  }, 100);
}

// ---- events ---------------------------------------------------------------------------

const handlers = {
  "session.snapshot": (ev) => {
    transcript.loadSnapshot(ev.data.messages || [], ev.data.modes || {});
    for (const frame of socket.unacknowledged.values()) {
      if (frame.session_id === state.sessionId && !transcript.has(frame.message_id)) {
        transcript.pendingUser(frame.message_id, frame.text);
      }
    }
    setActiveRun(ev.data.active_run_id);
    const title = ev.data.session?.title;
    if (title) {
      sidebar.setTitle(state.sessionId, title);
      document.title = `${title} · ${app.dataset.title}`;
    }
  },
  "message.created": (ev) => {
    socket.settle(ev.message_id);
    transcript.stick(() => transcript.addStored(ev.data));
    state.sessionKnown = true;
    store("lastSession", state.sessionId);
    if (ev.data.duplicate) {
      join(); // a re-sent message the server already had: catch up on its turn
      return;
    }
    setActiveRun(ev.run_id);
    sidebar.touch(ev.session_id, titleOf(ev.data.content));
    sidebar.setActive(ev.session_id);
  },
  "message.started": (ev) => transcript.started(ev),
  "message.delta": (ev) => {
    if (!transcript.delta(ev)) resync();
  },
  "message.completed": (ev) => transcript.completed(ev),
  "tool.called": (ev) => transcript.toolEvent(ev),
  "tool.result": (ev) => transcript.toolEvent(ev),
  "delegation.started": (ev) => transcript.delegationStarted(ev),
  "delegation.completed": (ev) => transcript.delegationCompleted(ev),
  "run.completed": (ev) => {
    transcript.runCompleted(ev);
    if (ev.run_id === state.activeRunId || (ev.agent && ev.agent.depth === 0)) {
      setActiveRun(null);
      if (ev.data.status === "cancelled") {
        announce("Stopped.");
        resync(); // show what was saved when it stopped, exactly what a reload shows
      }
    }
  },
};

function handle(ev) {
  if (ev.type === "reminder.due") return reminder(ev);
  if (ev.type === "error") return failure(ev);
  const handler = handlers[ev.type];
  if (!handler) return; // unknown types are ignored (the protocol may grow)
  if (ev.session_id && ev.session_id !== state.sessionId) return; // a chat no longer on screen
  handler(ev);
}

function failure(ev) {
  const data = ev.data || {};
  if (data.request_type === "session.join" && data.code === "session_not_found") {
    if (ev.session_id === state.sessionId || !ev.session_id) {
      forget("lastSession");
      newChat();
    }
    return;
  }
  if (data.message_id) {
    const frame = socket.settle(data.message_id);
    if (frame) {
      transcript.remove(frame.message_id);
      if (!box.value.trim()) {
        box.value = frame.text; // keep the draft
        autosize();
      }
    }
  }
  if (ev.session_id && ev.session_id !== state.sessionId && ev.run_id) return;
  if (ev.agent && ev.agent.kind === "sub") return; // its panel says it; the caller goes on
  showNotice(data.message || "Something went wrong.");
}

const remindersShown = new Set(); // a redelivered reminder is not announced twice

function reminder(ev) {
  const data = ev.data || {};
  if (remindersShown.has(data.reminder_id)) return;
  remindersShown.add(data.reminder_id);
  const elsewhere = ev.session_id && ev.session_id !== state.sessionId;
  const open = elsewhere ? () => openSession(ev.session_id) : null;
  toast($("toasts"), {
    title: data.late ? "Reminder (late)" : "Reminder",
    text: data.content || "",
    sticky: true,
    action: open && { label: "Open chat", run: open },
  });
  announce(`Reminder: ${data.content || ""}`);
  if (!ev.session_id) return;
  sidebar.touch(ev.session_id, data.message?.agent?.display_name || "Reminders");
  if (ev.session_id !== state.sessionId) return;
  if (data.message?.id) transcript.stick(() => transcript.addStored(data.message));
  else transcript.reminder(data);
}

// ---- composer -------------------------------------------------------------------------

function autosize() {
  box.style.height = "auto";
  box.style.height = `${Math.min(box.scrollHeight, 240)}px`;
}

function submit() {
  const text = box.value;
  if (!text.trim()) return;
  if (state.activeRunId) {
    showNotice("The answer is still coming. Press Stop to interrupt it, then send again.");
    return;
  }
  if (text.length > maxChars) {
    showNotice(`Messages are limited to ${maxChars.toLocaleString()} characters.`);
    return;
  }
  if (!state.sessionId) {
    state.sessionId = uuid4();
    state.sessionKnown = false;
    history.pushState(null, "", `#${state.sessionId}`);
  }
  const frame = {
    type: "message.send",
    session_id: state.sessionId,
    message_id: uuid4(),
    text,
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
  };
  showNotice("");
  transcript.pendingUser(frame.message_id, text);
  socket.sendMessage(frame);
  box.value = "";
  autosize();
}

form.addEventListener("submit", (e) => {
  e.preventDefault();
  submit();
});
box.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
    e.preventDefault();
    submit();
  }
});
box.addEventListener("input", autosize);
stopButton.addEventListener("click", () => {
  if (!state.activeRunId) return;
  // Offline: sent on reconnect (the snapshot then says whether the turn still runs).
  if (!socket.sendNow({ type: "run.cancel", run_id: state.activeRunId })) {
    state.stopRequested = state.activeRunId;
  }
  stopButton.disabled = true;
  stopButton.textContent = "Stopping…";
});
$("open-memory").addEventListener("click", (e) => memory.open(e.currentTarget));
$("new-chat").addEventListener("click", () => {
  newChat();
  drawer.close();
});
$("empty").addEventListener("click", (e) => {
  const chip = e.target.closest("button[data-prompt]");
  if (!chip) return;
  box.value = chip.dataset.prompt;
  autosize();
  box.focus();
});
notice.addEventListener("click", () => showNotice(""));
window.addEventListener("popstate", () => {
  const id = location.hash.slice(1);
  if (UUID.test(id)) openSession(id);
  else if (!id) newChat();
});

// ---- start ----------------------------------------------------------------------------

const first = [location.hash.slice(1), stored("lastSession")].find((id) => id && UUID.test(id));
if (first) {
  state.sessionId = first;
  state.sessionKnown = true;
  sidebar.setActive(first);
  if (location.hash.slice(1) !== first) history.replaceState(null, "", `#${first}`);
}
transcript.hooks.changed();
showNotice("");
socket.connect();
