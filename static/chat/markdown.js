// Model text to safe DOM: markdown-it parses (raw HTML off, so `<script>` stays visible text),
// renderer rules shape the output for this page, DOMPurify sanitizes the HTML string into a
// fragment with a short allowlist, and a last pass fixes links and task items. Links keep only
// http(s) and mailto targets; an image becomes a "Load image from <host>" button until the user
// asks for it. Code in a known language is highlighted (highlight.js); `$…$` and `$$…$$` are
// typeset (KaTeX, loaded on first use), and shown as code until then. Libraries are vendored in
// static/vendor/ (see its README.md).

import DOMPurify from "../vendor/dompurify-3.4.18/purify.es.mjs";
import hljs from "../vendor/highlightjs-11.12.0/core.min.js";
import bash from "../vendor/highlightjs-11.12.0/languages/bash.min.js";
import c from "../vendor/highlightjs-11.12.0/languages/c.min.js";
import cpp from "../vendor/highlightjs-11.12.0/languages/cpp.min.js";
import css from "../vendor/highlightjs-11.12.0/languages/css.min.js";
import diff from "../vendor/highlightjs-11.12.0/languages/diff.min.js";
import go from "../vendor/highlightjs-11.12.0/languages/go.min.js";
import java from "../vendor/highlightjs-11.12.0/languages/java.min.js";
import javascript from "../vendor/highlightjs-11.12.0/languages/javascript.min.js";
import json from "../vendor/highlightjs-11.12.0/languages/json.min.js";
import markdown from "../vendor/highlightjs-11.12.0/languages/markdown.min.js";
import python from "../vendor/highlightjs-11.12.0/languages/python.min.js";
import rust from "../vendor/highlightjs-11.12.0/languages/rust.min.js";
import shell from "../vendor/highlightjs-11.12.0/languages/shell.min.js";
import sql from "../vendor/highlightjs-11.12.0/languages/sql.min.js";
import typescript from "../vendor/highlightjs-11.12.0/languages/typescript.min.js";
import xml from "../vendor/highlightjs-11.12.0/languages/xml.min.js";
import yaml from "../vendor/highlightjs-11.12.0/languages/yaml.min.js";
import markdownit from "../vendor/markdown-it-15.0.3/markdown-it.esm.min.mjs";
import { gettext, interpolate } from "./i18n.js";
import { mathInline, typeset } from "./math.js";

const LANGUAGES = {
  bash, c, cpp, css, diff, go, java, javascript, json, markdown, python, rust, shell, sql,
  typescript, xml, yaml,
};
for (const [name, grammar] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, grammar);

const LINK_SCHEMES = ["http:", "https:", "mailto:"];
const IMAGE_SCHEMES = ["http:", "https:"];
// Blocks nested deeper than this (quotes, lists) are shown as plain text: no stack overflow on
// `>>>>…` and no DOM thousands of levels deep.
const MAX_NESTING = 20;

/** The normalized URL if `raw` is absolute and uses one of `schemes`, else null. */
export function safeUrl(raw, schemes = LINK_SCHEMES) {
  let url;
  try {
    url = new URL(String(raw).trim());
  } catch {
    return null; // relative or malformed: not a link we follow
  }
  return schemes.includes(url.protocol) ? url : null;
}

export const md = markdownit({ html: false, linkify: true, breaks: true, maxNesting: 100 });
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false }); // only URLs with a scheme become links
md.validateLink = (url) => safeUrl(url) !== null; // others stay visible text: [x](javascript:…)
md.inline.ruler.after("escape", "math", mathInline);

const escape = md.utils.escapeHtml;

// markdown-it would drop every line past its own maxNesting (100, which still bounds inline
// nesting); blocks stop nesting at MAX_NESTING instead, and the rest is kept, as text.
const tokenizeBlocks = md.block.tokenize.bind(md.block);
md.block.tokenize = (state, startLine, endLine) => {
  if (state.level < MAX_NESTING) return tokenizeBlocks(state, startLine, endLine);
  const text = state.getLines(startLine, endLine, state.blkIndent, false).trim();
  state.line = endLine;
  if (!text) return;
  state.push("paragraph_open", "p", 1).map = [startLine, endLine];
  const inline = state.push("inline", "", 0);
  Object.assign(inline, { content: text, map: [startLine, endLine], children: [] });
  state.push("paragraph_close", "p", -1);
};

const rules = md.renderer.rules;

// `#` is the page's second level (the page has its own <h1>); the class keeps the source level.
rules.heading_open = (tokens, i) => {
  const level = Number(tokens[i].tag.slice(1));
  return `<h${Math.min(6, level + 1)} class="md-h${level}">`;
};
rules.heading_close = (tokens, i) => `</h${Math.min(6, Number(tokens[i].tag.slice(1)) + 1)}>\n`;

/** Code as HTML: highlighted when the language is one we know (highlight.js escapes the code
 * and adds only <span class="hljs-…">), else escaped. */
export function highlightCode(code, lang) {
  const known = lang && hljs.getLanguage(lang);
  if (!known) return escape(code);
  return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
}

