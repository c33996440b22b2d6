// The upload page's drop zone (templates/admin/knowledge/upload.html): files dropped on it go
// into the form's own file input, and the chosen files are listed before they are sent. Without
// this script the page is a plain multi-file form that does the same.
import { gettext, interpolate, ngettext } from "../chat/i18n.js";

const zone = document.querySelector("[data-drop-zone]");
const input = zone?.querySelector("input[type=file]");
const chosen = zone?.querySelector("[data-chosen]");
const tooMany = zone?.querySelector("[data-too-many]");

/** Whether more files are chosen than the server takes at once (it would refuse them all). */
function overLimit() {
  const maxFiles = Number(zone.dataset.maxFiles || 0); // DATA_UPLOAD_MAX_NUMBER_FILES
  const over = maxFiles > 0 && (input.files?.length || 0) > maxFiles;
  tooMany.hidden = !over;
  tooMany.textContent = over
    ? interpolate(
        ngettext(
          "At most %(count)s file can be uploaded at once; upload them in smaller groups.",
          "At most %(count)s files can be uploaded at once; upload them in smaller groups.",
          maxFiles
        ),
        { count: maxFiles }
      )
    : "";
  return over;
}

/** The size of a file as people read it. */
function size(bytes) {
  if (bytes < 1024) return interpolate(gettext("%(n)s bytes"), { n: bytes });
  if (bytes < 1024 * 1024) return interpolate(gettext("%(n)s KB"), { n: Math.round(bytes / 1024) });
  return interpolate(gettext("%(n)s MB"), { n: (bytes / 1024 / 1024).toFixed(1) });
}

/** List the files the input holds now. */
function list() {
  overLimit();
  const files = Array.from(input.files || []);
  chosen.replaceChildren();
  chosen.hidden = files.length === 0;
  if (!files.length) return;
  const head = document.createElement("li");
  head.className = "kb-chosen-count";
  head.textContent = interpolate(
    ngettext("%(count)s file chosen", "%(count)s files chosen", files.length),
    { count: files.length }
  );
  chosen.append(head);
  for (const file of files) {
    const item = document.createElement("li");
    item.textContent = `${file.name} (${size(file.size)})`;
    chosen.append(item);
  }
}

if (zone && input && chosen && tooMany) {
  zone.classList.add("is-live");
  zone.querySelector("[data-drop-hint]").hidden = false;
  for (const type of ["dragenter", "dragover"]) {
    zone.addEventListener(type, (event) => {
      event.preventDefault();
      zone.classList.add("is-over");
    });
  }
  zone.addEventListener("dragleave", (event) => {
    if (!zone.contains(event.relatedTarget)) zone.classList.remove("is-over");
  });
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("is-over");
    const files = event.dataTransfer?.files;
    if (!files || !files.length) return;
    input.files = files; // the form sends them as if chosen in the dialog
    list();
  });
  input.addEventListener("change", list);
  input.form.addEventListener("submit", (event) => {
    if (overLimit()) event.preventDefault();
  });
  list(); // a reload may keep a choice
}
