// Human waits in the chat page (docs/humans.md): a tool call that waits for a person carries
// `tool.human` (docs/protocol.md). Its tool message shows the state in the tree, and a card
// above the composer surfaces it even from a collapsed expert panel: "Waiting for approval
// from the Finance team…" with a Cancel button, or the agent's question to the user with its
// options as buttons and a free answer. Answers and cancels go through the REST API; the run
// then resumes and its tool.result repaints the message.

import { api } from "./api.js";
import { gettext, interpolate } from "./i18n.js";

const cards = new Map(); // inbox item id -> {card, node}
let area = null;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function stylesheet() {
  if (document.getElementById("humans-css")) return;
  const link = document.createElement("link");
  link.id = "humans-css";
  link.rel = "stylesheet";
  link.href = new URL("./humans.css", import.meta.url).href;
  document.head.append(link);
}

/** The card area above the composer (created once; cards of other chats are pruned). */
function waitsArea() {
  if (area?.isConnected) return area;
  stylesheet();
  area = el("section", "human-waits");
  area.setAttribute("aria-label", gettext("Waiting for a person"));
  area.setAttribute("aria-live", "polite");
  const composer = document.querySelector(".composer-wrap");
  if (composer) composer.before(area);
  else document.body.append(area);
  setInterval(prune, 500);
  return area;
}

function prune() {
  for (const [id, entry] of cards) {
    if (!entry.node.el.isConnected) {
      entry.card.remove();
      cards.delete(id);
    }
  }
}

/** The tool's name for people (the server's label; the key, humanised, from an older one). */
function toolName(human, tool) {
  return human.tool_label || String(tool || "").replace(/^.*\./, "").replace(/_/g, " ");
}

function waitingText(human, tool) {
  if (human.kind === "tool_approval") {
    return interpolate(gettext("Waiting for approval from %(who)s: %(tool)s…"), {
      who: human.waiting_for,
      tool: toolName(human, tool),
    });
  }
  return interpolate(gettext("Waiting for an answer from %(who)s…"), { who: human.waiting_for });
}

const DONE = {
  answered: gettext("Answered"),
  approved: gettext("Approved"),
  modified: gettext("Approved with changes"),
  rejected: gettext("Rejected"),
  expired: gettext("No answer in time"),
  cancelled: gettext("Cancelled"),
};

function doneText(human) {
  const by = human.decided_by ? interpolate(gettext(" by %(who)s"), { who: human.decided_by }) : "";
  const said = human.answer ? `: “${human.answer}”` : human.note ? ` (${human.note})` : "";
  return `${DONE[human.status] || human.status}${by}${said}`;
}

/** Paint the wait of one tool message (called by render.js for every tool message). */
export function paintHumanWait(node, tool) {
  const human = tool.human;
  if (!human) return;
  let line = node.el.querySelector(":scope > .human-state");
  if (!line) {
    line = el("p", "human-state");
    node.el.append(line);
  }
  node.el.dataset.human = human.status;
  const pending = human.status === "pending" && (tool.ok === undefined || tool.ok === null);
  line.textContent = pending ? (human.audience === "user" ? human.question : waitingText(human, tool.name)) : doneText(human);
  const known = cards.get(human.item_id);
  if (!pending) {
    known?.card.remove();
    cards.delete(human.item_id);
    return;
  }
  if (known) return;
  const card = human.audience === "user" ? questionCard(human) : waitCard(human, tool.name);
  card.dataset.itemId = human.item_id;
  cards.set(human.item_id, { card, node });
  waitsArea().append(card);
}

function questionCard(human) {
  const card = el("div", "human-card question");
  card.append(el("p", "human-question", human.question));
  const choices = el("div", "human-options");
  for (const option of human.options || []) {
    const button = el("button", "human-option", option);
    button.type = "button";
    button.addEventListener("click", () => answer(card, human, option));
    choices.append(button);
  }
  const form = el("form", "human-free");
  const input = el("input");
  input.type = "text";
  input.placeholder = human.options?.length ? gettext("Or type another answer") : gettext("Your answer");
  input.setAttribute("aria-label", gettext("Your answer"));
  const send = el("button", "human-send", gettext("Answer"));
  send.type = "submit";
  form.append(input, send);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (input.value.trim()) answer(card, human, input.value.trim());
  });
  card.append(choices, form, cancelButton(card, human), el("p", "human-error"));
  return card;
}

function waitCard(human, toolName) {
  const card = el("div", "human-card wait");
  card.append(el("p", "human-waiting", waitingText(human, toolName)));
  if (human.question) card.append(el("p", "human-question", human.question));
  card.append(
    el("p", "human-hint", gettext("You can keep chatting meanwhile; the answer will appear here.")),
    cancelButton(card, human, gettext("Cancel")),
    el("p", "human-error"),
  );
  return card;
}

function cancelButton(card, human, label = gettext("Cancel request")) {
  const button = el("button", "human-cancel", label);
  button.setAttribute("aria-label", gettext("Cancel this request"));
  button.type = "button";
  button.addEventListener("click", () =>
    act(card, `/api/v1/inbox/${encodeURIComponent(human.item_id)}/cancel/`, undefined),
  );
  return button;
}

function answer(card, human, text) {
  act(card, `/api/v1/inbox/${encodeURIComponent(human.item_id)}/decision/`, {
    decision: "approve",
    answer: text,
  });
}

async function act(card, url, body) {
  const error = card.querySelector(".human-error");
  error.textContent = "";
  for (const button of card.querySelectorAll("button")) button.disabled = true;
  try {
    const item = await api("POST", url, body);
    card.replaceChildren(el("p", "human-done", doneText({ ...item, answer: item.answer })));
    card.dataset.status = item.status;
  } catch (e) {
    error.textContent = e.message;
    for (const button of card.querySelectorAll("button")) button.disabled = false;
  }
}
