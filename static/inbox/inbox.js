// The staff inbox (/inbox/): questions and tool approvals waiting for a person. The list comes
// with the page, then follows inbox.new_item / inbox.item_decided over the chat websocket and
// converges on GET /api/v1/inbox/ after every reconnect. Decisions go through the REST API
// (docs/humans.md). Every text is set with textContent: nothing an agent wrote becomes HTML.
// Every string is translated (the /jsi18n/ catalog through static/chat/i18n.js); times are in
// the viewer's time zone; tools and agents by their names for people, with the raw arguments
// one click away.

import { api } from "../chat/api.js";
import { gettext, interpolate, language } from "../chat/i18n.js";

const root = document.getElementById("inbox");
const list = document.getElementById("inbox-items");
const done = document.getElementById("inbox-done");
const empty = document.getElementById("inbox-empty");
const status = document.getElementById("inbox-status");
const cards = new Map(); // item id -> {item, el}
const dates = new Intl.DateTimeFormat(language, { dateStyle: "medium", timeStyle: "short" });
const relative = new Intl.RelativeTimeFormat(language, { numeric: "auto" });

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A moment in the viewer's time zone, as their language writes it. */
function when(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "" : dates.format(date);
}

/** How long is left until the deadline: "in 45 minutes", "in 3 hours"… */
function left(iso) {
  const ms = Date.parse(iso) - Date.now();
  if (Number.isNaN(ms)) return "";
  if (ms <= 0) return gettext("past its deadline");
  const minutes = Math.round(ms / 60000);
  let span;
  if (minutes < 60) span = relative.format(minutes, "minute");
  else if (minutes < 48 * 60) span = relative.format(Math.round(minutes / 60), "hour");
  else span = relative.format(Math.round(minutes / 1440), "day");
  return interpolate(gettext("deadline %(when)s"), { when: span });
}

const DONE_WORDS = {
  answered: gettext("Answered"),
  approved: gettext("Approved"),
  modified: gettext("Approved with changed arguments"),
  rejected: gettext("Rejected"),
  expired: gettext("Expired: nobody decided in time"),
  cancelled: gettext("Cancelled by the user, or the turn stopped"),
};

const URGENCY = { high: gettext("Urgent"), low: gettext("Low urgency") };

/** The tool's name for people (the server's label; the key, humanised, from an older server). */
function toolName(item) {
  return item.tool_label || (item.tool || "").replace(/^.*\./, "").replace(/_/g, " ");
}

