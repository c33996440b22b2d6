// The chat page: wires the socket (docs/protocol.md), the transcript, the sidebar and the
// composer together. Everything shown comes from events; the saved snapshot is the truth.

import { acknowledge, editForm, noteForm } from "./actions.js";
import { actionsApi } from "./api.js";
import { PassageDialog } from "./citations.js";
import { Drafts } from "./drafts.js";
import { Follower } from "./follow.js";
import { gettext, interpolate, language } from "./i18n.js";
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
  setupLanguage,
  setupThemeToggle,
  store,
  stored,
  toast,
} from "./ui.js";
import { insertAtCursor, ReadAloud, VoiceInput, voiceConfig } from "./voice.js";
import { watchNotification } from "./watches.js";

const $ = (id) => document.getElementById(id);
const app = $("app");
const box = $("text");
const form = $("composer");
const sendButton = $("send");
const stopButton = $("stop");
const notice = $("notice");
const maxChars = Number(app.dataset.maxChars || 32000);
const quietResyncMs = Number(app.dataset.quietResyncMs || 15000);
const announce = announcer($("announcer"));
const drafts = new Drafts(box);

const state = {
  sessionId: null,
  sessionKnown: false, // the server has it: join it on (re)connect
  activeRunId: null, // the turn running in the open session
  waitingRuns: new Set(), // turns parked on staff: the user chats on meanwhile
  // Older history the user asked for (session.history pages), shown before the snapshot's
  // messages; `earlierAnchor` is the snapshot message the pages continue back from.
  earlier: [],
  earlierAnchor: null,
  hasEarlier: false,
  keepScroll: null, // distance from the bottom to restore after the next snapshot
  resyncTimer: null,
  quietTimer: null, // while a turn runs: a snapshot is asked for when this fires (watchQuiet)
  quietWait: 0, // how long the chat may stay quiet before that, in ms
  stopRequested: null, // a run to stop once the socket is back
  follow: false, // the next snapshot shows the newest message (a turn the user just started)
};

// CSS cannot call gettext: the words it shows come from here (see chat.css).
app.style.setProperty("--label-sending", JSON.stringify(gettext("sending…")));

const follower = new Follower($("transcript"), $("jump"), { jumped: () => box.focus() });
const passage = new PassageDialog($("passage"));
const memory = new MemoryPanel($("memory"), {
  sessionId: () => (state.sessionKnown ? state.sessionId : null),
  announce: (text) => announce(text),
});
const transcript = new Transcript($("transcript"), {
  announce,
  cite: (citation, answer, opener) => passage.open(citation, answer, opener),
  action: (name, node, button) => messageAction(name, node, button),
  changed: () => {
    const known = Boolean(state.sessionId && state.sessionKnown);
    const empty = transcript.isEmpty() && !known;
    $("empty").hidden = !empty;
    $("open-memory").hidden = !known;
    app.classList.toggle("is-empty", empty);
    follower.changed();
  },
});

const drawer = setupDrawer(app, $("menu"), $("close-drawer"), $("backdrop"));
setupThemeToggle($("toggle-theme"));
setupExpertToggle($("toggle-experts"));
setupLanguage($("language"));

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
      drafts.drop(id);
      if (id === state.sessionId) newChat();
      if (stored("lastSession") === id) forget("lastSession");
    },
    error: showNotice,
    confirm: (title) => confirmDelete($("confirm-delete"), title),
  }
);

const STATUS_WORDS = {
  connecting: gettext("connecting…"),
  connected: gettext("connected"),
};

