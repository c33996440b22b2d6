// Incremental Markdown for a streaming answer. Each delta parses only the text after the blocks
// already shown: top-level blocks that another block has followed (on a complete line) are
// final, so they are rendered once and kept; only the trailing open block is rendered again.
// The final text renders once more only where it must (it differs from what streamed, or it
// defines link references that earlier blocks may use).

import { md, renderTokens } from "./markdown.js";

/** Offset just after the `count`-th newline of `text` (0 when `count` is 0). */
function lineOffset(text, count) {
  let offset = 0;
  for (let n = 0; n < count; n += 1) offset = text.indexOf("\n", offset) + 1;
  return offset;
}

export class MarkdownStream {
  /**
   * @param {HTMLElement} container  where the rendered blocks go (they are its only children,
   *                                 apart from what the caller appends after `update`)
   * @param {object} options         imageAllowed(url), passed on to the renderer
   */
  constructor(container, options = {}) {
    this.container = container;
    this.options = options;
    this.reset();
  }

  reset() {
    this.container.replaceChildren();
    this.done = ""; // the source of the blocks rendered for good
    this.tail = []; // the nodes of the open block(s), replaced on every update
    this.fence = null; // {info, code} while the open block is one code block
    this.references = false; // the text defines [label]: url references
  }

  /** Show `text`, a longer version of what was shown: only the open block is rendered again. */
  update(text) {
    text = String(text ?? "").replace(/\r\n?/g, "\n");
    if (!text.startsWith(this.done)) this.reset(); // rewritten, not extended: start over
    const rest = text.slice(this.done.length);
    const env = {};
    const tokens = md.parse(rest, env);
    this.references ||= Boolean(env.references);
    const complete = rest.split("\n").length - 1; // lines that have their newline
    const starts = [];
    tokens.forEach((token, index) => {
      if (token.level === 0 && token.nesting !== -1 && token.map) starts.push(index);
    });
    // The last block whose first line is complete closes every block before it: no character
    // appended later can merge them back (an incomplete line could still: "#" then "#tag").
    let cut = starts.length - 1;
    while (cut > 0 && tokens[starts[cut]].map[0] >= complete) cut -= 1;
    if (cut > 0) {
      this.clearTail();
      this.container.append(renderTokens(tokens.slice(0, starts[cut]), env, this.options));
      this.done += rest.slice(0, lineOffset(rest, tokens[starts[cut]].map[0]));
      this.renderTail(tokens.slice(starts[cut]), env);
    } else {
      this.renderTail(tokens, env);
    }
  }

  /** Show the final `text`: whatever is still open renders once, for good. */
  finish(text) {
    text = String(text ?? "").replace(/\r\n?/g, "\n");
    if (this.references || !text.startsWith(this.done)) this.reset();
    const rest = text.slice(this.done.length);
    const env = {};
    const tokens = md.parse(rest, env);
    if (env.references && this.done) {
      this.reset(); // a reference defined late may be used by blocks already shown
      this.finish(text);
      return;
    }
    this.renderTail(tokens, env, true);
    this.done = text;
    this.tail = []; // final: kept from now on
    this.fence = null;
  }

  /** Render the open block(s). A code block that is still the only open block just gets its
   * new text: long code streams without being rebuilt (and its Copy button stays put); `final`
   * renders it once more, highlighted, when it names a language. */
  renderTail(tokens, env, final = false) {
    const fence = tokens.length === 1 && tokens[0].type === "fence" ? tokens[0] : null;
    // The final render highlights the code block that streamed as plain text.
    if (fence && this.fence?.info === fence.info && !(final && fence.info.trim())) {
      const code = fence.content.replace(/\n$/, "");
      const shown = this.fence.text;
      if (!code.startsWith(shown)) this.fence.code.textContent = code;
      else if (code.length > shown.length) this.fence.code.append(code.slice(shown.length));
      this.fence.text = code;
      return;
    }
    this.clearTail();
    const fragment = renderTokens(tokens, env, this.options);
    this.tail = [...fragment.childNodes];
    const code = fence && fragment.querySelector(".code-block code");
    this.fence = code ? { info: fence.info, code, text: code.textContent } : null;
    this.container.append(fragment);
  }

  clearTail() {
    for (const node of this.tail) node.remove();
    this.tail = [];
    this.fence = null;
  }
}
