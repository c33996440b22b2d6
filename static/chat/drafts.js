// Drafts per chat: what is typed in the composer is kept (in localStorage) for the chat it was
// typed in, and comes back when that chat is opened again.

import { forget, store, stored } from "./ui.js";

const keyOf = (sessionId) => `draft:${sessionId || "new"}`;

export class Drafts {
  /** @param {HTMLTextAreaElement} box  the composer */
  constructor(box) {
    this.box = box;
    this.current = null; // the storage key of the chat on screen
  }

  /** Keep the draft of the chat being left and show the one of `sessionId` (null: new chat).
   * At the page's start, what was typed before the scripts ran stays (an Enter pressed then
   * only added a line: it is taken off, and nothing is sent that the user did not see sent). */
  switchTo(sessionId) {
    const early = this.current === null ? this.box.value.replace(/\n+$/, "") : "";
    this.save();
    this.current = keyOf(sessionId);
    this.box.value = early.trim() ? early : stored(this.current) || "";
  }

  /** Remember what the composer holds now (an empty composer forgets the draft). */
  save() {
    if (!this.current) return;
    if (this.box.value.trim()) store(this.current, this.box.value);
    else forget(this.current);
  }

  /** A new chat got its id with its first message: its draft now belongs to that id. */
  adopt(sessionId) {
    forget(this.current);
    this.current = keyOf(sessionId);
    this.save();
  }

  /** Forget the draft of a deleted chat. */
  drop(sessionId) {
    forget(keyOf(sessionId));
  }
}