const scheme = location.protocol === "https:" ? "wss" : "ws";
const socket = new ChatSocket(`${scheme}://${location.host}${app.dataset.wsPath}`, {
  onOpen: () => {
    if (state.sessionId && state.sessionKnown) join();
    if (state.stopRequested) socket.sendNow({ type: "run.cancel", run_id: state.stopRequested });
    state.stopRequested = null;
  },
  onEvent: handle,
  onStatus: (status, delay) => {
    const seconds = Math.max(1, Math.round(delay / 1000));
    const words =
      status === "reconnecting"
        ? interpolate(gettext("reconnecting in %(seconds)ss…"), { seconds })
        : STATUS_WORDS[status];
    $("status").dataset.state = status;
    $("status").textContent = words;
  },
  onUnauthenticated: () => {
    const next = encodeURIComponent(location.pathname + location.hash);
    location.href = `${app.dataset.loginUrl || "/accounts/login/"}?next=${next}`;
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

// ---- sessions -------------------------------------------------------------------------

function join() {
  socket.sendNow({ type: "session.join", session_id: state.sessionId });
}

const earlierButton = document.createElement("button");
earlierButton.type = "button";
earlierButton.className = "more earlier";
earlierButton.textContent = gettext("Show earlier messages");
earlierButton.addEventListener("click", () => {
  const before = state.earlier[0]?.id || transcript.oldestId();
  if (!before) return;
  state.earlierAnchor ??= before;
  earlierButton.disabled = true;
  socket.sendNow({ type: "session.history", session_id: state.sessionId, before });
});

/** The "Show earlier messages" button above the oldest message shown, while there are any;
 * after a page of them was added, the view stays where the reader was. */
function showEarlierButton() {
  const root = $("transcript");
  earlierButton.disabled = false;
  if (state.hasEarlier && transcript.oldestId()) root.prepend(earlierButton);
  else earlierButton.remove();
  if (state.keepScroll !== null) {
    root.scrollTop = root.scrollHeight - state.keepScroll;
    state.keepScroll = null;
  }
}

function openSession(id) {
  if (id === state.sessionId && state.sessionKnown) return;
  readAloud?.stop();
  drafts.switchTo(id);
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
  readAloud?.stop();
  drafts.switchTo(null);
  state.sessionId = null;
  state.sessionKnown = false;
  forget("lastSession");
  if (location.hash) history.pushState(null, "", location.pathname);
  transcript.clear();
  setActiveRun(null);
  showNotice("");
  sidebar.setActive(null);
  document.title = app.dataset.title;
  autosize();
  box.focus();
}

function setActiveRun(runId) {
  state.activeRunId = runId || null;
  const running = Boolean(state.activeRunId);
  watchQuiet(running);
  stopButton.hidden = !running;
  stopButton.disabled = false;
  stopButton.textContent = gettext("Stop");
  sendButton.hidden = running;
  app.classList.toggle("turn-running", running);
  if (!running && notice.dataset.kind === "info") showNotice(""); // "still coming" is over
}

/** A notice above the composer: the server's plain sentence for errors (click to dismiss);
 * `info` ones are not errors and clear themselves. */
function showNotice(text, kind = "error") {
  clearTimeout(state.noticeTimer);
  notice.textContent = text || "";
  notice.hidden = !text;
  notice.dataset.kind = kind;
  notice.setAttribute("role", kind === "error" ? "alert" : "status");
  if (text && kind === "info") state.noticeTimer = setTimeout(() => showNotice(""), 8000);
}

/** A turn's end can be lost on the way (a channel layer drops events when a process's queue is
 * full): while a turn runs and its chat has been quiet a while, ask for the snapshot, which says
 * whether it still runs. Each quiet ask waits twice as long, up to two minutes; any event of
 * the chat starts the wait again. */
function watchQuiet(running, heard = false) {
  clearTimeout(state.quietTimer);
  if (!running) {
    state.quietWait = 0;
    return;
  }
  if (heard || !state.quietWait) state.quietWait = quietResyncMs;
  state.quietTimer = setTimeout(() => {
    if (!state.activeRunId) return;
    state.quietWait = Math.min(state.quietWait * 2, 120000);
    resync();
    watchQuiet(true);
  }, state.quietWait);
}

/** Deltas went missing (a dropped event), or another turn replaced part of the transcript: ask
 * for the snapshot again. */
function resync() {
  clearTimeout(state.resyncTimer);
  state.resyncTimer = setTimeout(() => {
    if (state.sessionId && state.sessionKnown) join();
  }, 100);
}

async function loadFeedback(sessionId) {
  try {
    const rows = await actionsApi.feedback(sessionId);
    if (sessionId !== state.sessionId) return;
    const ratings = Object.fromEntries(
      rows.map((r) => [r.message_id, { rating: r.rating, note: r.note }])
    );
    transcript.setFeedback(ratings);
  } catch {
    /* ratings are extras: the chat works without them */
  }
}

// ---- events ---------------------------------------------------------------------------

const handlers = {
  "session.snapshot": (ev) => {
    const messages = ev.data.messages || [];
    if (!messages.some((m) => m.id === state.earlierAnchor)) {
      // the pages no longer join on (a new session, or the window moved on): start again
      state.earlier = [];
      state.earlierAnchor = null;
      state.hasEarlier = Boolean(ev.data.has_earlier);
    }
    const shown = new Set(state.earlier.map((m) => m.id));
    transcript.noteTurns(ev.data.turn_messages);
    const load = () =>
      transcript.loadSnapshot(
        [...state.earlier, ...messages.filter((m) => !shown.has(m.id))],
        ev.data.modes || {},
        ev.data.active_run_id
      );
    // A page of history keeps its own place (showEarlierButton); a reader up in older
    // messages stays there; a turn the user just started is shown.
    if (state.keepScroll === null && !state.follow) follower.keepPlace(load);
    else load();
    showEarlierButton();
    if (state.follow) follower.toBottom();
    state.follow = false;
    for (const frame of socket.unacknowledged.values()) {
      if (frame.session_id === state.sessionId && !transcript.has(frame.message_id)) {
        transcript.pendingUser(frame.message_id, frame.text);
      }
    }
    state.waitingRuns = new Set(ev.data.waiting_run_ids || []);
    const active = ev.data.active_run_id;
    setActiveRun(active);
    const started =
      (ev.data.messages || []).some((m) => m.run_id === active) || transcript.isStreaming(active);
    if (active && !started) transcript.showThinking(active);
    const title = ev.data.session?.title;
    if (title) {
      sidebar.setTitle(state.sessionId, title);
      document.title = `${title} · ${app.dataset.title}`;
    }
    loadFeedback(state.sessionId);
  },
  "session.history": (ev) => {
    state.earlier = [...(ev.data.messages || []), ...state.earlier];
    state.hasEarlier = Boolean(ev.data.has_earlier);
    const root = $("transcript");
    state.keepScroll = root.scrollHeight - root.scrollTop;
    join(); // the snapshot shows the earlier pages before what is live now
  },
  "message.created": (ev) => {
    socket.settle(ev.message_id);
    if (ev.run_id) transcript.noteTurns({ [ev.run_id]: ev.message_id });
    transcript.stick(() => transcript.addStored(ev.data));
    const fresh = !state.sessionKnown;
    state.sessionKnown = true;
    store("lastSession", state.sessionId);
    if (ev.data.duplicate) {
      join(); // a re-sent message the server already had: catch up on its turn
      return;
    }
    setActiveRun(ev.run_id);
    transcript.showThinking(ev.run_id);
    sidebar.touch(ev.session_id, ev.data.content);
    sidebar.setActive(ev.session_id);
    if (fresh) nameNewChat(ev.session_id);
  },
  "message.started": (ev) => transcript.started(ev),
  "run.progress": (ev) => transcript.runProgress(ev),
  "message.delta": (ev) => {
    if (!transcript.delta(ev)) resync();
  },
  "message.completed": (ev) => transcript.completed(ev),
  "tool.called": (ev) => transcript.toolEvent(ev),
  "tool.result": (ev) => transcript.toolEvent(ev),
  "tool.progress": (ev) => transcript.toolProgress(ev),
  "delegation.started": (ev) => transcript.delegationStarted(ev),
  "delegation.completed": (ev) => transcript.delegationCompleted(ev),
  "run.waiting": (ev) => {
    transcript.runProgress({ ...ev, data: { text: "" } }); // its status no longer holds
    // A turn that waits only for staff is parked: the composer is free for the next message
    // (the server says 409 and the draft stays if an expert of it is still working).
    if (ev.data.audience === "staff" && state.activeRunId) {
      state.waitingRuns.add(state.activeRunId);
      setActiveRun(null);
      transcript.hideThinking();
    }
  },
  "run.completed": (ev) => {
    transcript.runCompleted(ev);
    const parked = state.waitingRuns.delete(ev.run_id); // a parked turn ends: not the new one
    const root = ev.agent && ev.agent.depth === 0;
    if (ev.run_id === state.activeRunId || (root && !parked)) {
      setActiveRun(null);
      if (ev.data.status === "cancelled") {
        announce(gettext("Stopped."));
        resync(); // show what was saved when it stopped, exactly what a reload shows
      }
    }
  },
};

/** The server names a new chat from its first message: show that name in the list. */
async function nameNewChat(id) {
  try {
    const session = await actionsApi.session(id);
    if (session?.title) sidebar.setTitle(id, session.title);
    if (id === state.sessionId && session?.title) {
      document.title = `${session.title} · ${app.dataset.title}`;
    }
  } catch {
    /* the next snapshot brings the title */
  }
}

function handle(ev) {
  if (ev.type === "reminder.due") return reminder(ev);
  if (ev.type === "watch.notification") {
    return watchNotification(ev, {
      container: $("toasts"),
      announce,
      touch: (id, name) => sidebar.touch(id, name),
      show: (id, message) => {
        if (id === state.sessionId) transcript.stick(() => transcript.addStored(message));
      },
    });
  }
  if (ev.type === "error") return failure(ev);
  const handler = handlers[ev.type];
  if (!handler) return; // unknown types are ignored (the protocol may grow)
  if (ev.session_id && ev.session_id !== state.sessionId) return; // a chat no longer on screen
  if (ev.type !== "session.snapshot") watchQuiet(Boolean(state.activeRunId), true);
  if (ev.run_id && ev.type !== "message.created" && ev.type !== "session.snapshot") {
    transcript.hideThinking(); // the turn has started answering
  }
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
      transcript.hideThinking();
      if (!box.value.trim()) {
        box.value = frame.text; // keep the draft
        autosize();
      }
    }
  }
  if (ev.session_id && ev.session_id !== state.sessionId && ev.run_id) return;
  if (ev.agent && ev.agent.kind === "sub") return; // its panel says it; the caller goes on
  // A failed turn: its plain-language note in the transcript says it, with "Try again".
  if (ev.run_id && ev.agent && ev.agent.depth === 0) return;
  showNotice(data.message || gettext("Something went wrong."));
}

const remindersShown = new Set(); // a redelivered reminder is not announced twice

function reminder(ev) {
  const data = ev.data || {};
  if (remindersShown.has(data.reminder_id)) return;
  remindersShown.add(data.reminder_id);
  const elsewhere = ev.session_id && ev.session_id !== state.sessionId;
  const open = elsewhere ? () => openSession(ev.session_id) : null;
  toast($("toasts"), {
    title: data.late ? gettext("Reminder (late)") : gettext("Reminder"),
    text: data.content || "",
    action: open && { label: gettext("Open chat"), run: open },
  });
  announce(interpolate(gettext("Reminder: %(text)s"), { text: data.content || "" }));
  if (!ev.session_id) return;
  sidebar.touch(ev.session_id, data.message?.agent?.display_name || gettext("Reminders"));
  if (ev.session_id !== state.sessionId) return;
  if (data.message?.id) transcript.stick(() => transcript.addStored(data.message));
  else transcript.reminder(data);
}

// ---- message actions (copy is the transcript's own) -----------------------------------

/** What a button says: its label when it is an icon, else its text. */
function buttonWords(button) {
  const icon = button.classList.contains("icon-btn");
  return icon ? button.getAttribute("aria-label") : button.textContent;
}

/** The transcript copies (render.js) and then says so on the button ("Copied", or "Selected"
 * without clipboard access); say it to screen readers too. */
function announceCopy(button) {
  const before = buttonWords(button);
  const watch = new MutationObserver(() => {
    const now = buttonWords(button);
    if (now === before) return;
    watch.disconnect();
    announce(now);
  });
  watch.observe(button, {
    attributes: true,
    attributeFilter: ["aria-label"],
    childList: true,
    characterData: true,
    subtree: true,
  });
  setTimeout(() => watch.disconnect(), 5000);
}

// Capture: before the transcript's own handler, which may relabel the button at once.
$("transcript").addEventListener(
  "click",
  (e) => {
    const copy = e.target.closest("button.copy, button[data-action=copy]");
    if (copy) announceCopy(copy);
  },
  true
);

function busy() {
  if (!state.activeRunId) return false;
  showNotice(gettext("Wait for the answer, or press Stop, before you change the chat."), "info");
  return true;
}

/** A new turn started from the REST API (try again, edit): follow it like a sent message. */
function followTurn(accepted) {
  setActiveRun(accepted.run_id);
  transcript.showThinking(accepted.run_id);
  follower.toBottom();
  state.follow = true;
  resync(); // the snapshot folds what the new turn replaced
}

async function messageAction(name, node, button) {
  const sid = state.sessionId;
  try {
    if (name === "retry") {
      const question = transcript.retryQuestion();
      if (!question || busy()) return;
      button.disabled = true;
      followTurn(await actionsApi.regenerate(sid, question));
    } else if (name === "edit") {
      if (busy()) return;
      const text = await editForm(node);
      if (text === null) {
        button.focus();
        return;
      }
      if (text.length > maxChars) {
        showNotice(interpolate(gettext("Messages are limited to %(count)s characters."), {
          count: maxChars.toLocaleString(language),
        }));
        return;
      }
      const body = { id: uuid4(), text, timezone: timezone() };
      followTurn(await actionsApi.edit(sid, node.id, body));
      box.focus();
    } else if (name === "speak") {
      readAloud?.toggle(node);
    } else if (name === "up" || name === "down") {
      await rate(node, name);
    } else if (name === "note-skip") {
      node.noteForm?.remove();
      node.footer?.querySelector(`[data-action="${node.feedback?.rating}"]`)?.focus();
    }
  } catch (error) {
    button.disabled = false;
    showNotice(error.message);
  }
}

/** Thumbs up or down (the same thumb again takes it back); then an optional note. */
async function rate(node, rating) {
  const sid = state.sessionId;
  if (node.feedback?.rating === rating) {
    await actionsApi.unrate(sid, node.id);
    transcript.setFeedback({ ...transcript.feedback, [node.id]: undefined });
    node.noteForm?.remove();
    acknowledge(node, gettext("Rating removed."));
    announce(gettext("Rating removed."));
    return;
  }
  const saved = await actionsApi.rate(sid, node.id, rating);
  transcript.setFeedback({ ...transcript.feedback, [node.id]: saved });
  acknowledge(node, gettext("Thanks for the feedback."));
  announce(gettext("Thanks for the feedback."));
  const note = noteForm(node);
  note.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = note.querySelector("textarea").value;
    try {
      const withNote = await actionsApi.rate(sid, node.id, rating, text);
      transcript.setFeedback({ ...transcript.feedback, [node.id]: withNote });
      note.remove();
      acknowledge(node, gettext("Thanks, your note was saved."));
      announce(gettext("Thanks, your note was saved."));
      node.footer?.querySelector(`[data-action="${rating}"]`)?.focus();
    } catch (error) {
      showNotice(error.message);
    }
  });
  note.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      note.remove();
      node.footer?.querySelector(`[data-action="${rating}"]`)?.focus();
    }
  });
}

