// The test search's "Search as" field (templates/admin/knowledge/search.html): usernames are
// suggested as the admin types, from Django admin's autocomplete endpoint (users the staff member
// may view). Without this script the field takes a typed username.
const list = document.getElementById("search-as-users");
const field = document.querySelector("input[list=search-as-users]");

let pending = null;

/** Ask the admin's autocomplete for usernames matching `term`. */
async function suggest(term) {
  const url = new URL(list.dataset.autocomplete, window.location.href);
  url.search = new URLSearchParams({
    term,
    app_label: "knowledge",
    model_name: "document",
    field_name: "uploaded_by",
  }).toString();
  const answer = await fetch(url, { credentials: "same-origin" });
  if (!answer.ok) return;
  const body = await answer.json();
  list.replaceChildren(
    ...(body.results || []).map((user) => {
      const option = document.createElement("option");
      option.value = user.text;
      return option;
    })
  );
}

if (list && field) {
  field.addEventListener("input", () => {
    clearTimeout(pending);
    const term = field.value.trim();
    if (!term) return;
    pending = setTimeout(() => suggest(term).catch(() => {}), 200);
  });
}
