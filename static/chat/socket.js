// The websocket of docs/protocol.md: reconnects by itself with exponential backoff and jitter,
// and re-sends message.send frames the server has not acknowledged (same message_id, so the
// server stores each once).

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 10000;
const CLOSE_UNAUTHENTICATED = 4401;

export class ChatSocket {
  /**
   * @param {string} url  ws(s):// URL
   * @param {object} hooks  onOpen(), onEvent(event), onStatus(state, delayMs), onUnauthenticated()
   */
  constructor(url, hooks) {
    this.url = url;
    this.hooks = hooks;
    this.socket = null;
    this.delay = FIRST_DELAY_MS;
    this.timer = null;
    this.unacknowledged = new Map(); // message_id -> message.send frame
    window.addEventListener("online", () => this.reconnectNow());
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.reconnectNow();
    });
  }

  connect() {
    clearTimeout(this.timer);
    this.timer = null;
    this.hooks.onStatus("connecting");
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener("open", () => {
      this.delay = FIRST_DELAY_MS;
      this.hooks.onStatus("connected");
      this.hooks.onOpen();
      for (const frame of this.unacknowledged.values()) this.sendNow(frame);
    });
    socket.addEventListener("message", (e) => {
      let event;
      try {
        event = JSON.parse(e.data);
      } catch {
        return; // not JSON: nothing a client can do with it
      }
      if (event && typeof event === "object") this.hooks.onEvent(event);
    });
    socket.addEventListener("close", (e) => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (e.code === CLOSE_UNAUTHENTICATED) {
        this.hooks.onUnauthenticated();
        return;
      }
      this.scheduleReconnect();
    });
  }

  scheduleReconnect() {
    if (this.timer) return;
    // Full jitter keeps many tabs from reconnecting in lockstep after a server restart.
    const wait = Math.round(this.delay / 2 + Math.random() * (this.delay / 2));
    this.hooks.onStatus("reconnecting", wait);
    this.timer = setTimeout(() => this.connect(), wait);
    this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
  }

  reconnectNow() {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
      this.connect();
    }
  }

  get isOpen() {
    return this.socket !== null && this.socket.readyState === WebSocket.OPEN;
  }

  /** Send a frame now if the socket is open (frames other than message.send are not kept). */
  sendNow(frame) {
    if (!this.isOpen) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  /** Send a user message, kept until the server acknowledges it (or refuses it). */
  sendMessage(frame) {
    this.unacknowledged.set(frame.message_id, frame);
    this.sendNow(frame);
  }

  /** The server stored (or refused) this message: stop re-sending it. */
  settle(messageId) {
    const frame = this.unacknowledged.get(messageId);
    this.unacknowledged.delete(messageId);
    return frame;
  }
}
