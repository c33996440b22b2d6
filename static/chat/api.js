// The REST API (/api/v1/) with the browser's session cookie; unsafe methods send the CSRF token.

import { gettext, interpolate } from "./i18n.js";

export class ApiError extends Error {
  constructor(message, code, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

function csrfToken() {
  const cookie = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
  if (cookie) return decodeURIComponent(cookie.slice("csrftoken=".length));
  return document.querySelector("input[name=csrfmiddlewaretoken]")?.value || "";
}

/** Call the API; resolves to the JSON body (null for 204), rejects with an ApiError whose
 * message is the server's plain sentence ({"error": {"code", "message", "details"}}). */
export async function api(method, url, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (!["GET", "HEAD"].includes(method)) headers["X-CSRFToken"] = csrfToken();
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(gettext("The server cannot be reached right now."), "network", 0);
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = data?.error || {};
    const message =
      error.message ||
      interpolate(gettext("The server answered %(status)s."), { status: response.status });
    throw new ApiError(message, error.code || "http_error", response.status);
  }
  return data;
}

export const sessionsApi = {
  list: (search) =>
    api("GET", `/api/v1/sessions/${search ? `?search=${encodeURIComponent(search)}` : ""}`),
  page: (url) => {
    const next = new URL(url, location.href); // only ever follow our own origin
    if (next.origin !== location.origin) {
      throw new ApiError(gettext("Unexpected next page."), "invalid", 0);
    }
    return api("GET", next.pathname + next.search);
  },
  rename: (id, title) => api("PATCH", `/api/v1/sessions/${encodeURIComponent(id)}/`, { title }),
  remove: (id) => api("DELETE", `/api/v1/sessions/${encodeURIComponent(id)}/`),
};

export const memoryApi = {
  get: (id) => api("GET", `/api/v1/sessions/${encodeURIComponent(id)}/memory/`),
  clear: (id) => api("DELETE", `/api/v1/sessions/${encodeURIComponent(id)}/memory/`),
};

const session = (id) => `/api/v1/sessions/${encodeURIComponent(id)}`;
const message = (sid, mid) => `${session(sid)}/messages/${encodeURIComponent(mid)}`;

export const actionsApi = {
  regenerate: (sid, mid) => api("POST", `${message(sid, mid)}/regenerate/`, {}),
  edit: (sid, mid, body) => api("POST", `${message(sid, mid)}/edit/`, body),
  rate: (sid, mid, rating, note) =>
    api("PUT", `${message(sid, mid)}/feedback/`, note === undefined ? { rating } : { rating, note }),
  unrate: (sid, mid) => api("DELETE", `${message(sid, mid)}/feedback/`),
  feedback: (sid) => api("GET", `${session(sid)}/feedback/`),
  session: (sid) => api("GET", `${session(sid)}/`),
  search: (q) => api("GET", `/api/v1/sessions/search/?q=${encodeURIComponent(q)}`),
};