/** An argument's value in plain words: text as is, lists joined, objects as short JSON. */
function plain(value) {
  if (value === null || value === undefined || value === "") return "—";
  if (typeof value === "boolean") return value ? gettext("yes") : gettext("no");
  if (Array.isArray(value) && value.every((v) => typeof v !== "object")) {
    return value.join(language.startsWith("zh") ? "、" : ", ");
  }
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** The call's arguments as a readable list, with the exact JSON behind a toggle. */
function argumentsView(item) {
  const args = item.final_arguments ?? item.arguments ?? {};
  const box = el("div", "call");
  const rows = el("dl", "call-args");
  for (const [key, value] of Object.entries(args)) {
    const name = key.replace(/_/g, " ");
    rows.append(el("dt", null, name.charAt(0).toUpperCase() + name.slice(1)), el("dd", null, plain(value)));
  }
  if (!rows.childElementCount) rows.append(el("dd", null, gettext("(no details)")));
  const raw = el("details", "raw");
  raw.append(
    el("summary", null, gettext("Show the exact request")),
    el("pre", "arguments", JSON.stringify(args, null, 2)),
  );
  box.append(rows, raw);
  return box;
}

function render(item) {
  const known = cards.get(item.id);
  const card = el("li", "inbox-item");
  card.dataset.itemId = item.id;
  card.dataset.status = item.status;
  card.dataset.urgency = item.urgency;
  const meta = el("div", "meta");
  const kind =
    item.kind === "question"
      ? gettext("Question")
      : interpolate(gettext("Asks to: %(tool)s"), { tool: toolName(item) });
  meta.append(
    el("span", "kind", kind),
    el("span", "who", item.agent.display_name),
    el("span", "behalf", interpolate(gettext("for %(user)s"), {
      user: item.on_behalf_of_name || item.on_behalf_of,
    })),
    el("time", "created", when(item.created_at)),
    el("span", "deadline", item.status === "pending" ? left(item.deadline) : ""),
  );
  meta.querySelector("time").dateTime = item.created_at;
  meta.querySelector(".deadline").title = when(item.deadline);
  if (item.group) meta.append(el("span", "group", interpolate(gettext("team: %(group)s"), { group: item.group })));
  if (URGENCY[item.urgency]) meta.append(el("span", "urgency", URGENCY[item.urgency]));
  card.append(meta);
  if (item.kind === "question") card.append(el("p", "question", item.question));
  else card.append(argumentsView(item));
  if (item.status === "pending") card.append(actions(item));
  else {
    const by = item.decided_by ? interpolate(gettext(" by %(who)s"), { who: item.decided_by }) : "";
    const said = item.answer ? `: “${item.answer}”` : item.note ? ` (${item.note})` : "";
    card.append(el("p", "outcome", `${DONE_WORDS[item.status] || item.status}${by}${said}`));
  }
  if (known) known.el.replaceWith(card);
  cards.set(item.id, { item, el: card });
  return card;
}

function actions(item) {
  const box = el("div", "decide");
  const error = el("p", "error");
  error.hidden = true;
  const buttons = el("div", "actions");
  const note = el("input");
  note.type = "text";
  note.placeholder = gettext("Note (optional; the agent reads it on a rejection)");
  note.setAttribute("aria-label", gettext("Note"));
  const send = async (body, button) => {
    error.hidden = true;
    for (const b of box.querySelectorAll("button")) b.disabled = true;
    button.textContent = gettext("Sending…");
    try {
      update(await api("POST", `/api/v1/inbox/${item.id}/decision/`, body));
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
      for (const b of box.querySelectorAll("button")) b.disabled = false;
      button.textContent = button.dataset.label;
      if (e.status === 409) refresh();
    }
  };
  const button = (label, className, body) => {
    const b = el("button", className, label);
    b.type = "button";
    b.dataset.label = label;
    b.addEventListener("click", () => send(body(), b));
    return b;
  };
  if (item.kind === "question") {
    const answer = el("textarea");
    answer.rows = 2;
    answer.placeholder = gettext("Your answer");
    answer.setAttribute("aria-label", gettext("Your answer"));
    for (const option of item.options || []) {
      buttons.append(button(option, "option", () => ({ decision: "approve", answer: option })));
    }
    buttons.append(
      button(gettext("Send answer"), "primary", () => ({ decision: "approve", answer: answer.value })),
      button(gettext("Decline"), "danger", () => ({ decision: "reject", note: note.value })),
    );
    box.append(answer, note, buttons, error);
    return box;
  }
  const edited = el("textarea", "arguments");
  edited.value = JSON.stringify(item.arguments, null, 2);
  edited.hidden = true;
  edited.setAttribute("aria-label", gettext("Arguments to run with"));
  const modify = el("button", null, gettext("Change the details…"));
  modify.type = "button";
  modify.dataset.label = gettext("Run with these details");
  modify.addEventListener("click", () => {
    if (edited.hidden) {
      edited.hidden = false;
      modify.textContent = modify.dataset.label;
      return;
    }
    let parsed;
    try {
      parsed = JSON.parse(edited.value);
    } catch {
      error.textContent = gettext("The details are not valid JSON; check quotes and commas.");
      error.hidden = false;
      return;
    }
    send({ decision: "modify", arguments: parsed, note: note.value }, modify);
  });
  buttons.append(
    button(gettext("Approve"), "primary", () => ({ decision: "approve", note: note.value })),
    modify,
    button(gettext("Reject"), "danger", () => ({ decision: "reject", note: note.value })),
  );
  box.append(edited, note, buttons, error);
  return box;
}

function update(item) {
  const card = render(item);
  if (item.status === "pending") {
    if (card.parentElement !== list) list.append(card);
  } else if (card.parentElement !== done) {
    done.prepend(card);
  }
  empty.hidden = list.childElementCount > 0;
}

async function refresh() {
  try {
    const page = await api("GET", "/api/v1/inbox/?status=pending");
    const pending = new Set(page.results.map((item) => item.id));
    for (const [id, card] of cards) {
      if (card.item.status === "pending" && !pending.has(id)) {
        const fresh = await api("GET", `/api/v1/inbox/${id}/`).catch(() => null);
        if (fresh) update(fresh);
        else card.el.remove();
      }
    }
    for (const item of page.results) if (item.audience === "staff") update(item);
  } catch {
    // offline: the socket's reconnect tries again
  }
}

function showStatus(state) {
  const words = {
    connecting: gettext("connecting…"),
    connected: gettext("live"),
    reconnecting: gettext("reconnecting…"),
  };
  status.dataset.state = state;
  status.textContent = words[state];
}

function connect(delay = 500) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}${root.dataset.wsPath}`);
  showStatus("connecting");
  socket.addEventListener("open", () => {
    showStatus("connected");
    delay = 500;
    refresh();
  });
  socket.addEventListener("message", (e) => {
    let ev;
    try {
      ev = JSON.parse(e.data);
    } catch {
      return;
    }
    if (ev.type === "inbox.new_item" || ev.type === "inbox.item_decided") update(ev.data.item);
  });
  socket.addEventListener("close", (e) => {
    if (e.code === 4401) {
      location.href = `/admin/login/?next=${encodeURIComponent(location.pathname)}`;
      return;
    }
    showStatus("reconnecting");
    setTimeout(() => connect(Math.min(delay * 2, 10000)), delay / 2 + Math.random() * (delay / 2));
  });
}

for (const item of JSON.parse(document.getElementById("inbox-data").textContent)) update(item);
setInterval(() => {
  for (const { item, el: card } of cards.values()) {
    if (item.status === "pending") card.querySelector(".deadline").textContent = left(item.deadline);
  }
}, 30000);
connect();
