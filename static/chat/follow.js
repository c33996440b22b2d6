// The transcript follows the reader: a send always shows the new message; while the reader is
// up in older messages, new content does not move the view, and a "Jump to latest" button
// appears until they are back at the bottom.

const NEAR = 80; // px from the bottom that still count as "at the bottom" (as render.js's stick)

export class Follower {
  /**
   * @param {HTMLElement} root    the #transcript scroller
   * @param {HTMLButtonElement} button  the "Jump to latest" button (hidden while not needed)
   * @param {object} hooks        jumped(): after the button took the reader down
   */
  constructor(root, button, hooks = {}) {
    this.root = root;
    this.button = button;
    this.hooks = hooks;
    this.below = 0; // how far the end was below the view the last time we looked
    this.frame = 0;
    root.addEventListener("scroll", () => this.measure(), { passive: true });
    // Opening a panel or a tool call is the reader's own doing, not new content.
    root.addEventListener("toggle", () => this.measure(), true);
    window.addEventListener("resize", () => this.measure());
    button.addEventListener("click", () => {
      this.toBottom();
      this.hooks.jumped?.();
    });
  }

  /** How far the end of the transcript is below what is shown, in px. */
  distance() {
    const root = this.root;
    return Math.max(0, root.scrollHeight - root.scrollTop - root.clientHeight);
  }

  atBottom() {
    return this.distance() < NEAR;
  }

  /** Show the newest message (after a send, or on the reader's request). */
  toBottom() {
    this.root.scrollTop = this.root.scrollHeight;
    this.measure();
  }

  /** The reader moved (or the layout did): remember where the end is; hide the button at the
   * bottom. */
  measure() {
    this.below = this.distance();
    if (this.below < NEAR) this.button.hidden = true;
  }

  /** The transcript changed: once the change has settled (a snapshot restores the reader's
   * place in the same task), show the button if new content arrived below the view. */
  changed() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const below = this.distance();
      if (below < NEAR) this.button.hidden = true;
      else if (below > this.below + 1) this.button.hidden = false;
      this.below = below;
    });
  }

  /** Run `change` (which may rebuild the whole transcript) keeping the reader's place when
   * they were reading older messages; at the bottom, the transcript's own stick follows. */
  keepPlace(change) {
    const top = this.atBottom() ? null : this.root.scrollTop;
    change();
    if (top !== null) this.root.scrollTop = top;
  }
}
