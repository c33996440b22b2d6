// Translations from Django's JavaScript catalog (/jsi18n/, loaded by a script tag before the
// modules run). Call sites pass string literals to gettext, so `makemessages -d djangojs` finds
// them (locale/, see docs/web-chat.md); without the catalog every string stays English.

const catalog = window;

/** The translation of `text`. */
export function gettext(text) {
  return typeof catalog.gettext === "function" ? catalog.gettext(text) : text;
}

/** The singular or plural translation for `count`. */
export function ngettext(singular, plural, count) {
  if (typeof catalog.ngettext === "function") return catalog.ngettext(singular, plural, count);
  return count === 1 ? singular : plural;
}

/** Fill `%(name)s` placeholders from `values`. */
export function interpolate(format, values) {
  return format.replace(/%\((\w+)\)s/g, (match, name) =>
    name in values ? String(values[name]) : match
  );
}

/** The page's language (the <html lang>), for dates and numbers. */
export const language = document.documentElement.lang || "en";
