// Page chrome: theme and expert-detail toggles (remembered), the language menu, the phone
// drawer, toasts, the screen-reader announcer and the delete confirmation.

import { gettext } from "./i18n.js";

/** localStorage that never throws (storage can be blocked): null when unreadable. */
export function stored(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

export function store(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    /* storage blocked: the choice lasts for this page only */
  }
}

export function forget(key) {
  try {
    localStorage.removeItem(key);
  } catch {
    /* storage blocked */
  }
}

const root = document.documentElement;
const darkQuery = window.matchMedia("(prefers-color-scheme: dark)");

function effectiveTheme() {
  return root.dataset.theme || (darkQuery.matches ? "dark" : "light");
}

/** The header's theme button: follows the system until the user picks a theme. */
export function setupThemeToggle(button) {
  const paint = () => {
    const next = effectiveTheme() === "dark" ? "light" : "dark";
    const label = next === "dark" ? gettext("Switch to dark theme") : gettext("Switch to light theme");
    button.setAttribute("aria-label", label);
    button.title = label;
    button.dataset.next = next;
  };
  button.addEventListener("click", () => {
    const next = effectiveTheme() === "dark" ? "light" : "dark";
    root.dataset.theme = next;
    store("theme", next);
    paint();
  });
  darkQuery.addEventListener("change", paint);
  paint();
}

/** The header's "Experts" switch: shows or hides what experts did inside their panels. */
export function setupExpertToggle(button) {
  const paint = () => {
    const shown = !root.classList.contains("hide-experts");
    button.setAttribute("aria-pressed", String(shown));
    button.title = shown ? gettext("Hide what the experts did") : gettext("Show what the experts did");
  };
  root.classList.toggle("hide-experts", stored("showExperts") === "0");
  button.addEventListener("click", () => {
    const hide = !root.classList.contains("hide-experts");
    root.classList.toggle("hide-experts", hide);
    store("showExperts", hide ? "0" : "1");
    paint();
  });
  paint();
}

/** The sidebar as a drawer on narrow screens. */
export function setupDrawer(layout, menuButton, closeButton, backdrop) {
  const set = (open) => {
    layout.classList.toggle("drawer-open", open);
    menuButton.setAttribute("aria-expanded", String(open));
    if (open) layout.querySelector("#session-search")?.focus();
  };
  menuButton.addEventListener("click", () => set(!layout.classList.contains("drawer-open")));
  closeButton.addEventListener("click", () => set(false));
  backdrop.addEventListener("click", () => set(false));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && layout.classList.contains("drawer-open")) {
      set(false);
      menuButton.focus();
    }
  });
  return { close: () => set(false) };
}

const TOAST_SECONDS = 12;
const TOASTS_SHOWN = 3;

/** A short notification under the header, clear of the composer. It goes by itself after a
 * few seconds (held while the pointer or focus is on it); at most three show at once. `action`
 * adds a button {label, run}. */
export function toast(container, { title, text, action = null, seconds = TOAST_SECONDS }) {
  const item = document.createElement("div");
  item.className = "toast"; // read out through the announcer, not as a live region
  const body = document.createElement("div");
  const head = document.createElement("strong");
  head.textContent = title;
  const message = document.createElement("p");
  message.textContent = text;
  body.append(head, message);
  if (action) {
    const go = document.createElement("button");
    go.type = "button";
    go.className = "link";
    go.textContent = action.label;
    go.addEventListener("click", () => {
      item.remove();
      action.run();
    });
    body.append(go);
  }
  const close = document.createElement("button");
  close.type = "button";
  close.className = "icon-btn close";
  close.setAttribute("aria-label", gettext("Dismiss"));
  close.addEventListener("click", () => item.remove());
  item.append(body, close);
  container.append(item);
  while (container.children.length > TOASTS_SHOWN) container.firstElementChild.remove();
  let timer = null;
  const start = () => {
    clearTimeout(timer);
    timer = setTimeout(() => item.remove(), seconds * 1000);
  };
  const hold = () => clearTimeout(timer);
  item.addEventListener("pointerenter", hold);
  item.addEventListener("pointerleave", start);
  item.addEventListener("focusin", hold);
  item.addEventListener("focusout", start);
  start();
  return item;
}

/** Say something to screen readers (a polite live region). Things said in the same moment
 * are read together, so none is lost (two experts asked at once are both announced). */
export function announcer(region) {
  let timer = null;
  let pending = [];
  return (text) => {
    if (!pending.length) region.textContent = "";
    pending.push(text);
    clearTimeout(timer);
    // A fresh text node after a tick makes screen readers read repeated words again.
    timer = setTimeout(() => {
      region.textContent = pending.join(" · ");
      pending = [];
    }, 50);
  };
}

/** Ask before deleting; resolves true when the user confirms. Focus goes back to what had it
 * (the list's delete button) when the dialog closes. */
export function confirmDelete(dialog, title) {
  const opener = document.activeElement;
  dialog.querySelector("[data-title]").textContent = title;
  dialog.returnValue = "";
  dialog.showModal();
  dialog.querySelector("[value=cancel]").focus();
  return new Promise((resolve) => {
    const done = () => {
      const confirmed = dialog.returnValue === "delete";
      if (!confirmed && opener?.isConnected) opener.focus();
      resolve(confirmed);
    };
    dialog.addEventListener("close", done, { once: true });
  });
}

/** The language menu: posts Django's set_language form when the choice changes. */
export function setupLanguage(select) {
  if (!select) return;
  select.addEventListener("change", () => select.form.submit());
}
