// The tasks page's schedules (work an agent does on a schedule, asked for in the chat): each
// with its text, agent, schedule in words, next run and whether it is paused; pause or resume,
// edit (text, schedule in words, agent) and delete go through /api/v1/schedules/, and each
// answer redraws the list from the server. Every text is set with textContent.

import { api } from "../chat/api.js";
import { gettext, interpolate } from "../chat/i18n.js";
import { button, el, field, say } from "./page.js";

const section = document.getElementById("schedules-section");
const base = section.dataset.api;
const list = document.getElementById("schedules");
const page = JSON.parse(document.getElementById("schedules-data").textContent);

function nextLine(item) {
  if (item.paused) return gettext("Paused: it does not run until you resume it.");
  if (!item.next_run) return gettext("It never comes due.");
  return interpolate(gettext("Next run %(when)s"), { when: item.next_run });
}

function render(item) {
  const card = el("li", "planner-item schedule-item");
  card.dataset.kind = "schedule";
  card.dataset.id = item.id;
  card.dataset.paused = item.paused ? "true" : "false";
  const head = el("div", "item-head");
  head.append(el("h3", "item-title", item.text));
  if (item.paused) head.append(el("span", "badge", gettext("Paused")));
  card.append(head);
  const who = interpolate(gettext("%(agent)s · %(schedule)s"), {
    agent: item.agent_name,
    schedule: item.schedule,
  });
  card.append(el("p", "item-when", who));
  const next = el("p", "item-reminder", nextLine(item));
  next.dataset.status = item.paused ? "paused" : "pending";
  card.append(next);
  if (item.by_email) card.append(el("p", "item-when", gettext("Each answer is also mailed to you.")));
  if (item.last_run_late) card.append(el("p", "item-when", gettext("The last run was late.")));
  if (item.last_error) card.append(el("p", "item-error", item.last_error));
  const actions = el("div", "item-actions");
  actions.append(
    button(gettext("Edit"), "secondary", () => openEditor(card, item)),
    item.paused
      ? button(gettext("Resume"), "primary", () => change(item, { paused: false }))
      : button(gettext("Pause"), "secondary", () => change(item, { paused: true })),
    button(gettext("Delete"), "danger", () => remove(item)),
  );
  card.append(actions);
  return card;
}

function textInput(value, name, max) {
  const node = el("input");
  node.type = "text";
  node.name = name;
  node.value = value || "";
  node.required = true;
  node.maxLength = max;
  return node;
}

function agentSelect(current) {
  const select = el("select");
  select.name = "agent";
  const known = page.agents.some((a) => a.name === current.agent);
  const options = known ? page.agents : [{ name: current.agent, label: current.agent_name }, ...page.agents];
  for (const agent of options) {
    const option = el("option", "", agent.label);
    option.value = agent.name;
    option.selected = agent.name === current.agent;
    select.append(option);
  }
  return select;
}

function openEditor(card, item) {
  card.querySelector("form")?.remove();
  const form = el("form", "editor");
  const inputs = {
    text: textInput(item.text, "text", 2000),
    schedule: textInput("", "schedule", 200),
    agent: agentSelect(item),
    by_email: el("input"),
  };
  inputs.by_email.type = "checkbox";
  inputs.by_email.name = "by_email";
  inputs.by_email.checked = Boolean(item.by_email);
  inputs.schedule.required = false;
  inputs.schedule.placeholder = item.schedule;
  const when = field(gettext("When, in words"), inputs.schedule);
  when.append(el("small", "field-hint", gettext("Empty: unchanged. E.g. every Monday at 9, 每週一早上")));
  const mail = el("label", "field field-check");
  mail.append(inputs.by_email, el("span", "", gettext("Also mail each answer to me")));
  form.append(field(gettext("What to do"), inputs.text), when, field(gettext("Agent"), inputs.agent), mail);
  const notice = el("p", "editor-notice");
  notice.setAttribute("role", "alert");
  notice.hidden = true;
  const save = el("button", "primary", gettext("Save"));
  save.type = "submit";
  const row = el("div", "item-actions");
  row.append(save, button(gettext("Cancel"), "secondary", () => form.remove()));
  form.append(notice, row);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {};
    if (inputs.text.value.trim() !== item.text) body.text = inputs.text.value.trim();
    if (inputs.schedule.value.trim()) body.schedule = inputs.schedule.value.trim();
    if (inputs.agent.value !== item.agent) body.agent = inputs.agent.value;
    if (inputs.by_email.checked !== Boolean(item.by_email)) body.by_email = inputs.by_email.checked;
    if (!Object.keys(body).length) {
      form.remove();
      return;
    }
    try {
      await api("PATCH", `${base}${item.id}/`, body);
      say(gettext("Schedule saved."));
      await reload();
    } catch (error) {
      notice.hidden = false;
      notice.textContent = error.message;
    }
  });
  card.append(form);
  inputs.text.focus();
}

async function change(item, body) {
  try {
    await api("PATCH", `${base}${item.id}/`, body);
    say(body.paused ? gettext("Schedule paused.") : gettext("Schedule resumed."));
    await reload();
  } catch (error) {
    say(error.message, true);
  }
}

async function remove(item) {
  const question = interpolate(gettext("Delete the schedule “%(text)s”?"), { text: item.text });
  if (!window.confirm(question)) return;
  try {
    await api("DELETE", `${base}${item.id}/`);
    say(interpolate(gettext("Deleted the schedule “%(text)s”."), { text: item.text }));
    await reload();
  } catch (error) {
    say(error.message, true);
  }
}

function draw(schedules) {
  list.replaceChildren(...schedules.map(render));
  document.getElementById("schedules-empty").hidden = schedules.length > 0;
}

async function reload() {
  draw(await api("GET", base));
}

draw(page.schedules);
