// The footer of a message: when it was written (shown on hover), the tokens and cost of an
// answer, and its actions: copy, read aloud (answers, when the server can speak: voice.js), edit
// (your messages), try again (the latest turn), thumbs up or down with an optional note
// (answers). Buttons carry `data-action`; the transcript routes
// clicks to the page (main.js), which calls the REST API.

import { gettext, interpolate, language, ngettext } from "./i18n.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function actionButton(action, label, pressed = null) {
  const button = el("button", `icon-btn act act-${action}`);
  button.type = "button";
  button.dataset.action = action;
  button.setAttribute("aria-label", label);
  button.title = label;
  if (pressed !== null) button.setAttribute("aria-pressed", String(pressed));
  return button;
}

// The server reads answers aloud (TTS_MODEL is set, docs/voice.md).
const speech = Boolean(document.getElementById("app")?.dataset.speechUrl);

const sameDay = (a, b) => a.toDateString() === b.toDateString();

/** "14:03" today, "3 Mar, 14:03" this year, "3 Mar 2025, 14:03" before; and the full form. */
export function formatWhen(ms) {
  const date = new Date(ms);
  const now = new Date();
  const clock = { hour: "2-digit", minute: "2-digit" };
  let options = clock;
  if (!sameDay(date, now)) {
    options = { ...clock, day: "numeric", month: "short" };
    if (date.getFullYear() !== now.getFullYear()) options.year = "numeric";
  }
  const full = { dateStyle: "full", timeStyle: "short" };
  return {
    short: new Intl.DateTimeFormat(language, options).format(date),
    full: new Intl.DateTimeFormat(language, full).format(date),
  };
}

/** "1,234 tokens · US$0.0012" from a message's usage; "" when it has none. */
export function formatUsage(usage) {
  if (!usage) return "";
  const tokens = (usage.prompt_tokens || 0) + (usage.completion_tokens || 0);
  const parts = [];
  if (tokens) {
    const count = tokens.toLocaleString(language);
    parts.push(interpolate(ngettext("%(count)s token", "%(count)s tokens", tokens), { count }));
  }
  const cost = Number(usage.cost);
  // A free model (the offline one) costs 0: not worth a line.
  if (usage.cost !== undefined && usage.cost !== null && usage.currency && cost > 0) {
    try {
      const money = { style: "currency", currency: usage.currency, maximumSignificantDigits: 2 };
      parts.push(new Intl.NumberFormat(language, money).format(cost));
    } catch {
      parts.push(`${usage.cost} ${usage.currency}`); // a currency code Intl does not know
    }
  }
  return parts.join(" · ");
}

/** (Re)build the footer of a text message. `retry`: this message offers "Try again". */
export function paintFooter(node, { retry = false } = {}) {
  const final = !["streaming", "sending"].includes(node.status);
  const main = node.role === "user" || node.agent?.depth === 0;
  if (!final || !main) {
    node.footer?.remove();
    node.footer = null;
    return;
  }
  const rating = node.feedback?.rating || "";
  const key = [node.createdAt, node.status, node.edited, node.superseded, node.scheduled, retry]
    .concat([formatUsage(node.usage), Boolean(node.text), rating, node.role])
    .join("|");
  if (node.footer?.isConnected && node.footerKey === key) return; // unchanged: keep its buttons
  node.footerKey = key;
  const footer = node.footer ?? el("footer", "msg-foot");
  const parts = [];
  if (node.createdAt) {
    const when = formatWhen(node.createdAt);
    const time = el("time", "when", when.short);
    time.dateTime = new Date(node.createdAt).toISOString();
    time.title = when.full;
    parts.push(time);
  }
  if (node.edited) parts.push(el("span", "edited-label", gettext("edited")));
  const usage = node.role === "agent" ? formatUsage(node.usage) : "";
  if (usage) parts.push(el("span", "usage", usage));
  if (node.text) parts.push(actionButton("copy", gettext("Copy")));
  if (speech && node.role === "agent" && node.status === "completed" && node.text) {
    const label = node.speaking ? gettext("Stop reading aloud") : gettext("Read aloud");
    const button = actionButton("speak", label, Boolean(node.speaking));
    if (node.speaking) button.dataset.state = node.speaking;
    parts.push(button);
  }
  if (node.role === "user" && !node.superseded && !node.scheduled) {
    parts.push(actionButton("edit", gettext("Edit and send again")));
  }
  if (retry) parts.push(actionButton("retry", gettext("Try again")));
  if (node.role === "agent" && node.status === "completed" && node.runId) {
    parts.push(actionButton("up", gettext("Good answer"), rating === "up"));
    parts.push(actionButton("down", gettext("Bad answer"), rating === "down"));
  }
  footer.replaceChildren(...parts);
  if (!footer.isConnected) node.el.append(footer);
  node.footer = footer;
}

const ACK_SECONDS = 4;

/** A short visible acknowledgement at the end of a message's footer ("Thanks for the
 * feedback."); screen readers hear it from the page's announcer, so it is hidden from them. */
export function acknowledge(node, text) {
  if (!node.footer) return;
  node.footer.querySelector(".ack")?.remove();
  const ack = el("span", "ack", text);
  ack.setAttribute("aria-hidden", "true");
  node.footer.append(ack);
  setTimeout(() => ack.remove(), ACK_SECONDS * 1000);
}

/** The optional note after a rating: a small form under the answer (Enter sends, Escape
 * closes). */
export function noteForm(node) {
  node.noteForm?.remove();
  const form = el("form", "feedback-note");
  const id = `note-${node.id}`;
  const label = el("label", null, gettext("Tell us more (optional)"));
  label.htmlFor = id;
  const box = el("textarea");
  box.id = id;
  box.rows = 2;
  box.maxLength = 2000;
  box.value = node.feedback?.note || "";
  const send = el("button", "primary", gettext("Send feedback"));
  send.type = "submit";
  const skip = el("button", "secondary", gettext("Skip"));
  skip.type = "button";
  skip.dataset.action = "note-skip";
  const row = el("div", "row");
  row.append(send, skip);
  form.append(label, box, row);
  node.el.append(form);
  node.noteForm = form;
  box.focus();
  return form;
}

/** The inline editor of a sent message; resolves to the new text, or null when cancelled. */
export function editForm(node) {
  const form = el("form", "edit-form");
  const box = el("textarea");
  box.value = node.text;
  box.rows = Math.min(8, Math.max(2, node.text.split("\n").length));
  box.setAttribute("aria-label", gettext("Edit your message"));
  const send = el("button", "primary", gettext("Send"));
  send.type = "submit";
  const cancel = el("button", "secondary", gettext("Cancel"));
  cancel.type = "button";
  const row = el("div", "row");
  row.append(cancel, send);
  form.append(box, row);
  node.body.hidden = true;
  node.footer?.setAttribute("hidden", "");
  node.body.after(form);
  box.focus();
  box.setSelectionRange(box.value.length, box.value.length);
  return new Promise((resolve) => {
    const done = (value) => {
      form.remove();
      node.body.hidden = false;
      node.footer?.removeAttribute("hidden");
      resolve(value);
    };
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      if (box.value.trim()) done(box.value);
    });
    cancel.addEventListener("click", () => done(null));
    box.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.preventDefault();
        done(null);
      } else if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
  });
}
