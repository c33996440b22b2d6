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

/** fetch() with the session cookie (and the CSRF token for unsafe methods); a network failure
 * rejects with an ApiError ("abort" when `init.signal` aborted it). */
async function send(url, init) {
  const headers = { ...init.headers };
  if (!["GET", "HEAD"].includes(init.method)) headers["X-CSRFToken"] = csrfToken();
  try {
    return await fetch(url, { ...init, headers, credentials: "same-origin" });
  } catch (error) {
    if (error?.name === "AbortError") throw new ApiError("", "abort", 0);
    throw new ApiError(gettext("The server cannot be reached right now."), "network", 0);
  }
}

/** The ApiError of a failed answer: the server's plain sentence when it sent one. */
async function failure(response) {
  const data = await response.json().catch(() => null);
  const error = data?.error || {};
  const message =
    error.message ||
    interpolate(gettext("The server answered %(status)s."), { status: response.status });
  return new ApiError(message, error.code || "http_error", response.status);
}

/** Call the API; resolves to the JSON body (null for 204), rejects with an ApiError whose
 * message is the server's plain sentence ({"error": {"code", "message", "details"}}). */
export async function api(method, url, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await send(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  if (!response.ok) throw await failure(response);
  return response.json().catch(() => null);
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

// The page's voice endpoints (docs/voice.md): their URLs come from the page (#app data-*).
export const voiceApi = {
  /** The words of a recording (a Blob), as {text}. */
  transcribe: async (url, recording, signal) => {
    const form = new FormData();
    const subtype = recording.type.split(";")[0].split("/")[1] || "webm";
    const extension = subtype.replace("x-", "");
    form.append("audio", recording, `recording.${extension}`);
    const init = { method: "POST", headers: { Accept: "application/json" }, body: form, signal };
    const response = await send(url, init);
    if (!response.ok) throw await failure(response);
    return response.json();
  },
  /** An answer read aloud: its audio as an ArrayBuffer. */
  speech: async (url, messageId, signal) => {
    const response = await send(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ message_id: messageId }),
      signal,
    });
    if (!response.ok) throw await failure(response);
    return response.arrayBuffer();
  },
};
