// The sessions sidebar: chats grouped by date (today, previous 7 days, older), open, rename,
// delete (after a confirm), and search by what was said in them (titles and messages). The
// server renders the first list; paging uses GET /api/v1/sessions/, search
// GET /api/v1/sessions/search/.

import { actionsApi, sessionsApi } from "./api.js";
import { gettext, interpolate } from "./i18n.js";

const DAY_MS = 24 * 60 * 60 * 1000;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function iconButton(className, label) {
  const button = el("button", `icon-btn ${className}`);
  button.type = "button";
  button.setAttribute("aria-label", label);
  button.title = label;
  return button;
}

/** "today", "week" (the previous 7 days) or "older" for a time in ms. */
export function dateGroup(ms, now = new Date()) {
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
  if (ms >= midnight) return "today";
  if (ms >= midnight - 7 * DAY_MS) return "week";
  return "older";
}

const GROUP_LABELS = {
  today: gettext("Today"),
  week: gettext("Previous 7 days"),
  older: gettext("Older"),
};

export class Sidebar {
  /**
   * @param {object} parts  list (ul), search (input), more (button), empty (p)
   * @param {object} hooks  open(id), deleted(id), error(message), confirm(text) -> Promise<bool>
   */
  constructor(parts, hooks) {
    Object.assign(this, parts);
    this.hooks = hooks;
    this.activeId = null;
    this.next = null;
    this.query = "";
    this.searchTimer = null;
    this.searchSeq = 0;
    this.untitled = gettext("Untitled chat");
    for (const li of [...this.list.querySelectorAll("li[data-session-id]")]) {
      const updated = Date.parse(li.dataset.updated || "") || Date.now();
      li.replaceWith(this.item(li.dataset.sessionId, li.textContent.trim(), updated));
    }
    this.list.addEventListener("click", (e) => this.onClick(e));
    this.search.addEventListener("input", () => this.onSearch());
    this.search.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && this.search.value) {
        this.search.value = "";
        this.onSearch();
      }
    });
    this.more.addEventListener("click", () => this.loadMore());
    this.regroup();
  }

  /** The chats' list items (not the date headings). */
  items() {
    return [...this.list.querySelectorAll(":scope > li[data-session-id]")];
  }

  item(id, title, updatedMs, snippet = "") {
    const li = el("li", "session");
    li.dataset.sessionId = id;
    li.dataset.updated = String(updatedMs || Date.now());
    const link = el("a", null, title || this.untitled);
    link.href = `#${id}`;
    link.dataset.sessionId = id;
    if (snippet) {
      const excerpt = el("span", "snippet", snippet);
      link.append(excerpt);
      link.title = `${title || this.untitled}\n${snippet}`;
    }
    const actions = el("span", "actions");
    actions.append(
      iconButton("rename", gettext("Rename chat")),
      iconButton("delete", gettext("Delete chat"))
    );
    li.append(link, actions);
    if (id === this.activeId) this.markActive(li, true);
    return li;
  }

  titleOf(li) {
    return li.querySelector("a").firstChild?.textContent || "";
  }

  find(id) {
    return this.list.querySelector(`li[data-session-id="${CSS.escape(id)}"]`);
  }

  markActive(li, active) {
    li.classList.toggle("active", active);
    const link = li.querySelector("a");
    if (active) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }

  setActive(id) {
    this.activeId = id;
    for (const li of this.items()) this.markActive(li, li.dataset.sessionId === id);
  }

  /** Show a session at the top, active now (a new chat, or new activity in one). */
  touch(id, title) {
    let li = this.find(id);
    if (!li) li = this.item(id, title, Date.now());
    li.dataset.updated = String(Date.now());
    if (this.query && !this.matches(li)) return;
    this.list.prepend(li);
    this.regroup();
  }

  setTitle(id, title) {
    const li = this.find(id);
    if (!li || !title) return;
    li.querySelector("a").firstChild.textContent = title;
  }

  matches(li) {
    return this.titleOf(li).toLowerCase().includes(this.query.toLowerCase());
  }

  /** Date headings before the first visible chat of each group; the empty-list line. */
  regroup() {
    for (const label of this.list.querySelectorAll(":scope > li.group-label")) label.remove();
    let last = null;
    for (const li of this.items()) {
      if (li.hidden) continue;
      const group = dateGroup(Number(li.dataset.updated));
      if (group === last) continue;
      const label = el("li", "group-label");
      label.append(el("h2", null, GROUP_LABELS[group]));
      li.before(label);
      last = group;
    }
    const visible = this.items().some((li) => !li.hidden);
    this.empty.hidden = visible;
    this.empty.textContent = this.query
      ? gettext("No chats match your search.")
      : gettext("No chats yet.");
  }

  // ---- search and paging --------------------------------------------------------------

  onSearch() {
    this.query = this.search.value.trim();
    // Filter titles on screen at once; the server's answer (titles and messages) replaces it.
    for (const li of this.items()) li.hidden = Boolean(this.query) && !this.matches(li);
    this.regroup();
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => this.fetchList(), 250);
  }

  async fetchList() {
    const seq = ++this.searchSeq;
    try {
      if (this.query) {
        const found = await actionsApi.search(this.query);
        if (seq !== this.searchSeq) return; // a newer search is on its way
        this.show(found.results);
        this.setNext(null);
      } else {
        const page = await sessionsApi.list("");
        if (seq !== this.searchSeq) return;
        this.show(page.results);
        this.setNext(page.next);
      }
    } catch (error) {
      if (seq === this.searchSeq) {
        this.hooks.error(
          interpolate(gettext("Could not search your chats: %(reason)s"), {
            reason: error.message,
          })
        );
      }
    }
    this.regroup();
  }

  show(sessions) {
    this.list.replaceChildren(
      ...sessions.map((s) => this.item(s.id, s.title, Date.parse(s.updated_at), s.snippet || ""))
    );
  }

  setNext(next) {
    this.next = next || null;
    this.more.hidden = !this.next;
  }

  /** The next page; the first click after the server-rendered list pages through the API
   * until it reaches chats not shown yet. */
  async loadMore() {
    const shown = this.items().length;
    this.more.disabled = true;
    try {
      let page = this.next ? await sessionsApi.page(this.next) : await sessionsApi.list("");
      this.appendPage(page);
      while (page.next && this.items().length <= shown) {
        page = await sessionsApi.page(page.next);
        this.appendPage(page);
      }
      this.setNext(page.next);
    } catch (error) {
      this.hooks.error(
        interpolate(gettext("Could not load more chats: %(reason)s"), { reason: error.message })
      );
    } finally {
      this.more.disabled = false;
      this.regroup();
    }
  }

  appendPage(page) {
    for (const s of page.results) {
      if (!this.find(s.id)) this.list.append(this.item(s.id, s.title, Date.parse(s.updated_at)));
    }
  }

  // ---- actions ------------------------------------------------------------------------

  onClick(e) {
    const li = e.target.closest("li[data-session-id]");
    if (!li) return;
    const id = li.dataset.sessionId;
    if (e.target.closest("button.rename")) {
      this.startRename(li);
    } else if (e.target.closest("button.delete")) {
      this.remove(li);
    } else if (e.target.closest("a")) {
      e.preventDefault();
      this.hooks.open(id);
    }
  }

  startRename(li) {
    const link = li.querySelector("a");
    const old = this.titleOf(li);
    const input = el("input", "rename-input");
    input.type = "text";
    input.value = old;
    input.maxLength = 200;
    input.setAttribute("aria-label", gettext("Chat title"));
    link.hidden = true;
    li.classList.add("renaming");
    li.prepend(input);
    input.focus();
    input.select();
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      const title = input.value.trim();
      input.remove();
      link.hidden = false;
      li.classList.remove("renaming");
      li.querySelector("button.rename")?.focus();
      if (!save || !title || title === old) return;
      this.setTitle(li.dataset.sessionId, title); // optimistic; put back if the server refuses
      try {
        const session = await sessionsApi.rename(li.dataset.sessionId, title);
        this.setTitle(li.dataset.sessionId, session?.title || title);
      } catch (error) {
        this.setTitle(li.dataset.sessionId, old);
        this.hooks.error(
          interpolate(gettext("Could not rename the chat: %(reason)s"), { reason: error.message })
        );
      }
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        finish(true);
      } else if (e.key === "Escape") {
        e.preventDefault();
        finish(false);
      }
    });
    input.addEventListener("blur", () => finish(true));
  }

  async remove(li) {
    const title = this.titleOf(li);
    if (!(await this.hooks.confirm(title))) return;
    const id = li.dataset.sessionId;
    try {
      await sessionsApi.remove(id);
    } catch (error) {
      const gone = error.status === 404 && ["session_not_found", "not_found"].includes(error.code);
      if (!gone) {
        this.hooks.error(
          interpolate(gettext("Could not delete the chat: %(reason)s"), { reason: error.message })
        );
        return;
      }
    }
    // Focus moves to the next chat (or the search box), never lost with the deleted item.
    const items = this.items();
    const next = items[items.indexOf(li) + 1] || items[items.indexOf(li) - 1];
    li.remove();
    this.regroup();
    (next?.querySelector("a") || this.search).focus();
    this.hooks.deleted(id);
  }
}
