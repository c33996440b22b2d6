// A small, safe Markdown renderer: model text becomes DOM nodes built with createElement and
// textContent, never HTML. Raw HTML in the text stays visible text. Links keep only http(s) and
// mailto targets; images become a "Load image from <host>" button until the user asks for them.

const LINK_SCHEMES = ["http:", "https:", "mailto:"];
const IMAGE_SCHEMES = ["http:", "https:"];

/** The normalized URL if `raw` is absolute and uses one of `schemes`, else null. */
export function safeUrl(raw, schemes = LINK_SCHEMES) {
  let url;
  try {
    url = new URL(raw.trim());
  } catch {
    return null; // relative or malformed: not a link we follow
  }
  return schemes.includes(url.protocol) ? url : null;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// ---- blocks -------------------------------------------------------------------------------

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:\s+(.*))?$/;
const TABLE_DIVIDER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

/** Whether `line` ends a paragraph by starting another block (a numbered item only from 1,
 * so "2024. was a good year" stays text). */
function startsBlock(line, next) {
  const item = line.match(ITEM);
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    (item && item[3] && (!/\d/.test(item[2]) || parseInt(item[2], 10) === 1)) ||
    (line.includes("|") && next !== undefined && TABLE_DIVIDER.test(next) && next.includes("-"))
  );
}

/** Render Markdown `source` to a DocumentFragment. `options.imageAllowed(url)` says whether an
 * image the user already chose to load may be shown at once (re-renders while streaming). */
export function renderMarkdown(source, options = {}) {
  const fragment = document.createDocumentFragment();
  const lines = String(source ?? "").replace(/\r\n?/g, "\n").split("\n");
  renderBlocks(lines, fragment, options);
  return fragment;
}

function renderBlocks(lines, parent, options) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const fence = line.match(FENCE);
    if (fence) {
      i = codeBlock(lines, i, fence, parent);
      continue;
    }
    const heading = line.match(HEADING);
    if (heading) {
      const level = heading[1].length;
      const h = el(`h${Math.min(6, level + 1)}`, `md-h${level}`);
      appendInline(h, heading[2] || "", options);
      parent.append(h);
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      parent.append(el("hr"));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && lines[i].trim() && QUOTE.test(lines[i])) {
        inner.push(lines[i].match(QUOTE)[1]);
        i += 1;
      }
      const quote = el("blockquote");
      renderBlocks(inner, quote, options);
      parent.append(quote);
      continue;
    }
    if (ITEM.test(line)) {
      i = list(lines, i, parent, options);
      continue;
    }
    const next = lines[i + 1] ?? "";
    if (line.includes("|") && TABLE_DIVIDER.test(next) && next.includes("-")) {
      i = table(lines, i, parent, options);
      continue;
    }
    const paragraph = [line];
    i += 1;
    while (i < lines.length && lines[i].trim() && !startsBlock(lines[i], lines[i + 1])) {
      paragraph.push(lines[i]);
      i += 1;
    }
    const p = el("p");
    paragraph.forEach((text, n) => {
      if (n) p.append(el("br"));
      appendInline(p, text.trim(), options);
    });
    parent.append(p);
  }
}

