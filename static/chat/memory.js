// "What the assistant remembers" of the open chat: routing's session memory (GET/DELETE
// /api/v1/sessions/{id}/memory/), shown in a dialog the user can clear it from. The server
// words it in the page's language (experts by their names there, never an identifier).

import { memoryApi } from "./api.js";
import { gettext } from "./i18n.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function section(title, content) {
  const part = el("section", "memory-part");
  part.append(el("h3", null, title), content);
  return part;
}

function chips(items) {
  const list = el("ul", "memory-chips");
  for (const item of items) list.append(el("li", null, item));
  return list;
}

export class MemoryPanel {
  /**
   * @param {HTMLDialogElement} dialog  #memory
   * @param {object} hooks  sessionId() -> the open chat's id, announce(text), error(text)
   */
  constructor(dialog, hooks) {
    this.dialog = dialog;
    this.hooks = hooks;
    this.content = dialog.querySelector("[data-content]");
    this.forgetButton = dialog.querySelector("[data-forget]");
    this.opener = null;
    this.forgetButton.addEventListener("click", () => this.forget());
    dialog.addEventListener("close", () => {
      if (this.opener?.isConnected) this.opener.focus();
      this.opener = null;
    });
  }

  async open(opener) {
    const id = this.hooks.sessionId();
    if (!id) return;
    this.opener = opener;
    this.content.replaceChildren(el("p", "muted", gettext("Loading…")));
    this.forgetButton.hidden = true;
    this.dialog.showModal();
    try {
      this.show(await memoryApi.get(id));
    } catch (error) {
      this.content.replaceChildren(el("p", "memory-error", error.message));
    }
  }

  show(memory) {
    const parts = [];
    if (memory.last_intent) {
      parts.push(section(gettext("Last kind of question"), el("p", null, memory.last_intent)));
    }
    if (memory.interested_topics?.length) {
      parts.push(section(gettext("Topics you asked about"), chips(memory.interested_topics)));
    }
    if (memory.visited_docs?.length) {
      const untitled = gettext("A document without a title");
      const titles = memory.visited_docs.map((d) => d.title || untitled);
      parts.push(section(gettext("Documents it cited"), chips(titles)));
    }
    if (memory.last_project_focus) {
      parts.push(section(gettext("Project in focus"), el("p", null, memory.last_project_focus)));
    }
    const empty = !parts.length;
    if (empty) parts.push(el("p", "muted", gettext("Nothing is remembered for this chat.")));
    this.content.replaceChildren(...parts);
    this.forgetButton.hidden = empty;
  }

  async forget() {
    const id = this.hooks.sessionId();
    if (!id) return;
    this.forgetButton.disabled = true;
    try {
      await memoryApi.clear(id);
      this.show({});
      this.hooks.announce(gettext("The assistant forgot what it remembered of this chat."));
      this.dialog.querySelector("button[value=close]").focus();
    } catch (error) {
      this.content.append(el("p", "memory-error", error.message));
    } finally {
      this.forgetButton.disabled = false;
    }
  }
}