function codeBlock(code, lang) {
  const label = `<span class="lang">${escape(lang || "text")}</span>`;
  const copy = `<button type="button" class="copy" aria-label="${escape(gettext("Copy code"))}">${escape(gettext("Copy"))}</button>`;
  const data = lang ? ` data-lang="${escape(lang)}"` : "";
  const body = highlightCode(code.replace(/\n$/, ""), lang);
  return `<figure class="code-block"><figcaption>${label}${copy}</figcaption><pre><code${data}>${body}</code></pre></figure>\n`;
}
rules.fence = (tokens, i) => codeBlock(tokens[i].content, tokens[i].info.trim().split(/\s+/)[0]);
rules.code_block = (tokens, i) => codeBlock(tokens[i].content, "");

// Tables scroll sideways in a wrapper; alignment is a data attribute (the CSP forbids style="").
rules.table_open = () => '<div class="table-wrap"><table>\n';
rules.table_close = () => "</table></div>\n";
function cell(tokens, i) {
  const align = (tokens[i].attrGet("style") || "").match(/text-align:(left|right|center)/);
  return `<${tokens[i].tag}${align ? ` data-align="${align[1]}"` : ""}>`;
}
rules.th_open = cell;
rules.td_open = cell;

// Math: the source, shown as code until KaTeX typesets it (after sanitizing, from data-tex).
rules.math = (tokens, i) => {
  const { content, markup } = tokens[i];
  const display = markup === "$$" ? " math-display" : "";
  return `<span class="math${display}" data-tex="${escape(content)}">${escape(markup + content + markup)}</span>`;
};

// An image is never loaded by itself: a button names the host; a click creates the <img>.
rules.image = (tokens, i, options, env, self) => {
  const token = tokens[i];
  const alt = self.renderInlineAsText(token.children, options, env);
  const url = safeUrl(token.attrGet("src"), IMAGE_SCHEMES);
  if (!url) return escape(`![${alt}](${token.attrGet("src")})`);
  return (
    `<button type="button" class="load-image" data-src="${escape(url.href)}"` +
    ` data-alt="${escape(alt)}" title="${escape(url.href)}">` +
    `${escape(interpolate(gettext("Load image from %(host)s"), { host: url.host }))}</button>`
  );
};

const purify = DOMPurify(window);
purify.setConfig({
  RETURN_DOM_FRAGMENT: true,
  ALLOWED_TAGS: [
    "p", "br", "hr", "h2", "h3", "h4", "h5", "h6", "em", "strong", "s", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "div", "table", "thead", "tbody", "tr", "th", "td",
    "figure", "figcaption", "span", "button",
  ],
  ALLOWED_ATTR: [
    "href", "title", "class", "start", "type", "aria-label",
    "data-align", "data-lang", "data-src", "data-alt", "data-tex",
  ],
  ALLOW_DATA_ATTR: false,
  // href and data-src must be http(s)/mailto URLs; these hold plain values, not URLs.
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  ADD_URI_SAFE_ATTR: [
    "start", "type", "aria-label", "data-align", "data-lang", "data-alt", "data-tex",
  ],
});

/** Render markdown-it `tokens` (from `md.parse`) to a safe DocumentFragment. `options
 * .imageAllowed(url)` says whether an image the user already chose to load is shown at once. */
export function renderTokens(tokens, env, options = {}) {
  const fragment = purify.sanitize(md.renderer.render(tokens, md.options, env));
  for (const a of fragment.querySelectorAll("a")) {
    const url = safeUrl(a.getAttribute("href") || "");
    if (!url) {
      a.replaceWith(...a.childNodes); // the sanitizer dropped a target we do not follow
      continue;
    }
    a.href = url.href;
    a.rel = "noopener noreferrer";
    a.target = "_blank";
  }
  for (const button of fragment.querySelectorAll("button.load-image")) {
    const url = safeUrl(button.dataset.src, IMAGE_SCHEMES);
    if (url && options.imageAllowed?.(url.href)) {
      button.replaceWith(loadedImage(url, button.dataset.alt));
    }
  }
  for (const item of fragment.querySelectorAll("li")) markTask(item);
  for (const span of fragment.querySelectorAll("span.math")) typeset(span);
  return fragment;
}

/** Render Markdown `source` to a safe DocumentFragment (see `renderTokens`). */
export function renderMarkdown(source, options = {}) {
  const env = {};
  return renderTokens(md.parse(String(source ?? ""), env), env, options);
}

/** `- [ ] todo` / `- [x] done`: a check mark instead of the brackets. */
function markTask(item) {
  const host = item.firstElementChild?.tagName === "P" ? item.firstElementChild : item;
  const first = host.firstChild;
  const match = first?.nodeType === Node.TEXT_NODE && first.data.match(/^\[([ xX])\]\s+/);
  if (!match) return;
  first.data = first.data.slice(match[0].length);
  const check = document.createElement("span");
  check.className = "check";
  check.textContent = match[1] === " " ? "☐ " : "☑ ";
  host.prepend(check);
  item.classList.add("task");
}

/** The <img> for an external image the user chose to load. */
export function loadedImage(url, alt) {
  const img = document.createElement("img");
  img.className = "md-image";
  img.alt = alt || "";
  img.referrerPolicy = "no-referrer";
  img.decoding = "async";
  img.src = url.href;
  return img;
}
