// The tasks page (/tasks/): the user's tasks and reminders, grouped upcoming / overdue / done.
// The list comes with the page (#planner-data), edits go through /api/v1/planner/ and each
// answer redraws the whole list from the server (the database is the truth). Every text is
// set with textContent: nothing a model or a user wrote becomes HTML.

import { api } from "../chat/api.js";
import { gettext, interpolate } from "../chat/i18n.js";
import { button, el, field, say } from "./page.js";

const root = document.getElementById("planner");
const base = root.dataset.api;
const lists = {
  upcoming: document.getElementById("upcoming"),
  overdue: document.getElementById("overdue"),
  done: document.getElementById("done"),
};

function reminderLine(reminder) {
  if (!reminder) return gettext("No reminder");
  const values = { when: reminder.text };
  if (reminder.status === "pending") return interpolate(gettext("Reminder %(when)s"), values);
  if (reminder.status === "sent") return interpolate(gettext("Reminded %(when)s"), values);
  if (reminder.status === "cancelled") return gettext("Reminder cancelled");
  return gettext("The reminder could not be delivered");
}

function statusBadge(item) {
  if (item.kind === "task") return item.status === "done" ? gettext("Done") : "";
  if (item.status === "cancelled") return gettext("Cancelled");
  if (item.status === "sent") return gettext("Sent");
  if (item.status === "failed") return gettext("Failed");
  return "";
}

function render(item) {
  const card = el("li", "planner-item");
  card.dataset.kind = item.kind;
  card.dataset.id = item.id;
  card.dataset.group = item.group;
  const head = el("div", "item-head");
  head.append(el("h3", "item-title", item.title));
  const badge = statusBadge(item);
  if (badge) head.append(el("span", "badge", badge));
  card.append(head);
  if (item.kind === "task") {
    card.append(el("p", "item-when", `${item.day} · ${item.when}`));
  }
  const reminder = el("p", "item-reminder", reminderLine(item.reminder));
  if (item.reminder?.status) reminder.dataset.status = item.reminder.status;
  card.append(reminder);
  const actions = el("div", "item-actions");
  if (item.chat) {
    const link = el("a", "chat-link", gettext("Open its chat"));
    link.href = item.chat.url;
    actions.append(link);
  }
  if (item.kind === "task" && item.status === "pending") {
    actions.append(
      button(gettext("Edit"), "secondary", () => openEditor(card, item)),
      button(gettext("Mark done"), "primary", () => act("POST", `tasks/${item.id}/complete/`)),
      button(gettext("Delete"), "danger", () => remove(item)),
    );
  } else if (item.kind === "task") {
    actions.append(button(gettext("Delete"), "danger", () => remove(item)));
  } else if (item.status === "pending") {
    actions.append(
      button(gettext("Change time"), "secondary", () => openEditor(card, item)),
      button(gettext("Cancel reminder"), "danger", () =>
        act("POST", `reminders/${item.id}/cancel/`),
      ),
    );
  }
  card.append(actions);
  return card;
}

function input(type, value, name) {
  const node = el("input");
  node.type = type;
  node.name = name;
  node.value = value || "";
  return node;
}

function openEditor(card, item) {
  card.querySelector("form")?.remove();
  const form = el("form", "editor");
  const inputs = {};
  if (item.kind === "task") {
    inputs.title = input("text", item.title, "title");
    inputs.title.required = true;
    inputs.title.maxLength = 200;
    inputs.date = input("date", item.date, "date");
    inputs.date.required = true;
    inputs.start = input("time", item.start, "start");
    inputs.end = input("time", item.end, "end");
    form.append(
      field(gettext("Title"), inputs.title),
      field(gettext("Day"), inputs.date),
      field(gettext("Starts"), inputs.start),
      field(gettext("Ends"), inputs.end),
    );
  }
  const pendingAt = item.reminder?.status === "pending" ? item.reminder.remind_at : "";
  inputs.remind_at = input("datetime-local", pendingAt, "remind_at");
  inputs.remind_at.required = item.kind === "reminder";
  const hint = item.kind === "task" ? gettext("Empty: no reminder") : "";
  const remind = field(gettext("Remind me at"), inputs.remind_at);
  if (hint) remind.append(el("small", "field-hint", hint));
  form.append(remind);
  const notice = el("p", "editor-notice");
  notice.setAttribute("role", "alert");
  notice.hidden = true;
  const save = el("button", "primary", gettext("Save"));
  save.type = "submit";
  const row = el("div", "item-actions");
  row.append(save, button(gettext("Cancel"), "secondary", () => form.remove()));
  form.append(notice, row);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(form, item, inputs, notice, false);
  });
  card.append(form);
  (inputs.title || inputs.remind_at).focus();
}

function changes(item, inputs) {
  const body = {};
  if (item.kind === "task") {
    if (inputs.title.value.trim() !== item.title) body.title = inputs.title.value.trim();
    if (inputs.date.value !== item.date) body.date = inputs.date.value;
    if (inputs.start.value !== (item.start || "")) body.start = inputs.start.value || null;
    if (inputs.end.value !== (item.end || "")) body.end = inputs.end.value || null;
  }
  const before = item.reminder?.status === "pending" ? item.reminder.remind_at : "";
  if (inputs.remind_at.value !== before) body.remind_at = inputs.remind_at.value || null;
  return body;
}

async function submit(form, item, inputs, notice, confirm) {
  const body = changes(item, inputs);
  if (!Object.keys(body).length) {
    form.remove();
    return;
  }
  const path = item.kind === "task" ? `tasks/${item.id}/` : `reminders/${item.id}/`;
  try {
    const answer = await api("PATCH", base + path, confirm ? { ...body, confirm: true } : body);
    say(answer.message);
    await reload();
  } catch (error) {
    notice.hidden = false;
    notice.replaceChildren(el("span", "", error.message));
    if (error.status === 409 && item.kind === "task") {
      notice.append(
        button(gettext("Save anyway"), "secondary", () =>
          submit(form, item, inputs, notice, true),
        ),
      );
    }
  }
}

async function act(method, path) {
  try {
    const answer = await api(method, base + path);
    say(answer?.message || "");
    await reload();
  } catch (error) {
    say(error.message, true);
  }
}

async function remove(item) {
  const question = interpolate(gettext("Delete “%(title)s”? Its pending reminder is cancelled."), {
    title: item.title,
  });
  if (!window.confirm(question)) return;
  await act("DELETE", `tasks/${item.id}/`);
  say(interpolate(gettext("Deleted “%(title)s”."), { title: item.title }));
}

function draw(overview) {
  for (const [group, list] of Object.entries(lists)) {
    list.replaceChildren(...overview[group].map(render));
  }
  document.getElementById("upcoming-empty").hidden = overview.upcoming.length > 0;
  document.getElementById("overdue-section").hidden = overview.overdue.length === 0;
  document.getElementById("done-count").textContent = `(${overview.done.length})`;
}

async function reload() {
  draw(await api("GET", base));
}

draw(JSON.parse(document.getElementById("planner-data").textContent));
