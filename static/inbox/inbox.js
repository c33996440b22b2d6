// The staff inbox (/inbox/): questions and tool approvals waiting for a person. The list comes
// with the page, then follows inbox.new_item / inbox.item_decided over the chat websocket and
// converges on GET /api/v1/inbox/ after every reconnect. Decisions go through the REST API
// (docs/humans.md). Every text is set with textContent: nothing an agent wrote becomes HTML.

import { api } from "../chat/api.js";

const root = document.getElementById("inbox");
const list = document.getElementById("inbox-items");
const done = document.getElementById("inbox-done");
const empty = document.getElementById("inbox-empty");
const status = document.getElementById("inbox-status");
const cards = new Map(); // item id -> {item, el}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function when(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString();
}

function left(iso) {
  const ms = Date.parse(iso) - Date.now();
  if (Number.isNaN(ms)) return "";
  if (ms <= 0) return "past its deadline";
  const minutes = Math.round(ms / 60000);
  if (minutes < 60) return `${minutes} min left`;
  const hours = Math.round(minutes / 60);
  return hours < 48 ? `${hours} h left` : `${Math.round(hours / 24)} d left`;
}

const DONE_WORDS = {
  answered: "Answered",
  approved: "Approved",
  modified: "Approved with changed arguments",
  rejected: "Rejected",
  expired: "Expired: nobody decided in time",
  cancelled: "Cancelled by the user, or the turn stopped",
};

function render(item) {
  const known = cards.get(item.id);
  const card = el("li", "inbox-item");
  card.dataset.itemId = item.id;
  card.dataset.status = item.status;
  card.dataset.urgency = item.urgency;
  const meta = el("div", "meta");
  const kind = item.kind === "question" ? "Question" : `Approval: ${item.tool}`;
  meta.append(
    el("span", "kind", kind),
    el("span", "who", `${item.agent.display_name} (${item.agent.path.join(" → ")})`),
    el("span", "behalf", `for ${item.on_behalf_of}`),
    el("span", "created", when(item.created_at)),
    el("span", "deadline", item.status === "pending" ? left(item.deadline) : ""),
  );
  if (item.group) meta.append(el("span", "group", `team: ${item.group}`));
  if (item.urgency !== "normal") meta.append(el("span", "urgency", `${item.urgency} urgency`));
  card.append(meta);
  if (item.kind === "question") card.append(el("p", "question", item.question));
  else card.append(el("pre", "arguments", JSON.stringify(item.final_arguments ?? item.arguments, null, 2)));
  if (item.status === "pending") card.append(actions(item));
  else {
    const by = item.decided_by ? ` by ${item.decided_by}` : "";
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
  note.placeholder = "Note (optional; the agent reads it on a rejection)";
  note.setAttribute("aria-label", "Note");
  const send = async (body, button) => {
    error.hidden = true;
    for (const b of box.querySelectorAll("button")) b.disabled = true;
    button.textContent = "Sending…";
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
    answer.placeholder = "Your answer";
    answer.setAttribute("aria-label", "Your answer");
    for (const option of item.options || []) {
      buttons.append(button(option, "option", () => ({ decision: "approve", answer: option })));
    }
    buttons.append(
      button("Send answer", "primary", () => ({ decision: "approve", answer: answer.value })),
      button("Decline", "danger", () => ({ decision: "reject", note: note.value })),
    );
    box.append(answer, note, buttons, error);
    return box;
  }
  const edited = el("textarea", "arguments");
  edited.value = JSON.stringify(item.arguments, null, 2);
  edited.hidden = true;
  edited.setAttribute("aria-label", "Arguments to run with");
  const modify = el("button", null, "Modify…");
  modify.type = "button";
  modify.dataset.label = "Run with these arguments";
  modify.addEventListener("click", () => {
    if (edited.hidden) {
      edited.hidden = false;
      modify.textContent = modify.dataset.label;
      return;
    }
    let parsed;
    try {
      parsed = JSON.parse(edited.value);
    } catch (e) {
      error.textContent = `The arguments are not JSON: ${e.message}`;
      error.hidden = false;
      return;
    }
    send({ decision: "modify", arguments: parsed, note: note.value }, modify);
  });
  buttons.append(
    button("Approve", "primary", () => ({ decision: "approve", note: note.value })),
    modify,
    button("Reject", "danger", () => ({ decision: "reject", note: note.value })),
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

function connect(delay = 500) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}${root.dataset.wsPath}`);
  status.dataset.state = "connecting";
  status.textContent = "connecting…";
  socket.addEventListener("open", () => {
    status.dataset.state = "connected";
    status.textContent = "live";
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
    status.dataset.state = "reconnecting";
    status.textContent = "reconnecting…";
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
