// Voice (docs/voice.md): the composer's microphone records with MediaRecorder, the server turns
// the recording into words, and they go into the composer for the user to edit or send (never
// sent by themselves); "Read aloud" on an answer plays the speech the server makes of it. The
// server says which of the two it has (#app data-transcribe-url, data-speech-url).

import { ApiError, voiceApi } from "./api.js";
import { gettext } from "./i18n.js";

// What MediaRecorder is asked for, best first (Chromium and Firefox: WebM/Opus; Safari: MP4).
const RECORDING_TYPES = [
  "audio/webm;codecs=opus",
  "audio/webm",
  "audio/ogg;codecs=opus",
  "audio/mp4",
];
const SHORTEST_MS = 400; // a tap, not a recording: nothing is sent

/** "0:07" */
function clock(seconds) {
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

/** The message a refused or missing microphone gets, in the page's language. */
function microphoneProblem(error) {
  if (error?.name === "NotAllowedError" || error?.name === "SecurityError") {
    return gettext(
      "The microphone is blocked. Allow it in the browser's site settings to dictate."
    );
  }
  if (error?.name === "NotFoundError" || error?.name === "OverconstrainedError") {
    return gettext("No microphone was found.");
  }
  return gettext("The microphone could not be started.");
}

/** The microphone button and its recording strip above the composer. States: idle, recording,
 * transcribing; Escape or Cancel drops a recording (and a transcription under way). */
export class VoiceInput {
  constructor({ button, strip, url, maxSeconds, maxBytes, insert, error, announce }) {
    Object.assign(this, { button, strip, url, insert, error, announce });
    this.box = () => document.getElementById(button.getAttribute("aria-controls"));
    this.maxSeconds = maxSeconds || 120;
    this.maxBytes = maxBytes || 10 * 1024 * 1024;
    this.words = strip.querySelector("[data-words]");
    this.time = strip.querySelector("[data-time]");
    this.state = "idle";
    this.button.hidden = !VoiceInput.supported();
    button.addEventListener("click", () => (this.state === "idle" ? this.start() : this.stop()));
    strip.querySelector("[data-cancel]").addEventListener("click", () => this.cancel());
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && this.state !== "idle" && !e.shiftKey) {
        e.preventDefault();
        this.cancel();
      }
    });
    this.paint();
  }

  static supported() {
    return Boolean(navigator.mediaDevices?.getUserMedia && window.MediaRecorder);
  }

  async start() {
    this.error("");
    this.state = "starting";
    this.paint();
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (problem) {
      this.state = "idle";
      this.paint();
      this.error(microphoneProblem(problem));
      return;
    }
    if (this.state !== "starting") return this.release(); // cancelled while the browser asked
    const mimeType = RECORDING_TYPES.find((type) => MediaRecorder.isTypeSupported?.(type));
    this.recorder = new MediaRecorder(this.stream, mimeType ? { mimeType } : undefined);
    this.chunks = [];
    this.recorder.addEventListener("dataavailable", (e) => e.data.size && this.chunks.push(e.data));
    this.recorder.addEventListener("stop", () => this.recorded());
    this.recorder.start(250);
    this.startedAt = Date.now();
    this.state = "recording";
    this.timer = setInterval(() => this.tick(), 250);
    this.paint();
    this.announce(gettext("Recording. Press the microphone again to stop, Escape to cancel."));
  }

  tick() {
    const seconds = Math.floor((Date.now() - this.startedAt) / 1000);
    this.time.textContent = clock(seconds);
    if (seconds >= this.maxSeconds) this.stop(); // the server's limit: transcribe what there is
  }

  /** Stop recording and transcribe. */
  stop() {
    if (this.state === "starting") return this.cancel();
    if (this.state !== "recording") return;
    this.state = "stopping";
    this.recorder.stop(); // then "stop" fires: recorded()
  }

  /** Drop the recording, or the transcription under way; nothing reaches the composer. */
  cancel() {
    const was = this.state;
    this.state = "idle";
    this.transcription?.abort();
    if (this.recorder && this.recorder.state !== "inactive") this.recorder.stop();
    this.release();
    this.paint();
    if (was !== "idle") this.announce(gettext("Recording cancelled."));
    this.button.focus();
  }

  release() {
    clearInterval(this.timer);
    this.stream?.getTracks().forEach((track) => track.stop());
    this.stream = null;
  }

  async recorded() {
    this.release();
    if (this.state !== "stopping") return; // cancelled
    const type = this.recorder.mimeType || this.chunks[0]?.type || "audio/webm";
    const recording = new Blob(this.chunks, { type });
    if (Date.now() - this.startedAt < SHORTEST_MS || !recording.size) {
      this.state = "idle";
      this.paint();
      this.error(gettext("Nothing was recorded. Hold on a moment longer before you stop."), "info");
      return;
    }
    if (recording.size > this.maxBytes) {
      this.state = "idle";
      this.paint();
      this.error(gettext("The recording is too long. Record a shorter message."));
      return;
    }
    this.state = "transcribing";
    this.paint();
    this.transcription = new AbortController();
    try {
      const { text } = await voiceApi.transcribe(this.url, recording, this.transcription.signal);
      if (this.state !== "transcribing") return;
      if (text) {
        this.insert(text);
        this.announce(gettext("Your words are in the message box: edit them or send."));
      } else {
        this.error(gettext("No words were heard. Try again closer to the microphone."), "info");
      }
    } catch (problem) {
      if (problem.code !== "abort" && this.state === "transcribing") this.error(problem.message);
    } finally {
      if (this.state === "transcribing") {
        this.state = "idle";
        this.paint();
        if (document.activeElement !== this.box()) this.button.focus(); // it was disabled
      }
    }
  }

  paint() {
    const state = this.state;
    const busy = state === "recording" || state === "stopping" || state === "starting";
    this.strip.hidden = state === "idle";
    this.strip.dataset.state = state;
    this.button.dataset.state = state;
    this.button.setAttribute("aria-pressed", String(busy));
    this.button.disabled = state === "transcribing" || state === "stopping";
    const label = busy ? gettext("Stop recording and transcribe") : gettext("Dictate a message");
    this.button.setAttribute("aria-label", label);
    this.button.title = label;
    if (state === "transcribing") this.words.textContent = gettext("Transcribing…");
    else if (state === "starting") this.words.textContent = gettext("Starting the microphone…");
    else this.words.textContent = gettext("Recording…");
    if (state === "starting") this.time.textContent = clock(0);
  }
}

