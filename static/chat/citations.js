// Citations of an answer: numbered chips under it, its [n] markers linked to them, and the
// dialog a chip opens (the passage's title, headings, date and quote, with the words the answer
// used from it highlighted). Chips and markers come from `citations` of message.completed and
// of stored messages: [{ref, document_id, title, version, chunk_id, heading_path,
// effective_date, quote}], or for a web page {ref, url, title, quote}.

import { gettext, interpolate } from "./i18n.js";

const MARKER = /\[(\d{1,3})\]/g;
const SKIP = "code, pre, a, button, .cite-ref";
const HAN = /\p{Script=Han}/u;
const WORD = /[\p{L}\p{N}]+/gu;
const BRIDGE = /^[\s\p{P}]*(?:\p{L}{1,2}[\s\p{P}]+)?$/u;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function chipId(messageId, ref) {
  return `cite-${messageId}-${ref}`;
}

/** Chips under the answer for its citations (none while it streams), and its markers linked. */
export function renderCitations(node) {
  node.citeList?.remove();
  node.citeList = null;
  const citations = node.citations || [];
  if (!citations.length || node.status === "streaming") return;
  const list = el("ol", "citations");
  list.setAttribute("aria-label", gettext("Sources"));
  for (const citation of citations) {
    const chip = el("button", "cite-chip");
    chip.type = "button";
    chip.id = chipId(node.id, citation.ref);
    chip.dataset.ref = citation.ref;
    chip.setAttribute("aria-haspopup", "dialog");
    chip.title = interpolate(gettext("Open source %(ref)s"), { ref: citation.ref });
    const section = (citation.heading_path || []).slice(-1)[0];
    const label =
      section && section !== citation.title ? `${citation.title} › ${section}` : citation.title;
    chip.append(el("span", "num", String(citation.ref)), el("span", "title", label));
    const item = el("li");
    item.append(chip);
    list.append(item);
  }
  node.body.after(list);
  node.citeList = list;
  linkMarkers(node.body, new Set(citations.map((c) => String(c.ref))), node.id);
}

/** Turn each [n] of a known ref in the rendered text into a link to its chip. */
function linkMarkers(body, refs, messageId) {
  const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT, {
    acceptNode: (text) =>
      text.parentElement.closest(SKIP) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  const texts = [];
  while (walker.nextNode()) texts.push(walker.currentNode);
  for (const text of texts) {
    const parts = [];
    let last = 0;
    for (const match of text.data.matchAll(MARKER)) {
      if (!refs.has(match[1])) continue;
      parts.push(text.data.slice(last, match.index));
      const link = el("a", "cite-ref", match[0]);
      link.href = `#${chipId(messageId, match[1])}`;
      link.dataset.ref = match[1];
      link.setAttribute("aria-label", interpolate(gettext("source %(ref)s"), { ref: match[1] }));
      parts.push(link);
      last = match.index + match[0].length;
    }
    if (!parts.length) continue;
    parts.push(text.data.slice(last));
    text.replaceWith(...parts.filter((part) => part !== ""));
  }
}

/** The part of `answer` that cites `ref`: the text from the previous marker (or line) up to
 * each [ref]. */
function citingText(answer, ref) {
  const pieces = [];
  const marker = `[${ref}]`;
  let at = answer.indexOf(marker);
  while (at !== -1) {
    const before = answer.slice(0, at);
    const start = Math.max(before.lastIndexOf("]") + 1, before.lastIndexOf("\n") + 1);
    pieces.push(before.slice(start));
    at = answer.indexOf(marker, at + marker.length);
  }
  return pieces.join(" ");
}

/** Ranges [start, end) of `quote` that the citing text shares: words of 3+ letters, numbers,
 * and Chinese characters in shared pairs (Chinese has no spaces between words). */
export function sharedRanges(quote, citing) {
  const words = new Set();
  const pairs = new Set();
  for (const [word] of citing.toLowerCase().matchAll(WORD)) {
    if (HAN.test(word)) {
      for (let i = 0; i + 1 < word.length; i += 1) pairs.add(word.slice(i, i + 2));
    } else if (word.length >= 3 || /^\p{N}+$/u.test(word)) {
      words.add(word);
    }
  }
  const marked = new Array(quote.length).fill(false);
  for (const match of quote.matchAll(WORD)) {
    const word = match[0].toLowerCase();
    if (!HAN.test(word)) {
      if (words.has(word)) marked.fill(true, match.index, match.index + word.length);
      continue;
    }
    for (let i = 0; i + 1 < word.length; i += 1) {
      if (pairs.has(word.slice(i, i + 2))) marked.fill(true, match.index + i, match.index + i + 2);
    }
  }
  const ranges = [];
  for (let i = 0; i < quote.length; i += 1) {
    if (!marked[i]) continue;
    const last = ranges[ranges.length - 1];
    // Words apart by spaces, punctuation or one short word ("a", "of") read as one phrase.
    if (last && BRIDGE.test(quote.slice(last[1], i))) last[1] = i + 1;
    else ranges.push([i, i + 1]);
  }
  return ranges;
}

function highlighted(quote, ranges) {
  const fragment = document.createDocumentFragment();
  let last = 0;
  for (const [start, end] of ranges) {
    fragment.append(quote.slice(last, start), el("mark", null, quote.slice(start, end)));
    last = end;
  }
  fragment.append(quote.slice(last));
  return fragment;
}

/** The dialog that shows one cited passage; focus goes back to what opened it. */
export class PassageDialog {
  constructor(dialog) {
    this.dialog = dialog;
    this.opener = null;
    dialog.addEventListener("close", () => {
      if (this.opener?.isConnected) this.opener.focus();
      this.opener = null;
    });
    dialog.addEventListener("click", (e) => {
      if (e.target === dialog) dialog.close(); // a click on the backdrop
    });
  }

  open(citation, answer, opener) {
    const d = this.dialog;
    d.querySelector("[data-title]").textContent = citation.title || gettext("Untitled document");
    d.querySelector("[data-ref]").textContent = interpolate(gettext("Source %(ref)s"), {
      ref: citation.ref,
    });
    // A web page (web_fetch) is where its address says; a document, its headings.
    const where = citation.url || (citation.heading_path || []).join(" › ");
    d.querySelector("[data-where]").textContent = where;
    d.querySelector("[data-where]").hidden = !where;
    const facts = [];
    if (citation.effective_date) {
      facts.push(interpolate(gettext("Effective %(date)s"), { date: citation.effective_date }));
    }
    if (citation.version) {
      facts.push(interpolate(gettext("version %(version)s"), { version: citation.version }));
    }
    d.querySelector("[data-meta]").textContent = facts.join(" · ");
    const whole = !citation.url && (citation.chunk_id === null || citation.chunk_id === undefined);
    d.querySelector("[data-whole]").hidden = !whole;
    const quote = d.querySelector("[data-quote]");
    quote.hidden = whole && citation.quote === citation.title;
    const text = citation.quote || "";
    quote.replaceChildren(highlighted(text, sharedRanges(text, citingText(answer, citation.ref))));
    this.opener = opener;
    d.showModal();
    d.querySelector("button[value=close]").focus();
  }
}