function codeBlock(lines, start, fence, parent) {
  const marker = fence[1];
  const body = [];
  let i = start + 1;
  while (i < lines.length) {
    const close = lines[i].trim();
    if (close[0] === marker[0] && close.length >= marker.length && /^([`~])\1*$/.test(close)) {
      i += 1;
      break;
    }
    body.push(lines[i]);
    i += 1;
  }
  const figure = el("figure", "code-block");
  const bar = el("figcaption");
  bar.append(el("span", "lang", fence[2] || "text"));
  const copy = el("button", "copy", "Copy");
  copy.type = "button";
  copy.setAttribute("aria-label", "Copy code");
  bar.append(copy);
  const pre = el("pre");
  const code = el("code", null, body.join("\n"));
  if (fence[2]) code.dataset.lang = fence[2];
  pre.append(code);
  figure.append(bar, pre);
  parent.append(figure);
  return i;
}

function list(lines, start, parent, options) {
  const first = lines[start].match(ITEM);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const listEl = el(ordered ? "ol" : "ul");
  if (ordered && parseInt(first[2], 10) !== 1) listEl.start = parseInt(first[2], 10);
  let i = start;
  while (i < lines.length) {
    const match = lines[i].match(ITEM);
    if (!match || match[1].length !== indent || /\d/.test(match[2]) !== ordered) break;
    const content = [match[3] || ""];
    const contentIndent = indent + match[2].length + 1;
    i += 1;
    // The item goes on while lines are indented under it (or blank between such lines) or are
    // lazy continuations of its text.
    while (i < lines.length) {
      const line = lines[i];
      const lead = line.match(/^ */)[0].length;
      if (!line.trim()) {
        const next = lines[i + 1];
        if (next !== undefined && next.trim() && next.match(/^ */)[0].length > indent) {
          content.push("");
          i += 1;
          continue;
        }
        break;
      }
      if (lead > indent) {
        content.push(line.slice(Math.min(lead, contentIndent)));
      } else if (!startsBlock(line, lines[i + 1]) && !ITEM.test(line)) {
        content.push(line.trim());
      } else {
        break;
      }
      i += 1;
    }
    const item = el("li");
    const task = content[0].match(/^\[([ xX])\]\s+(.*)$/);
    if (task) {
      item.className = "task";
      item.append(el("span", "check", task[1] === " " ? "☐ " : "☑ "));
      content[0] = task[2];
    }
    // The item's first lines are its text (no <p>, as in a tight list); what follows them (a
    // nested list, a code block, more paragraphs) renders as blocks.
    let lead = 0;
    const isText = (n) => content[n].trim() && !(n && startsBlock(content[n], content[n + 1]));
    while (lead < content.length && isText(lead)) lead += 1;
    if (lead === 1 && startsBlock(content[0], content[1])) lead = 0;
    content.slice(0, lead).forEach((text, n) => {
      if (n) item.append(el("br"));
      appendInline(item, text.trim(), options);
    });
    if (lead < content.length) renderBlocks(content.slice(lead), item, options);
    listEl.append(item);
    while (i < lines.length && !lines[i].trim()) {
      const next = lines[i + 1];
      const nextItem = next && next.match(ITEM);
      if (nextItem && nextItem[1].length === indent) i += 1;
      else break;
    }
  }
  parent.append(listEl);
  return i;
}

function cells(line) {
  let text = line.trim();
  if (text.startsWith("|")) text = text.slice(1);
  if (text.endsWith("|") && !text.endsWith("\\|")) text = text.slice(0, -1);
  return text.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(lines, start, parent, options) {
  const head = cells(lines[start]);
  const aligns = cells(lines[start + 1]).map((c) =>
    c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : ""
  );
  const wrap = el("div", "table-wrap");
  const tableEl = el("table");
  const thead = el("thead");
  const headRow = el("tr");
  head.forEach((text, n) => {
    const th = el("th");
    if (aligns[n]) th.dataset.align = aligns[n];
    appendInline(th, text, options);
    headRow.append(th);
  });
  thead.append(headRow);
  const tbody = el("tbody");
  let i = start + 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
    const row = el("tr");
    const values = cells(lines[i]);
    head.forEach((_, n) => {
      const td = el("td");
      if (aligns[n]) td.dataset.align = aligns[n];
      appendInline(td, values[n] ?? "", options);
      row.append(td);
    });
    tbody.append(row);
    i += 1;
  }
  tableEl.append(thead, tbody);
  wrap.append(tableEl);
  parent.append(wrap);
  return i;
}

// ---- inline -------------------------------------------------------------------------------

const BARE_URL = /^(https?:\/\/[^\s<>"]+|mailto:[^\s<>"]+@[^\s<>"]+)/i;
const EMPHASIS = [
  ["***", "strong em"],
  ["**", "strong"],
  ["__", "strong"],
  ["~~", "del"],
  ["*", "em"],
  ["_", "em"],
];

/** Append the inline Markdown of `text` (code, emphasis, links, images) to `parent`. */
export function appendInline(parent, text, options = {}, inLink = false) {
  let buffer = "";
  const flush = () => {
    if (buffer) parent.append(document.createTextNode(buffer));
    buffer = "";
  };
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    const rest = text.slice(i);
    if (ch === "\\" && /[\\`*_{}[\]()#+\-.!|~<>]/.test(text[i + 1] || "")) {
      buffer += text[i + 1];
      i += 2;
      continue;
    }
    if (ch === "`") {
      const run = rest.match(/^`+/)[0];
      const end = text.indexOf(run, i + run.length);
      if (end !== -1) {
        flush();
        parent.append(el("code", null, text.slice(i + run.length, end).replace(/^ (.+) $/, "$1")));
        i = end + run.length;
        continue;
      }
      buffer += run;
      i += run.length;
      continue;
    }
    if (ch === "!" && text[i + 1] === "[") {
      const link = parseLink(text, i + 1);
      if (link) {
        flush();
        parent.append(image(link, text.slice(i, link.end), options));
        i = link.end;
        continue;
      }
    }
    if (ch === "[" && !inLink) {
      const link = parseLink(text, i);
      if (link) {
        flush();
        const url = safeUrl(link.href);
        if (url) {
          parent.append(anchor(url, link.label, options));
        } else {
          parent.append(document.createTextNode(text.slice(i, link.end))); // shown, not followed
        }
        i = link.end;
        continue;
      }
    }
    if (ch === "<") {
      const auto = rest.match(/^<((?:https?|mailto):[^\s<>]+)>/i);
      if (auto && !inLink) {
        const url = safeUrl(auto[1]);
        if (url) {
          flush();
          parent.append(anchor(url, auto[1], options));
          i += auto[0].length;
          continue;
        }
      }
    }
    if ("hHmM".includes(ch) && !inLink && /\W|^$/.test(text[i - 1] || "")) {
      const bare = rest.match(BARE_URL);
      if (bare) {
        let raw = bare[1].replace(/[.,;:!?'"]+$/, "");
        if (raw.endsWith(")") && !raw.includes("(")) raw = raw.slice(0, -1);
        const url = safeUrl(raw);
        if (url) {
          flush();
          parent.append(anchor(url, raw, options));
          i += raw.length;
          continue;
        }
      }
    }
    const emphasis = matchEmphasis(text, i);
    if (emphasis) {
      flush();
      const [outer, inner] = emphasis.tag.split(" ");
      const node = el(outer);
      const target = inner ? node.appendChild(el(inner)) : node;
      appendInline(target, emphasis.inner, options, inLink);
      parent.append(node);
      i = emphasis.end;
      continue;
    }
    buffer += ch;
    i += 1;
  }
  flush();
}

function matchEmphasis(text, i) {
  for (const [marker, tag] of EMPHASIS) {
    if (!text.startsWith(marker, i)) continue;
    const after = text[i + marker.length];
    if (!after || /\s/.test(after)) continue;
    // Not inside words or numbers: snake_case and 2*3*4 stay as written.
    if (/[\p{L}\p{N}]/u.test(text[i - 1] || "") || text[i - 1] === marker[0]) continue;
    let search = i + marker.length + 1;
    while (search <= text.length) {
      const end = text.indexOf(marker, search);
      if (end === -1) break;
      const before = text[end - 1];
      const afterEnd = text[end + marker.length];
      const doubled = marker.length === 1 && afterEnd === marker; // `*` inside `**`
      if (!/\s/.test(before) && !doubled && !/[\p{L}\p{N}]/u.test(afterEnd || "")) {
        return { tag, inner: text.slice(i + marker.length, end), end: end + marker.length };
      }
      search = end + (doubled ? 2 : 1);
    }
  }
  return null;
}

/** `[label](href "title")` starting at `start` (the `[`), with balanced brackets, or null. */
function parseLink(text, start) {
  let depth = 0;
  let close = -1;
  for (let j = start; j < text.length; j += 1) {
    if (text[j] === "\\") {
      j += 1;
      continue;
    }
    if (text[j] === "[") depth += 1;
    if (text[j] === "]") {
      depth -= 1;
      if (depth === 0) {
        close = j;
        break;
      }
    }
  }
  if (close === -1 || text[close + 1] !== "(") return null;
  let parens = 0;
  for (let j = close + 1; j < text.length; j += 1) {
    if (text[j] === "(") parens += 1;
    if (text[j] === ")") {
      parens -= 1;
      if (parens === 0) {
        const target = text.slice(close + 2, j).trim();
        const match = target.match(/^<?([^\s>]*)>?(?:\s+["'(](.*)["')])?$/);
        if (!match) return null;
        return { label: text.slice(start + 1, close), href: match[1], title: match[2], end: j + 1 };
      }
    }
  }
  return null;
}

function anchor(url, label, options) {
  const a = el("a");
  a.href = url.href;
  a.rel = "noopener noreferrer";
  a.target = "_blank";
  appendInline(a, label, options, true);
  if (!a.textContent) a.textContent = url.href;
  return a;
}

function image(link, source, options) {
  const url = safeUrl(link.href, IMAGE_SCHEMES);
  if (!url) return document.createTextNode(source); // data:, javascript:, relative: text only
  if (options.imageAllowed && options.imageAllowed(url.href)) return loadedImage(url, link.label);
  const button = el("button", "load-image", `Load image from ${url.host}`);
  button.type = "button";
  button.dataset.src = url.href;
  button.dataset.alt = link.label;
  button.title = url.href;
  return button;
}

/** The <img> for an external image the user chose to load. */
export function loadedImage(url, alt) {
  const img = el("img", "md-image");
  img.alt = alt || "";
  img.referrerPolicy = "no-referrer";
  img.decoding = "async";
  img.src = url.href;
  return img;
}
