// An undo offered by a tool result (`undo`: {url, label, done}; e.g. schedule_prompt's "Undo"
// under its confirmation): a button under the tool chip that sends DELETE to the url, which
// is the user's own REST resource (the server checks the owner). Live and replayed alike.

import { api } from "./api.js";
import { gettext } from "./i18n.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Only our own API's paths: a result never sends the browser elsewhere. */
function ownApiPath(url) {
  return typeof url === "string" && /^\/api\/v1\/[\w/-]+\/$/.test(url) ? url : null;
}

/** Paint (or remove) the undo button of a tool message `node` for its call `tool`. */
export function paintUndo(node, tool) {
  const offer = tool.ok ? tool.result?.undo : null;
  const url = ownApiPath(offer?.url);
  if (!url) {
    node.undoBox?.remove();
    node.undoBox = null;
    return;
  }
  if (node.undoBox?.dataset.url === url) return; // painted already (a repaint of the same call)
  node.undoBox?.remove();
  const box = el("div", "undo-offer");
  box.dataset.url = url;
  const button = el("button", "undo-btn", offer.label || gettext("Undo"));
  button.type = "button";
  const status = el("span", "undo-status");
  status.setAttribute("role", "status");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await api("DELETE", url);
      status.textContent = offer.done || gettext("Undone.");
      button.remove();
    } catch (error) {
      status.textContent = error.status === 404 ? gettext("Already removed.") : error.message;
      if (error.status === 404) button.remove();
      else button.disabled = false;
    }
  });
  box.append(button, status);
  node.undoBox = box;
  node.el.append(box);
}
