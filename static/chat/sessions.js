// The sessions sidebar: open, rename, delete (after a confirm) and search chats by title.
// The server renders the first list; searching and paging use GET /api/v1/sessions/.

import { sessionsApi } from "./api.js";

const UNTITLED = "Untitled chat";

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
    for (const li of [...this.list.querySelectorAll("li[data-session-id]")]) {
      li.replaceWith(this.item(li.dataset.sessionId, li.textContent.trim()));
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
    this.updateEmpty();
  }

  item(id, title) {
    const li = el("li", "session");
    li.dataset.sessionId = id;
    const link = el("a", null, title || UNTITLED);
    link.href = `#${id}`;
    link.dataset.sessionId = id;
    const actions = el("span", "actions");
    actions.append(iconButton("rename", "Rename chat"), iconButton("delete", "Delete chat"));
    li.append(link, actions);
    if (id === this.activeId) this.markActive(li, true);
    return li;
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
    for (const li of this.list.children) this.markActive(li, li.dataset.sessionId === id);
  }

  /** Show a session at the top (a new chat, or new activity in one). */
  touch(id, title) {
    let li = this.find(id);
    if (!li) li = this.item(id, title);
    else if (title && li.querySelector("a").textContent === UNTITLED) this.setTitle(id, title);
    if (this.query && !this.matches(li)) return;
    this.list.prepend(li);
    this.updateEmpty();
  }

  setTitle(id, title) {
    const li = this.find(id);
    if (li && title) li.querySelector("a").textContent = title;
  }

  matches(li) {
    return li.querySelector("a").textContent.toLowerCase().includes(this.query.toLowerCase());
  }

  updateEmpty() {
    const visible = [...this.list.children].some((li) => !li.hidden);
    this.empty.hidden = visible;
    this.empty.textContent = this.query ? "No chats match your search." : "No chats yet.";
  }

  // ---- search and paging --------------------------------------------------------------

  onSearch() {
    this.query = this.search.value.trim();
    // Filter what is on screen at once; the server's answer (all chats) replaces it shortly.
    for (const li of this.list.children) li.hidden = Boolean(this.query) && !this.matches(li);
    this.updateEmpty();
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => this.fetchList(), 250);
  }

  async fetchList() {
    const seq = ++this.searchSeq;
    try {
      const page = await sessionsApi.list(this.query);
      if (seq !== this.searchSeq) return; // a newer search is on its way
      this.list.replaceChildren(...page.results.map((s) => this.item(s.id, s.title)));
      this.setNext(page.next);
    } catch (error) {
      if (seq === this.searchSeq) this.hooks.error(`Could not search your chats: ${error.message}`);
    }
    this.updateEmpty();
  }

  setNext(next) {
    this.next = next || null;
    this.more.hidden = !this.next;
  }

  /** The next page; the first click after the server-rendered list pages through the API
   * until it reaches chats not shown yet. */
  async loadMore() {
    const shown = this.list.children.length;
    this.more.disabled = true;
    try {
      let page = this.next ? await sessionsApi.page(this.next) : await sessionsApi.list(this.query);
      this.appendPage(page);
      while (page.next && this.list.children.length <= shown) {
        page = await sessionsApi.page(page.next);
        this.appendPage(page);
      }
      this.setNext(page.next);
    } catch (error) {
      this.hooks.error(`Could not load more chats: ${error.message}`);
    } finally {
      this.more.disabled = false;
    }
  }

  appendPage(page) {
    for (const s of page.results) if (!this.find(s.id)) this.list.append(this.item(s.id, s.title));
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
    const old = link.textContent;
    const input = el("input", "rename-input");
    input.type = "text";
    input.value = old;
    input.maxLength = 200;
    input.setAttribute("aria-label", "Chat title");
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
      if (!save || !title || title === old) return;
      link.textContent = title; // optimistic; put back if the server refuses
      try {
        const session = await sessionsApi.rename(li.dataset.sessionId, title);
        link.textContent = session?.title || title;
      } catch (error) {
        link.textContent = old;
        this.hooks.error(`Could not rename the chat: ${error.message}`);
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
    const title = li.querySelector("a").textContent;
    if (!(await this.hooks.confirm(title))) return;
    const id = li.dataset.sessionId;
    try {
      await sessionsApi.remove(id);
    } catch (error) {
      const gone = error.status === 404 && ["session_not_found", "not_found"].includes(error.code);
      if (!gone) {
        this.hooks.error(`Could not delete the chat: ${error.message}`);
        return;
      }
    }
    li.remove();
    this.updateEmpty();
    this.hooks.deleted(id);
  }
}
