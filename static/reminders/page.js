// What the tasks page's scripts share: small DOM builders (text only, never HTML) and the
// status line under the page's title.

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function button(text, className, onClick) {
  const node = el("button", className, text);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

/** A labelled form field: the label's text, then the input. */
export function field(label, input) {
  const wrap = el("label", "field");
  wrap.append(el("span", "", label), input);
  return wrap;
}

/** Say something in the status line (an error is marked so it reads as one). */
export function say(text, isError = false) {
  const statusLine = document.getElementById("planner-status");
  statusLine.textContent = text || "";
  statusLine.dataset.error = isError ? "true" : "false";
}
