// Math in answers: `$…$` inline and `$$…$$` display formulas (a markdown-it inline rule), typeset
// by KaTeX once it is loaded (on the first formula; static/vendor/katex-*). Until then, or if
// KaTeX refuses a formula, the source stays visible, styled as code. Prices ("$5 and $10") are
// not formulas: as in Pandoc, an opening `$` has a non-space after it, a closing `$` a
// non-space before it and no digit after it.

const KATEX = new URL("../vendor/katex-0.19.1/", import.meta.url);
const OPTIONS = {
  throwOnError: false, // a bad formula is shown with its source, in the error colour
  trust: false, // no \href, \url, \includegraphics, \htmlClass…
  strict: "ignore",
  maxSize: 20,
  maxExpand: 500,
  output: "htmlAndMathml", // MathML for screen readers
};

/** The markdown-it inline rule: a `math` token whose markup is `$` or `$$`. */
export function mathInline(state, silent) {
  const src = state.src;
  const start = state.pos;
  if (src[start] !== "$") return false;
  const markup = src[start + 1] === "$" ? "$$" : "$";
  const from = start + markup.length;
  if (from >= state.posMax || /\s/.test(src[from])) return false;
  let end = src.indexOf(markup, from);
  while (end !== -1 && end < state.posMax) {
    const escaped = src[end - 1] === "\\";
    const spaced = /\s/.test(src[end - 1]);
    const digit = markup === "$" && /\d/.test(src[end + 1] || "");
    if (!escaped && !spaced && !digit) break;
    end = src.indexOf(markup, end + 1);
  }
  if (end === -1 || end >= state.posMax || end === from) return false;
  if (!silent) {
    const token = state.push("math", "span", 0);
    token.markup = markup;
    token.content = src.slice(from, end);
  }
  state.pos = end + markup.length;
  return true;
}

let loading = null;

function load() {
  loading ??= new Promise((resolve, reject) => {
    const sheet = document.createElement("link");
    sheet.rel = "stylesheet";
    sheet.href = new URL("katex.min.css", KATEX).href;
    const script = document.createElement("script");
    script.src = new URL("katex.min.js", KATEX).href;
    script.addEventListener("load", () => resolve(window.katex));
    script.addEventListener("error", () => reject(new Error("KaTeX did not load")));
    document.head.append(sheet, script);
  });
  return loading;
}

function render(katex, span) {
  try {
    const displayMode = span.classList.contains("math-display");
    katex.render(span.dataset.tex || "", span, { ...OPTIONS, displayMode });
    span.classList.add("typeset");
  } catch {
    span.classList.add("math-error"); // keeps its source text
  }
}

/** Typeset a `span.math` now if KaTeX is there, else as soon as it has loaded. */
export function typeset(span) {
  if (window.katex) {
    render(window.katex, span);
    return;
  }
  load()
    .then((katex) => {
      for (const pending of document.querySelectorAll("span.math:not(.typeset)")) {
        render(katex, pending);
      }
      if (!span.classList.contains("typeset")) render(katex, span);
    })
    .catch(() => {
      /* the formulas stay as code */
    });
}
