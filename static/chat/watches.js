// Watch notifications on the chat page (docs/autonomy-watches.md): a toast with a button that
// mutes the watch (and one that undoes it), the stored message shown where its chat is open.

import { api } from "./api.js";
import { gettext, interpolate } from "./i18n.js";
import { toast } from "./ui.js";

const shown = new Set(); // a redelivered notification is not announced twice

/** Mute or unmute a watch for this user (PATCH /api/v1/watches/{id}/). */
function setMuted(watchId, muted) {
  return api("PATCH", `/api/v1/watches/${watchId}/`, { muted });
}

/** Say it was muted, with an undo; a failure is said instead. */
function muteAndSay(container, announce, data) {
  setMuted(data.watch_id, true).then(
    () => {
      const text = interpolate(gettext("“%(name)s” is muted."), { name: data.watch });
      announce(text);
      toast(container, {
        title: gettext("Watch muted"),
        text,
        action: { label: gettext("Undo"), run: () => setMuted(data.watch_id, false) },
      });
    },
    (error) => announce(error.message),
  );
}

/** Show a `watch.notification`: `ctx` has the toast container, the announcer, and `show`
 * (adds the stored message when its chat is on screen) and `touch` (the sidebar). */
export function watchNotification(ev, ctx) {
  const data = ev.data || {};
  if (shown.has(data.notification_id)) return;
  shown.add(data.notification_id);
  toast(ctx.container, {
    title: interpolate(gettext("%(watch)s found something"), { watch: data.watch || "" }),
    text: data.title || "",
    action: {
      label: gettext("Mute this watch"),
      run: () => muteAndSay(ctx.container, ctx.announce, data),
    },
  });
  ctx.announce(interpolate(gettext("Notification: %(text)s"), { text: data.title || "" }));
  if (ev.session_id) ctx.touch(ev.session_id, gettext("Notifications"));
  if (data.message?.id) ctx.show(ev.session_id, data.message);
}
