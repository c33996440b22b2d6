// The agent form in admin: the tools picker's search, the model field's suggestions from the
// provider, and the preview chat that runs the form's unsaved values. Without this script the
// form still works: tools are plain checkboxes, the model is free text, there is no preview.
import { gettext, interpolate, ngettext } from "../chat/i18n.js";

const POLL_MS = 500;

/** Search, "ticked only" and the ticked count of one tools picker. */
function toolPicker(picker) {
  const search = picker.querySelector(".tool-picker-search");
  const chosenOnly = picker.querySelector(".tool-picker-chosen-only");
  const count = picker.querySelector(".tool-picker-count");
  const empty = picker.querySelector(".tool-picker-empty");
  const rows = [...picker.querySelectorAll(".tool-row")];
  const master = picker.querySelector("input[name=require_approval]");
  picker.querySelector(".tool-picker-find").hidden = false;
  picker.querySelector(".tool-picker-only").hidden = false;

  const tick = (row) => row.querySelector(`input[name="${picker.dataset.name}"]`);
  const update = () => {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const row of rows) {
      const text = row.dataset.search || "";
      const match = words.every((w) => text.includes(w));
      const visible = match && (!chosenOnly.checked || tick(row).checked);
      row.hidden = !visible;
      if (visible) shown += 1;
      const toggle = row.querySelector("input[name=approval_tool_keys]");
      if (toggle) toggle.closest("label").classList.toggle("is-off", !tick(row).checked);
    }
    const ticked = rows.filter((row) => tick(row).checked).length;
    count.textContent = interpolate(
      ngettext("%(ticked)s of %(total)s tool ticked", "%(ticked)s of %(total)s tools ticked", ticked),
      { ticked, total: rows.length }
    );
    empty.hidden = shown > 0;
  };
  search.addEventListener("input", update);
  // Enter in the search box would submit (save) the whole form.
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") event.preventDefault();
    if (event.key === "Escape" && search.value) {
      event.preventDefault();
      search.value = "";
      update();
    }
  });
  chosenOnly.addEventListener("change", update);
  picker.addEventListener("change", (event) => {
    const target = event.target;
    if (target.name === "approval_tool_keys" && target.checked && master && !master.checked) {
      master.checked = true; // marking a tool means wanting approval on
    }
    if (target.name === "approval_tool_keys" && target.checked) {
      const give = tick(target.closest(".tool-row"));
      if (give && !give.checked) give.checked = true; // approval of a tool it lacks is moot
    }
    update();
  });
  update();
}

/** The model field's <datalist>, filled from the provider's model list. */
async function modelSuggestions(input) {
  const list = document.getElementById(input.getAttribute("list"));
  const status = input.parentElement.querySelector(".model-picker-status");
  const provider = document.getElementById("id_provider");
  const load = async () => {
    status.textContent = gettext("Loading models…");
    const url = new URL(input.dataset.modelsUrl, window.location.href);
    url.searchParams.set("provider", provider ? provider.value : "default");
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      const body = await response.json();
      if (!response.ok || body.error) throw new Error(body.error || response.statusText);
      list.replaceChildren(
        ...body.models.map((name) => Object.assign(document.createElement("option"), { value: name }))
      );
      status.textContent = interpolate(
        ngettext("%(count)s model offered; any name may be typed.", "%(count)s models offered; any name may be typed.", body.models.length),
        { count: body.models.length }
      );
    } catch {
      list.replaceChildren();
      status.textContent = gettext("Couldn't load models; type the model's name.");
    }
  };
  if (provider) provider.addEventListener("change", load);
  await load();
}

/** One line of the preview conversation. */
function previewLine(log, kind, text) {
  const line = document.createElement("div");
  line.className = `agent-preview-line agent-preview-${kind}`;
  const who = document.createElement("span");
  who.className = "agent-preview-who";
  who.textContent = kind === "user" ? gettext("You") : kind === "error" ? gettext("Error") : gettext("Draft");
  const body = document.createElement("div");
  body.className = "agent-preview-text";
  body.textContent = text;
  line.append(who, body);
  log.append(line);
  line.scrollIntoView({ block: "nearest" });
  return { line, body };
}

/** The preview chat: posts the whole form with the message, then polls the turn. */
function previewChat(box) {
  const form = box.closest("form");
  const log = document.querySelector(".agent-preview-log");
  const text = box.querySelector("textarea");
  const go = box.querySelector(".agent-preview-go");
  const reset = box.querySelector(".agent-preview-reset");
  let sessionId = "";
  box.hidden = false;

  const poll = async (url, reply) => {
    for (;;) {
      const response = await fetch(url, { credentials: "same-origin" });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error || response.statusText);
      reply.body.textContent = body.final
        ? body.answer || body.error || body.status_label
        : interpolate(gettext("Working (%(status)s)…"), { status: body.status_label });
      if (body.final) {
        reply.line.classList.toggle("agent-preview-failed", body.status !== "succeeded");
        return body;
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  };
  const send = async () => {
    const message = text.value.trim();
    if (!message || go.disabled) return;
    go.disabled = true;
    previewLine(log, "user", message);
    const data = new FormData(form);
    data.set("preview_message", message);
    data.set("preview_session", sessionId);
    const reply = previewLine(log, "answer", gettext("Starting…"));
    try {
      const response = await fetch(box.dataset.previewUrl, {
        method: "POST",
        body: data,
        credentials: "same-origin",
      });
      const started = await response.json();
      if (!response.ok) {
        const fields = Object.entries(started.fields || {}).map(([f, m]) => `${f}: ${m.join(" ")}`);
        throw new Error([started.error, ...fields].join("\n"));
      }
      sessionId = started.session_id;
      text.value = "";
      const ended = await poll(started.status_url, reply);
      const trace = document.createElement("a");
      trace.href = ended.trace_url;
      trace.className = "agent-preview-trace";
      trace.textContent = gettext("Open the run's trace");
      reply.line.append(trace);
    } catch (error) {
      reply.line.className = "agent-preview-line agent-preview-error";
      reply.line.querySelector(".agent-preview-who").textContent = gettext("Error");
      reply.body.textContent = error.message || gettext("The preview failed.");
    } finally {
      go.disabled = false;
      text.focus();
    }
  };
  go.addEventListener("click", send);
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      send();
    }
  });
  reset.addEventListener("click", () => {
    sessionId = "";
    log.replaceChildren();
    text.focus();
  });
}

document.querySelectorAll(".tool-picker").forEach(toolPicker);
document.querySelectorAll("input[data-models-url]").forEach((input) => {
  if (input.dataset.modelsUrl) modelSuggestions(input);
});
document.querySelectorAll(".agent-preview-send[data-preview-url]").forEach(previewChat);
