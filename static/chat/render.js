// The transcript: user and agent messages, compact tool calls, and the delegation tree (an
// expert's messages live in a collapsible panel inside its caller's thread). Live events and the
// saved snapshot go through the same functions, so a reload shows what the live stream showed.

import { paintFooter } from "./actions.js";
import { renderCitations } from "./citations.js";
import { paintHumanWait } from "./humans.js";
import { gettext, interpolate, ngettext } from "./i18n.js";
import { loadedImage, safeUrl } from "./markdown.js";
import { MarkdownStream } from "./markdown-stream.js";
import { paintUndo } from "./undo.js";

const STATUS_WORDS = {
  running: gettext("running"),
  succeeded: gettext("done"),
  failed: gettext("failed"),
  timed_out: gettext("timed out"),
  refused: gettext("refused"),
  cancelled: gettext("stopped"),
};

// The routing modes of docs/routing.md, as the answer's badge shows them.
const MODES = {
  GUIDE: {
    label: gettext("Guide"),
    about: gettext("Guide mode: orients you and suggests next questions."),
  },
  CHAT: {
    label: gettext("Chat"),
    about: gettext("Chat mode: explains from the knowledge base, with sources."),
  },
  STRICT: {
    label: gettext("Strict"),
    about: gettext("Strict mode: only what the documents say, every fact cited."),
  },
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** "0.4s", "12s", "3m 05s". */
export function formatDuration(ms) {
  const seconds = Math.max(0, ms) / 1000;
  if (seconds < 10) return `${seconds.toFixed(1)}s`;
  if (seconds < 60) return `${Math.floor(seconds)}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m ${String(Math.floor(seconds % 60)).padStart(2, "0")}s`;
}

/** A running call's chip: "…", or how far it got ("step 2 of 3", or 2/3 with no note). */
function progressText(progress) {
  if (!progress) return "…";
  if (typeof progress.message === "string" && progress.message) {
    return `… ${compact(progress.message, 80)}`;
  }
  const of = typeof progress.total === "number" ? `/${progress.total}` : "";
  return `… ${progress.progress}${of}`;
}

// The mark before a chip's sentence: running, done, failed.
const STATE_MARKS = { running: "", done: "✓\u00a0", error: "⚠\u00a0" };

/** A chip's sentence: the server's summary, and while it runs how far it got. */
function chipText(tool, state) {
  if (state !== "running" || !tool.progress) return tool.summary;
  return `${tool.summary} ${progressText(tool.progress)}`;
}

function compact(value, limit = 60) {
  const text = typeof value === "string" ? value : JSON.stringify(value ?? {});
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

function shortResult(tool) {
  if (tool.ok === undefined || tool.ok === null) return progressText(tool.progress);
  if (!tool.ok) return `⚠ ${compact(tool.error?.message || "failed", 80)}`;
  const result = tool.result;
  if (result !== null && typeof result === "object" && !Array.isArray(result)) {
    // Planner and knowledge tools say what they did in `message`: the chip reads as a sentence.
    if (typeof result.message === "string" && result.message) return compact(result.message, 120);
    // An open_url offer reads as its label; the link itself is shown below the chip.
    if (typeof result.open_url?.label === "string") return compact(result.open_url.label, 120);
    for (const key of ["value", "answer", "text"]) {
      if (key in result && typeof result[key] !== "object") return compact(String(result[key]));
    }
  }
  return compact(result);
}

const WEB_SCHEMES = ["http:", "https:"];

/** A link that opens a web page in a new tab, only when the user clicks it: no `opener` (the
 * page cannot reach back into the chat) and no referrer. The text is set as text (escaped). */
function webLink(className, url, text) {
  const link = el("a", className, text);
  link.href = url.href;
  link.target = "_blank";
  link.rel = "noopener noreferrer";
  link.title = url.href;
  return link;
}

/** An `open_url` call's suggestion, as a button-styled link under the tool chip. */
function paintOpenUrl(node, tool) {
  node.openLink?.remove();
  node.openLink = null;
  const offer = tool.name === "open_url" && tool.ok ? tool.result?.open_url : null;
  const url = offer ? safeUrl(offer.url, WEB_SCHEMES) : null;
  if (!url) return;
  const label = typeof offer.label === "string" && offer.label.trim() ? offer.label : url.host;
  node.openLink = webLink("open-url", url, label);
  node.el.append(node.openLink);
}

/** A cited web page (a citation with a `url`) gets a link to the page beside its chip. */
function linkWebSources(node) {
  for (const item of node.citeList?.children || []) {
    const ref = item.querySelector(".cite-chip")?.dataset.ref;
    const citation = (node.citations || []).find((c) => String(c.ref) === ref);
    const url = citation?.url ? safeUrl(citation.url, WEB_SCHEMES) : null;
    if (!url) continue;
    const link = webLink("cite-link", url, url.host);
    link.setAttribute("aria-label", interpolate(gettext("Open %(host)s"), { host: url.host }));
    item.append(link);
  }
}

function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/** Open or close a <details> from code; `toggle` events that match were not the user's. */
function setOpen(node, open) {
  node.expectOpen = open;
  node.details.open = open;
}

function watchToggle(node, remember) {
  node.details.addEventListener("toggle", () => {
    if (node.details.open === node.expectOpen) return;
    node.expectOpen = node.details.open;
    remember(node.details.open);
  });
}

function time(iso) {
  const parsed = Date.parse(iso || "");
  return Number.isNaN(parsed) ? null : parsed;
}

/** A stored delegate message's status; a stopped turn leaves "running" on cancelled messages. */
function delegationStatus(m) {
  if (m.status === "streaming") return "running";
  const status = m.tool.delegation.status;
  return status === "running" ? (m.status === "completed" ? "succeeded" : m.status) : status;
}

/** The text a message keeps when it ends: the server's, except that a stopped message keeps the
 * longer text already shown when it continues the saved one (the worker saves it a moment later;
 * see docs/protocol.md, `message.completed`). */
function finalText(shown, saved, status) {
  if (typeof saved !== "string") return shown;
  const further = status === "cancelled" && shown.length > saved.length && shown.startsWith(saved);
  return further ? shown : saved;
}

/** The runs a snapshot shows as still running: its active turn and the experts at work. */
function runningRuns(messages, activeRunId) {
  const running = new Set(activeRunId ? [activeRunId] : []);
  for (const m of messages) {
    const delegation = m.role === "tool" && m.tool?.name === "delegate" && m.tool.delegation;
    if (delegation && delegationStatus(m) === "running") running.add(delegation.run_id);
  }
  return running;
}

export class Transcript {
  /**
   * @param {HTMLElement} root     the #transcript element (also the scroller)
   * @param {object} hooks         announce(text), changed()
   */
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.nodes = new Map(); // message id -> node
    this.threads = new Map(); // run id -> the element its messages go into
    this.panels = new Map(); // expert run id -> delegation node
    this.loadedImages = new Set(); // image URLs the user chose to load
    this.userToggled = new Map(); // expert run id / tool message id -> open (the user's choice)
    this.modes = new Map(); // root run id -> the routing mode of its turn (GUIDE, CHAT, STRICT)
    this.feedback = {}; // answer id -> {rating: "up"|"down", note}: the user's own ratings
    this.usage = new Map(); // message id -> usage seen live (kept when a snapshot lacks it)
    this.branch = null; // while a replaced message is added: the turn that replaced it
    this.folds = new Map(); // replacing turn's run id -> the fold holding what it replaced
    this.thinkingEl = null; // "Thinking…" between a send and the first event of its turn
    this.retryNode = null; // the message that offers "Try again" (the latest turn's end)
    // root run id -> the user message it answers: a turn parked on staff may answer after
    // newer messages, and its answer then says which question it answers.
    this.turnMessages = new Map();
    root.addEventListener("click", (e) => this.onClick(e));
    setInterval(() => this.tick(), 250);
  }

  // ---- whole transcript ---------------------------------------------------------------

  clear() {
    this.root.replaceChildren();
    this.modes.clear();
    this.folds.clear();
    this.thinkingEl = null;
    this.retryNode = null;
    this.nodes.clear();
    this.threads.clear();
    this.panels.clear();
    this.hooks.changed();
  }

  /** Replace the view with a snapshot's messages. Text streamed beyond the saved partial text
   * is kept, and so is an answer still streaming that nothing has saved yet (its run is still
   * running in the snapshot): later deltas continue from them by offset. */
  loadSnapshot(messages, modes = {}, activeRunId = null) {
    const before = new Map([...this.nodes].map(([id, node]) => [id, node.text]));
    const streaming = [...this.nodes.values()].filter(
      (n) => n.kind === "text" && n.role === "agent" && n.status === "streaming"
    );
    this.stick(() => {
      this.clear();
      for (const message of messages) {
        const seen = before.get(message.id);
        const saved = message.content || "";
        const further = seen && seen.length > saved.length && seen.startsWith(saved);
        const keep = further && ["streaming", "cancelled"].includes(message.status);
        this.addStored(keep ? { ...message, content: seen } : message);
      }
      const running = runningRuns(messages, activeRunId);
      for (const live of streaming) {
        if (this.nodes.has(live.id) || !running.has(live.runId)) continue;
        const node = this.textNode(live.id, "agent", live.runId, live.agent);
        this.setModel(node, live.model);
        Object.assign(node, { text: live.text, createdAt: live.createdAt });
        this.paint(node);
      }
      for (const [runId, mode] of Object.entries(modes || {})) this.setMode(runId, mode);
      this.markStoppedTurns(messages);
      this.labelFolds();
      this.refreshActions();
    });
  }

  /** Which user message each turn answers ({root run id: message id}, from a snapshot or
   * a live `message.created`). */
  noteTurns(turns) {
    for (const [runId, messageId] of Object.entries(turns || {})) {
      this.turnMessages.set(runId, messageId);
    }
  }

  /** An entry agent's answer that arrives after newer user messages (its turn was parked on
   * staff) names the question it answers. */
  markReplyTo(node) {
    if (node.replyTo || node.role !== "agent" || node.agent?.depth !== 0) return;
    const asked = this.nodes.get(this.turnMessages.get(node.runId));
    const users = this.root.querySelectorAll(":scope > article.msg.user");
    if (!asked || !users.length || users[users.length - 1] === asked.el) return;
    const quoted = compact(asked.text || "", 60);
    node.replyTo = el("p", "reply-to", interpolate(gettext("In reply to “%(text)s”"), { text: quoted }));
    node.header.after(node.replyTo);
  }

  /** Whether a message of this run is streaming on the page (shown live, perhaps not saved). */
  isStreaming(runId) {
    return [...this.nodes.values()].some(
      (n) => n.kind === "text" && n.runId === runId && n.status === "streaming"
    );
  }

  isEmpty() {
    return this.root.childElementCount === 0;
  }

  /** The id of the oldest message shown, if any. */
  oldestId() {
    return this.nodes.keys().next().value || null;
  }

  has(messageId) {
    return this.nodes.has(messageId);
  }

  /** Keep the view pinned to the newest message if it was there before `change`. */
  stick(change) {
    const root = this.root;
    const atBottom = root.scrollHeight - root.scrollTop - root.clientHeight < 80;
    change();
    if (atBottom) root.scrollTop = root.scrollHeight;
    this.hooks.changed();
  }

  // ---- stored messages (snapshot, message.created) ------------------------------------

  addStored(m) {
    this.branch = m.superseded_by || null;
    try {
      this.addStoredHere(m);
    } finally {
      this.branch = null;
    }
  }

  addStoredHere(m) {
    if (m.role === "tool" && m.tool?.name === "delegate" && m.tool.delegation) {
      this.delegation(m.id, m.run_id, m.agent, {
        ...m.tool.delegation,
        status: delegationStatus(m),
        startedAt: time(m.created_at),
        endedAt: m.status === "streaming" ? null : time(m.updated_at),
        outcome: m.tool.ok === false ? m.tool.error?.message : null,
        summary: m.tool.summary || null,
      });
      return;
    }
    if (m.role === "tool") {
      this.tool(m.id, m.run_id, m.agent, m.tool || {});
      return;
    }
    const node = this.textNode(m.id, m.role, m.run_id, m.role === "user" ? null : m.agent);
    this.setModel(node, m.model);
    Object.assign(node, {
      text: m.content || "",
      status: m.status,
      citations: m.citations || [],
      createdAt: time(m.created_at),
      usage: m.usage || this.usage.get(m.id) || null,
      superseded: Boolean(m.superseded_by),
      scheduled: m.origin === "scheduled",
      edited: Boolean(m.edited_from),
      feedback: this.feedback[m.id] || null,
    });
    this.markOrigin(node);
    this.paint(node);
  }

  // ---- live events --------------------------------------------------------------------

  started(ev) {
    const node = this.textNode(ev.message_id, "agent", ev.run_id, ev.agent);
    node.createdAt ??= Date.now();
    this.stick(() => this.setModel(node, ev.data.model));
  }

  /** Apply a delta by offset; false when text before `offset` is missing (resync needed). */
  delta(ev) {
    const node = this.textNode(ev.message_id, "agent", ev.run_id, ev.agent);
    const { text = "", offset = 0 } = ev.data;
    if (node.status !== "streaming") return true; // a final text is never extended
    if (offset + text.length <= node.text.length) return true; // already have it
    if (offset > node.text.length) return false;
    node.text = node.text.slice(0, offset) + text;
    this.stick(() => this.paint(node));
    return true;
  }

  completed(ev) {
    const node = this.textNode(ev.message_id, "agent", ev.run_id, ev.agent);
    node.status = ev.data.status || "completed";
    node.text = finalText(node.text, ev.data.text, node.status);
    node.citations = ev.data.citations || [];
    node.usage = ev.data.usage || null;
    if (node.usage) this.usage.set(node.id, node.usage);
    node.createdAt ??= Date.now();
    this.setModel(node, ev.data.model); // a page that missed message.started still labels it
    this.stick(() => this.paint(node));
    if (ev.agent?.depth === 0) this.refreshActions();
    if (ev.agent?.depth === 0 && node.status === "completed") {
      this.hooks.announce(`${ev.agent.display_name}: ${node.text.slice(0, 300)}`);
    }
  }

  toolEvent(ev) {
    this.stick(() => this.tool(ev.message_id, ev.run_id, ev.agent, ev.data));
  }

  /** How far a long call got (an outside tool's progress), shown on its chip until it ends. */
  toolProgress(ev) {
    const node = this.nodes.get(ev.message_id);
    if (!node || node.kind !== "tool" || node.el.dataset.status !== "running") return;
    const { progress, total, message } = ev.data;
    this.tool(ev.message_id, ev.run_id, ev.agent, { progress: { progress, total, message } });
  }

  delegationStarted(ev) {
    const d = ev.data;
    const known = this.nodes.get(ev.message_id);
    this.stick(() =>
      this.delegation(ev.message_id, ev.run_id, ev.agent, {
        run_id: d.run_id,
        target: d.target,
        display_name: d.display_name,
        task: d.task,
        status: d.status || "running",
        summary: d.summary || null,
        startedAt: known?.startedAt ?? Date.now(),
        endedAt: null,
      })
    );
    if (!known) {
      const who = d.display_name || d.target;
      this.hooks.announce(d.summary || interpolate(gettext("Asking %(expert)s"), { expert: who }));
    }
  }

  delegationCompleted(ev) {
    const node = this.nodes.get(ev.message_id) || this.panels.get(ev.data.run_id);
    if (!node || node.kind !== "delegation") return;
    if (ev.data.summary) node.summary = ev.data.summary;
    this.finishDelegation(node, ev.data.status, ev.data.error?.message || null);
  }

  /** A remote expert's status message while it works: on its panel until it ends or waits
   * (an empty text clears it). */
  runProgress(ev) {
    const panel = this.panels.get(ev.run_id);
    if (!panel || panel.status !== "running") return;
    panel.note = String(ev.data.text || "");
    this.paintDelegation(panel);
  }

  /** A run ended: an expert whose delegation.completed was lost still gets its status; the
   * entry agent's run says which mode routing chose for the turn. */
  runCompleted(ev) {
    if (ev.agent?.depth === 0 && ev.data.mode) this.setMode(ev.run_id, ev.data.mode);
    const panel = this.panels.get(ev.run_id);
    if (panel && panel.status === "running") {
      panel.summary = null; // "Asking …" no longer holds: its status word says how it ended
      this.finishDelegation(panel, ev.data.status, ev.data.error?.message || null);
    }
    if (ev.data.status === "cancelled") {
      for (const node of this.nodes.values()) {
        if (node.kind === "text" && node.runId === ev.run_id && node.status === "streaming") {
          node.status = "cancelled";
          this.paint(node);
        }
      }
      if (ev.agent?.depth === 0) this.stick(() => this.markStopped(ev.run_id));
    }
    if (ev.agent?.depth === 0) {
      this.hideThinking();
      this.refreshActions();
    }
  }

  /** A stopped turn whose entry agent had not answered says "Stopped." in the main thread. */
  markStopped(runId) {
    const answered = [...this.nodes.values()].some(
      (n) => n.kind === "text" && n.runId === runId && n.role === "agent"
    );
    const id = `stopped:${runId}`;
    if (answered || this.nodes.has(id)) return;
    const note = el("p", "msg turn-stopped", gettext("Stopped."));
    note.dataset.messageId = id;
    this.nodes.set(id, { kind: "note", id, runId, el: note });
    this.threadFor(runId, { depth: 0 }).append(note);
  }

  /** After a snapshot: the stopped turns (a cancelled message of the entry agent's run). */
  markStoppedTurns(messages) {
    const stopped = new Map();
    for (const m of messages) {
      if (m.agent?.depth === 0 && m.status === "cancelled" && m.run_id) {
        stopped.set(m.run_id, m.superseded_by || null);
      }
    }
    for (const [runId, branch] of stopped) {
      this.branch = branch;
      this.markStopped(runId);
      this.branch = null;
    }
  }

  /** The turn's mode as a badge on its answer (the last text of the entry agent's run). */
  setMode(runId, mode) {
    if (!MODES[mode]) return;
    this.modes.set(runId, mode);
    const answers = [...this.nodes.values()].filter(
      (n) => n.kind === "text" && n.runId === runId && n.agent?.depth === 0
    );
    answers.forEach((node, index) => {
      node.modeBadge?.remove();
      node.modeBadge = null;
      if (index !== answers.length - 1) return;
      const badge = el("span", "mode-badge", MODES[mode].label);
      badge.dataset.mode = mode;
      badge.title = MODES[mode].about;
      node.header.append(badge);
      node.modeBadge = badge;
    });
  }

  finishDelegation(node, status, outcome) {
    node.status = status;
    node.endedAt = node.endedAt ?? Date.now();
    if (outcome && status !== "succeeded") node.outcome = outcome;
    if (!this.userToggled.has(node.runKey)) setOpen(node, false);
    this.stick(() => this.paintDelegation(node));
  }

  /** A reminder shown in the transcript (once per reminder). */
  reminder(data) {
    const id = `reminder:${data.reminder_id}`;
    if (this.nodes.has(id)) return;
    const article = el("article", "msg reminder");
    article.dataset.messageId = id;
    const header = el("header", null, data.late ? gettext("Reminder (late)") : gettext("Reminder"));
    const body = el("div", "body", data.content || "");
    article.append(header, body);
    this.nodes.set(id, { kind: "reminder", el: article, text: data.content || "" });
    this.stick(() => this.root.append(article));
  }

  // ---- nodes --------------------------------------------------------------------------

  /** The element a run's messages go into: the main thread (or the fold of an older branch),
   * or an expert's panel. */
  threadFor(runId, agent) {
    const thread = this.threadOf(runId, agent);
    return thread === this.root && this.branch ? this.foldFor(this.branch) : thread;
  }

  threadOf(runId, agent) {
    if (runId && this.threads.has(runId)) return this.threads.get(runId);
    if (agent?.kind === "sub" && runId) {
      // The delegation that started this expert is not shown (yet): give it a panel of its own;
      // it moves under its caller when the delegation arrives.
      const node = this.delegation(`orphan:${runId}`, null, null, {
        run_id: runId,
        display_name: agent.display_name,
        target: agent.name,
        status: "running",
        startedAt: Date.now(),
        depth: agent.depth,
      });
      return node.thread;
    }
    if (runId) this.threads.set(runId, this.root);
    return this.root;
  }

  textNode(id, role, runId, agent) {
    let node = this.nodes.get(id);
    if (node) return node;
    const article = el("article", `msg ${role}`);
    article.dataset.messageId = id;
    if (agent) {
      article.dataset.agent = agent.name;
      article.dataset.depth = agent.depth;
    }
    const header = el("header");
    const who = el("span", "author", agent ? agent.display_name : gettext("You"));
    header.append(who);
    const body = el("div", "body");
    article.append(header, body);
    node = { kind: "text", id, role, runId, agent, el: article, header, who, body };
    Object.assign(node, { text: "", status: "streaming" });
    this.nodes.set(id, node);
    this.threadFor(runId, agent).append(article);
    this.markReplyTo(node);
    return node;
  }

  setModel(node, model) {
    if (!model || node.model) return node;
    node.model = model;
    if (model === "offline") node.who.textContent += ` · ${gettext("offline model")}`;
    else node.header.title = interpolate(gettext("Model: %(model)s"), { model });
    return node;
  }

  paint(node) {
    node.el.dataset.status = node.status;
    if (node.role === "user") {
      node.body.textContent = node.text;
      paintFooter(node, { retry: node === this.retryNode });
      return;
    }
    // Streaming text renders incrementally (finished blocks are kept); a final text renders once.
    node.markdown ??= new MarkdownStream(node.body, {
      imageAllowed: (url) => this.loadedImages.has(url),
    });
    node.stopped?.remove();
    if (node.status === "streaming") node.markdown.update(node.text);
    else node.markdown.finish(node.text);
    if (node.status === "cancelled") {
      node.stopped ??= el("p", "stopped", gettext("Stopped."));
      node.body.append(node.stopped);
    }
    renderCitations(node);
    linkWebSources(node);
    paintFooter(node, { retry: node === this.retryNode });
  }

  /** A scheduled prompt is labelled as such; an edited message says so. */
  markOrigin(node) {
    node.el.classList.toggle("scheduled", Boolean(node.scheduled));
    if (node.scheduled) node.who.textContent = gettext("Scheduled prompt");
    node.el.classList.toggle("edited", Boolean(node.edited));
  }

  /** "Try again" belongs to the end of the latest turn: its last answer of the entry agent
   * (a stopped or failed one too), or its question when nothing answered it. */
  refreshActions() {
    const main = [...this.nodes.values()].filter(
      (n) => n.kind === "text" && !n.superseded && (n.role === "user" || n.agent?.depth === 0)
    );
    const lastQuestion = main.filter((n) => n.role === "user" && n.status !== "sending").pop();
    let target = null;
    if (lastQuestion) {
      const after = main.slice(main.indexOf(lastQuestion) + 1);
      target = after.filter((n) => n.role === "agent" && n.runId).pop() || lastQuestion;
      if (target.status === "streaming") target = null;
    }
    if (target === this.retryNode) return;
    const before = this.retryNode;
    this.retryNode = target;
    for (const node of [before, target]) {
      if (node && this.nodes.get(node.id) === node) paintFooter(node, { retry: node === target });
    }
  }

  /** The id of the question "Try again" answers again (the latest turn's user message). */
  retryQuestion() {
    const questions = [...this.nodes.values()].filter(
      (n) => n.kind === "text" && n.role === "user" && !n.superseded && n.status !== "sending"
    );
    return questions.pop()?.id || null;
  }

  /** The user's ratings of this session's answers ({message id: {rating, note}}). */
  setFeedback(byMessage) {
    this.feedback = byMessage || {};
    for (const node of this.nodes.values()) {
      if (node.kind !== "text" || node.role !== "agent") continue;
      node.feedback = this.feedback[node.id] || null;
      paintFooter(node, { retry: node === this.retryNode });
    }
  }

  /** The fold that keeps what a regenerated or edited turn replaced, where it was. */
  foldFor(runId) {
    let fold = this.folds.get(runId);
    if (!fold) {
      const details = el("details", "msg branch");
      details.dataset.branch = runId;
      const one = ngettext("Earlier answer", "Earlier answers (%(count)s)", 1);
      const summary = el("summary", null, interpolate(one, { count: 1 }));
      const thread = el("div", "branch-thread");
      details.append(summary, thread);
      this.root.append(details);
      fold = { details, summary, thread };
      this.folds.set(runId, fold);
    }
    return fold.thread;
  }

  /** With a question in it, a fold is an older version of the conversation (an edit), else an
   * earlier answer (tried again). */
  labelFolds() {
    for (const fold of this.folds.values()) {
      const edited = fold.thread.querySelector(".msg.user");
      const answers = fold.thread.querySelectorAll(":scope > .msg.agent").length;
      fold.summary.textContent = edited
        ? gettext("Earlier version, before your edit")
        : interpolate(ngettext("Earlier answer", "Earlier answers (%(count)s)", answers), {
            count: answers,
          });
    }
  }

  /** "Thinking…" at the end of the transcript until the turn's first event. */
  showThinking(runId = null) {
    this.hideThinking();
    const note = el("div", "msg thinking");
    note.setAttribute("role", "status");
    note.append(el("span", "dots"), el("span", "label", gettext("Thinking…")));
    this.thinkingEl = note;
    this.thinkingRun = runId;
    this.stick(() => this.root.append(note));
  }

  hideThinking() {
    this.thinkingEl?.remove();
    this.thinkingEl = null;
    this.thinkingRun = null;
  }

  /** A user message shown before the server stored it. */
  pendingUser(id, text) {
    const node = this.textNode(id, "user", null, null);
    node.text = text;
    node.status = "sending";
    node.createdAt = Date.now();
    this.stick(() => this.paint(node));
  }

  remove(id) {
    const node = this.nodes.get(id);
    if (!node) return;
    node.el.remove();
    this.nodes.delete(id);
    this.hooks.changed();
  }

  tool(id, runId, agent, tool) {
    let node = this.nodes.get(id);
    if (!node) {
      const wrap = el("div", "msg tool");
      wrap.dataset.messageId = id;
      if (agent) wrap.dataset.depth = agent.depth;
      const details = el("details");
      const summary = el("summary");
      const detail = el("div", "tool-detail");
      details.append(summary, detail);
      wrap.append(details);
      node = { kind: "tool", id, el: wrap, details, summary, detail, tool: {}, expectOpen: false };
      watchToggle(node, (open) => this.userToggled.set(id, open));
      this.nodes.set(id, node);
      this.threadFor(runId, agent).append(wrap);
    }
    node.tool = { ...node.tool, ...tool };
    const t = node.tool;
    const state = t.ok === undefined || t.ok === null ? "running" : t.ok ? "done" : "error";
    node.el.dataset.status = state;
    if (typeof t.summary === "string" && t.summary) {
      // The server's sentence in the reader's language is the whole chip ("Searched Finance
      // documents: 3 passages"); the call's name, arguments and JSON are one click away.
      // Text only: a `*` in it stays a `*`.
      node.summary.replaceChildren(
        el("span", "tool-result tool-state", STATE_MARKS[state]),
        el("span", "tool-summary", chipText(t, state))
      );
      node.summary.title = t.summary;
    } else {
      const args = typeof t.arguments === "string" ? t.arguments : JSON.stringify(t.arguments ?? {});
      // A result that says what happened in words (planner tools' `message`) is the whole chip;
      // the arguments and the JSON are one click away.
      const said = t.ok && typeof t.result?.message === "string" && t.result.message;
      node.summary.replaceChildren(
        el("span", "tool-name", t.name || "tool"),
        ...(said ? [] : [el("span", "tool-args", `(${compact(args)})`)]),
        el("span", "tool-result", ` → ${shortResult(t)}`)
      );
    }
    const parts = [
      el("div", "label", gettext("Arguments")),
      el("pre", "tool-raw-args", pretty(t.arguments ?? {})),
    ];
    if (t.summary && t.name) parts.unshift(el("div", "label tool-key", t.name));
    if (state !== "running") {
      parts.push(el("div", "label", t.ok ? gettext("Result") : gettext("Error")));
      parts.push(el("pre", "tool-raw-result", pretty(t.ok ? t.result : t.error)));
    }
    node.detail.replaceChildren(...parts);
    setOpen(node, this.userToggled.get(id) ?? false);
    paintHumanWait(node, t); // a call waiting for a person (static/chat/humans.js)
    paintOpenUrl(node, t);
    paintUndo(node, t); // an undo the result offers (static/chat/undo.js)
    return node;
  }

  /** The panel of one delegation (created once; later calls update it). */
  delegation(id, callerRunId, callerAgent, info) {
    let node = this.nodes.get(id);
    const runKey = info.run_id || id;
    if (!node) {
      const depth = info.depth ?? (callerAgent ? callerAgent.depth + 1 : 1);
      const section = el("section", "msg delegation");
      section.dataset.messageId = id;
      section.dataset.depth = depth;
      const details = el("details");
      const summary = el("summary");
      const who = el("span", "who", info.display_name || info.target || gettext("Expert"));
      const state = el("span", "state");
      const duration = el("span", "duration");
      summary.append(who, state, duration);
      const task = el("p", "task");
      const noteEl = el("p", "note");
      const thread = el("div", "thread");
      details.append(summary, task, noteEl, thread);
      const outcomeEl = el("p", "outcome");
      section.append(details, outcomeEl);
      node = { kind: "delegation", id, el: section, details, runKey };
      Object.assign(node, { who, state, duration, task, noteEl, thread, outcomeEl });
      node.expectOpen = false;
      watchToggle(node, (open) => this.userToggled.set(node.runKey, open));
      this.nodes.set(id, node);
      const orphan = info.run_id ? this.panels.get(info.run_id) : null;
      if (orphan && orphan !== node) {
        thread.append(...orphan.thread.childNodes); // adopt what arrived before the delegation
        orphan.el.remove();
        this.nodes.delete(orphan.id);
      }
      this.threadFor(callerRunId, callerAgent).append(section);
      setOpen(node, this.userToggled.get(runKey) ?? info.status === "running");
    }
    Object.assign(node, {
      runKey,
      info: { ...node.info, ...info },
      status: info.status,
      startedAt: node.startedAt ?? info.startedAt,
      endedAt: info.endedAt ?? node.endedAt ?? null,
      outcome: info.outcome ?? node.outcome ?? null,
      summary: info.summary ?? node.summary ?? null,
    });
    if (info.run_id) {
      this.threads.set(info.run_id, node.thread);
      this.panels.set(info.run_id, node);
    }
    if (node.status !== "running" && !this.userToggled.has(runKey)) setOpen(node, false);
    this.paintDelegation(node);
    return node;
  }

  paintDelegation(node) {
    const name = node.info.display_name || node.info.target || gettext("Expert");
    node.el.dataset.status = node.status;
    node.who.textContent = name;
    const word = STATUS_WORDS[node.status] || node.status;
    const asking = interpolate(gettext("Asking %(expert)s…"), { expert: name });
    // The server's sentence ("Asking Finance…", "Finance answered", "Could not ask …") names
    // the expert itself: it is the whole header.
    node.who.hidden = Boolean(node.summary);
    node.state.textContent = node.summary || (node.status === "running" ? asking : word);
    const task = interpolate(gettext("Task: %(task)s"), { task: node.info.task || "" });
    node.task.textContent = node.info.task ? task : "";
    node.task.hidden = !node.info.task;
    const note = node.status === "running" ? node.note || "" : "";
    node.noteEl.textContent = note;
    node.noteEl.hidden = !note;
    // A sentence in the header already says how it ended; the outcome line adds the detail
    // only when it says more.
    const outcome = node.outcome && !(node.summary || "").includes(node.outcome) ? node.outcome : "";
    node.outcomeEl.textContent = outcome;
    node.outcomeEl.hidden = !outcome;
    this.paintDuration(node);
  }

  paintDuration(node) {
    const end = node.status === "running" ? Date.now() : node.endedAt;
    const known = node.startedAt && end && node.status !== "refused"; // a refused one never ran
    node.duration.textContent = known ? formatDuration(end - node.startedAt) : "";
  }

  tick() {
    for (const node of this.panels.values()) {
      if (node.status === "running") this.paintDuration(node);
    }
  }

  // ---- clicks inside messages ---------------------------------------------------------

  onClick(e) {
    const cite = e.target.closest(".cite-chip, .cite-ref");
    if (cite) {
      e.preventDefault();
      const node = this.nodes.get(cite.closest(".msg")?.dataset.messageId);
      const citation = node?.citations?.find((c) => String(c.ref) === cite.dataset.ref);
      if (citation) this.hooks.cite?.(citation, node.text, cite);
      return;
    }
    const copy = e.target.closest("button.copy");
    if (copy) {
      const code = copy.closest(".code-block")?.querySelector("code");
      if (code) copyText(code.textContent, copy, code);
      return;
    }
    const action = e.target.closest("button[data-action]");
    if (action) {
      const node = this.nodes.get(action.closest(".msg")?.dataset.messageId);
      if (!node) return;
      if (action.dataset.action === "copy") copyText(node.text, action, node.body);
      else this.hooks.action?.(action.dataset.action, node, action);
      return;
    }
    const load = e.target.closest("button.load-image");
    if (load) {
      const url = safeUrl(load.dataset.src, ["http:", "https:"]);
      if (!url) return;
      this.loadedImages.add(url.href);
      load.replaceWith(loadedImage(url, load.dataset.alt));
    }
  }
}

/** Copy `text`; without clipboard access, select `shown` for Ctrl+C. The button says which
 * (its label for icon buttons, its text otherwise) for a moment. */
async function copyText(text, button, shown) {
  const icon = button.classList.contains("icon-btn");
  const say = (words) => {
    if (icon) {
      button.setAttribute("aria-label", words);
      button.title = words;
      button.dataset.done = words === gettext("Copy") ? "" : "1";
    } else {
      button.textContent = words;
    }
  };
  try {
    await navigator.clipboard.writeText(text);
    say(gettext("Copied"));
  } catch {
    const range = document.createRange();
    range.selectNodeContents(shown);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    say(gettext("Selected"));
  }
  setTimeout(() => say(gettext("Copy")), 1500);
}