const KEPT = 8; // answers whose speech is kept for playing again

/** "Read aloud" on answers: one plays at a time; the same button stops it. */
export class ReadAloud {
  constructor({ url, error, announce }) {
    Object.assign(this, { url, error, announce });
    this.cache = new Map(); // message id → decoded audio
    this.playing = null; // {node, source}
    this.loading = null; // {node, controller}
  }

  /** The button of an answer was pressed: read it, or stop reading it. */
  async toggle(node) {
    const again = this.playing?.node === node || this.loading?.node === node;
    this.stop();
    if (again) return;
    // Made on the click: browsers let a page play sound only after a gesture.
    this.context ??= new AudioContext();
    const context = this.context;
    context.resume?.();
    const controller = new AbortController();
    this.loading = { node, controller };
    this.mark(node, "loading");
    try {
      let buffer = this.cache.get(node.id);
      if (!buffer) {
        const audio = await voiceApi.speech(this.url, node.id, controller.signal);
        buffer = await context.decodeAudioData(audio);
        this.cache.set(node.id, buffer);
        if (this.cache.size > KEPT) this.cache.delete(this.cache.keys().next().value);
      }
      if (this.loading?.controller !== controller) return; // stopped, or another one asked
      this.loading = null;
      const source = context.createBufferSource();
      source.buffer = buffer;
      source.connect(context.destination);
      source.addEventListener("ended", () => {
        if (this.playing?.source === source) this.stop();
      });
      source.start();
      this.playing = { node, source };
      this.mark(node, "playing");
      this.announce(gettext("Reading the answer aloud."));
    } catch (problem) {
      if (this.loading?.controller !== controller) return;
      this.loading = null;
      this.mark(node, "");
      if (problem.code === "abort") return;
      // decodeAudioData fails with a DOMException: audio the browser cannot play
      const playable = problem instanceof ApiError;
      this.error(playable ? problem.message : gettext("This audio could not be played."));
    }
  }

  /** Stop what is playing or loading. */
  stop() {
    if (this.loading) {
      this.loading.controller.abort();
      this.mark(this.loading.node, "");
      this.loading = null;
    }
    if (this.playing) {
      const { node, source } = this.playing;
      this.playing = null;
      try {
        source.stop();
      } catch {
        /* already ended */
      }
      this.mark(node, "");
    }
  }

  /** The answer's button shows the state (the footer may have been rebuilt meanwhile). */
  mark(node, state) {
    node.speaking = state;
    const button = node.footer?.querySelector("[data-action=speak]");
    if (!button) return;
    const on = Boolean(state);
    button.dataset.state = state;
    button.setAttribute("aria-pressed", String(on));
    button.setAttribute("aria-busy", String(state === "loading"));
    const label = on ? gettext("Stop reading aloud") : gettext("Read aloud");
    button.setAttribute("aria-label", label);
    button.title = label;
  }
}

/** The page's voice features from #app's data attributes: {transcribeUrl, speechUrl, …}. */
export function voiceConfig(app) {
  const data = app.dataset;
  return {
    transcribeUrl: data.transcribeUrl || "",
    speechUrl: data.speechUrl || "",
    maxSeconds: Number(data.recordSeconds || 0),
    maxBytes: Number(data.recordBytes || 0),
  };
}

const WIDE = /[\p{Script=Han}\u3000-\u303f\uff00-\uffef]/u; // Chinese needs no spaces between

/** A space between two pieces of text, unless one side has one or either is Chinese. */
function gap(left, right) {
  if (!left || !right || /\s/.test(left) || /\s/.test(right)) return "";
  return WIDE.test(left) || WIDE.test(right) ? "" : " ";
}

/** The words of a transcription, put at the cursor with a space around them where needed. */
export function insertAtCursor(box, text) {
  const start = box.selectionStart ?? box.value.length;
  const end = box.selectionEnd ?? box.value.length;
  const before = box.value.slice(0, start);
  const after = box.value.slice(end);
  const lead = gap(before.slice(-1), text[0]);
  const tail = gap(text.slice(-1), after[0]);
  box.value = `${before}${lead}${text}${tail}${after}`;
  const at = before.length + lead.length + text.length;
  box.focus();
  box.setSelectionRange(at, at);
}