// ---- composer -------------------------------------------------------------------------

function autosize() {
  box.style.height = "auto";
  box.style.height = `${Math.min(box.scrollHeight, 240)}px`;
}

function timezone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

function submit(text = box.value) {
  if (!text.trim()) return;
  if (state.activeRunId) {
    showNotice(
      gettext("The answer is still coming: send again when it ends, or press Stop."),
      "info"
    );
    return;
  }
  if (text.length > maxChars) {
    showNotice(interpolate(gettext("Messages are limited to %(count)s characters."), {
      count: maxChars.toLocaleString(language),
    }));
    return;
  }
  if (!state.sessionId) {
    state.sessionId = uuid4();
    state.sessionKnown = false;
    drafts.adopt(state.sessionId);
    history.pushState(null, "", `#${state.sessionId}`);
  }
  const frame = {
    type: "message.send",
    session_id: state.sessionId,
    message_id: uuid4(),
    text,
    timezone: timezone(),
  };
  showNotice("");
  transcript.pendingUser(frame.message_id, text);
  transcript.showThinking(null);
  follower.toBottom(); // even when the reader was up in older messages
  socket.sendMessage(frame);
  if (text === box.value) {
    box.value = "";
    drafts.save();
  }
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
box.addEventListener("input", () => {
  autosize();
  drafts.save();
});
stopButton.addEventListener("click", () => {
  if (!state.activeRunId) return;
  // Offline: sent on reconnect (the snapshot then says whether the turn still runs).
  if (!socket.sendNow({ type: "run.cancel", run_id: state.activeRunId })) {
    state.stopRequested = state.activeRunId;
  }
  stopButton.disabled = true;
  stopButton.textContent = gettext("Stopping…");
});
$("open-memory").addEventListener("click", (e) => memory.open(e.currentTarget));
$("new-chat").addEventListener("click", () => {
  newChat();
  drawer.close();
});
$("empty").addEventListener("click", (e) => {
  const chip = e.target.closest("button[data-prompt]");
  if (chip) submit(chip.dataset.prompt); // a suggestion is sent as it is
});
notice.addEventListener("click", () => showNotice(""));
window.addEventListener("popstate", () => {
  const id = location.hash.slice(1);
  if (UUID.test(id)) openSession(id);
  else if (!id) newChat();
});
// "/" (outside a text field) or Shift+Escape goes to the composer, as in other chat apps.
document.addEventListener("keydown", (e) => {
  const typing = e.target.closest?.("input, textarea, select, [contenteditable]");
  const slash = e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey;
  if ((slash || (e.key === "Escape" && e.shiftKey)) && !document.querySelector("dialog[open]")) {
    e.preventDefault();
    box.focus();
  }
});

// ---- voice (docs/voice.md): dictation into the composer, answers read aloud -----------

const voice = voiceConfig(app);
const readAloud = voice.speechUrl
  ? new ReadAloud({ url: voice.speechUrl, error: showNotice, announce })
  : null;
if (voice.transcribeUrl && $("mic")) {
  new VoiceInput({
    button: $("mic"),
    strip: $("recording"),
    url: voice.transcribeUrl,
    maxSeconds: voice.maxSeconds,
    maxBytes: voice.maxBytes,
    insert: (text) => {
      insertAtCursor(box, text); // for the user to edit or send: never sent from here
      autosize();
      drafts.save();
    },
    error: showNotice,
    announce,
  });
}

// ---- start ----------------------------------------------------------------------------

const first = [location.hash.slice(1), stored("lastSession")].find((id) => id && UUID.test(id));
if (first) {
  state.sessionId = first;
  state.sessionKnown = true;
  sidebar.setActive(first);
  if (location.hash.slice(1) !== first) history.replaceState(null, "", `#${first}`);
}
drafts.switchTo(state.sessionId);
autosize();
transcript.hooks.changed();
showNotice("");
socket.connect();
