"""The chat page in English, 繁體中文 and 简体中文: catalogues complete and compiled, every string
of the page's templates and scripts in them, the language from the user's choice or the
browser, and suggestions that still work with the offline model in every language."""

from __future__ import annotations

import gettext
import re
import uuid
from pathlib import Path

import pytest
from django.test import Client
from django.utils import translation
from django.utils.translation.template import templatize

from agents.demo import seed_demo_agents
from chat.views import SUGGESTIONS
from delegation.models import Run
from delegation.turns import turn_start
from tests.source_facts import source_facts

ROOT = Path(__file__).resolve().parents[2]
LOCALES = ("zh_Hant", "zh_Hans")
DOMAINS = ("django", "djangojs")
TEMPLATES = ["templates/base.html", "templates/registration/login.html"]
TEMPLATES += [str(p.relative_to(ROOT)) for p in (ROOT / "templates/chat").glob("*.html")]
SCRIPTS = sorted((ROOT / "static/chat").glob("*.js"))
GETTEXT_CALL = re.compile(
    r"\b(?:gettext|ngettext|gettext_lazy|_)\(\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"
)


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def read_po(path: Path) -> list[dict]:
    """The entries of a .po file written with --no-wrap: msgid, plural, msgstrs, fuzzy."""
    entries = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        entry: dict = {"msgstr": [], "fuzzy": False, "msgid": None}
        for line in block.splitlines():
            if line.startswith("#,") and "fuzzy" in line:
                entry["fuzzy"] = True
            elif line.startswith("msgctxt "):
                entry["context"] = _unquote(line[8:])
            elif line.startswith("msgid "):
                entry["msgid"] = _unquote(line[6:])
            elif line.startswith("msgid_plural "):
                entry["plural"] = _unquote(line[13:])
            elif line.startswith("msgstr"):
                entry["msgstr"].append(_unquote(line.split(" ", 1)[1]))
        if entry["msgid"]:
            entries.append(entry)
    return entries


def catalogue(locale: str, domain: str) -> list[dict]:
    return read_po(ROOT / "locale" / locale / "LC_MESSAGES" / f"{domain}.po")


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("domain", DOMAINS)
def test_no_string_is_left_untranslated_and_the_compiled_catalogue_is_current(locale, domain):
    entries = catalogue(locale, domain)
    assert entries
    untranslated = [e["msgid"] for e in entries if e["fuzzy"] or not all(e["msgstr"])]
    assert untranslated == []
    placeholders = re.compile(r"%\(\w+\)s")
    for entry in entries:  # a translation keeps every placeholder of its English
        source = set(placeholders.findall(entry["msgid"] + entry.get("plural", "")))
        assert source <= set(placeholders.findall(entry["msgstr"][0])), entry
    mo = ROOT / "locale" / locale / "LC_MESSAGES" / f"{domain}.mo"
    with mo.open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    for entry in entries:  # the committed .mo says what the .po says (compilemessages was run)
        context = entry.get("context")
        if "plural" in entry and context:
            said = compiled.npgettext(context, entry["msgid"], entry["plural"], 2)
        elif "plural" in entry:
            said = compiled.ngettext(entry["msgid"], entry["plural"], 2)
        else:
            said = (
                compiled.pgettext(context, entry["msgid"])
                if context
                else compiled.gettext(entry["msgid"])
            )
        assert said == entry["msgstr"][0]


def test_every_string_of_the_page_is_in_the_catalogues():
    """A string added to a template or a script without `makemessages` fails here."""
    known = {e["msgid"] for d in DOMAINS for e in catalogue("zh_Hant", d)}
    found: dict[str, str] = {}
    for name in TEMPLATES:
        code = templatize((ROOT / name).read_text(encoding="utf-8"), origin=name)
        for literal in GETTEXT_CALL.findall(code):
            found[_unquote(literal).replace("%%", "%")] = name
    for path in [*SCRIPTS, ROOT / "chat/views.py"]:
        for literal in GETTEXT_CALL.findall(path.read_text(encoding="utf-8")):
            found[_unquote(literal)] = path.name
    assert len(found) > 100
    missing = {text: where for text, where in found.items() if text not in known}
    assert missing == {}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("headers", "expected", "lang"),
    [
        ({}, "New chat", "en"),
        ({"HTTP_ACCEPT_LANGUAGE": "zh-TW,zh;q=0.9"}, "新對話", "zh-hant"),
        ({"HTTP_ACCEPT_LANGUAGE": "zh-CN"}, "新对话", "zh-hans"),
    ],
)
def test_the_page_follows_the_browser_language(user, entry_agent, headers, expected, lang):
    client = Client(**headers)
    client.force_login(user)
    page = client.get("/").content.decode()
    assert expected in page and f'<html lang="{lang}">' in page
    assert '<script src="/jsi18n/"></script>' in page  # the catalogue: a script src (CSP)


@pytest.mark.django_db
def test_the_users_choice_beats_the_browser_and_reaches_the_scripts(user, entry_agent):
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-TW")
    client.force_login(user)
    chosen = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert chosen.status_code == 302 and chosen["Location"] == "/"
    assert "新对话" in client.get("/").content.decode()
    scripts = client.get("/jsi18n/").content.decode()
    assert "\\u601d\\u8003\\u4e2d" in scripts or "思考中" in scripts  # "Thinking…"
    client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "New chat" in client.get("/").content.decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", ["en", "zh-hant", "zh-hans"])
def test_every_suggestion_reaches_its_expert_with_the_offline_model(user, settings, language):
    settings.TASKS_RUN_SYNC = True
    seed_demo_agents()
    with translation.override(language):
        prompts = [(kind, needs, str(text)) for kind, needs, text in SUGGESTIONS]
    for kind, needs, text in prompts:
        sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=text)
        root = Run.objects.get(pk=sent.run.id)
        if kind == "expert":
            asked = list(root.children.values_list("agent__name", flat=True))
            assert needs in asked, (language, text, asked)
        else:
            called = [m.get("name") for m in root.transcript if m.get("role") == "tool"]
            assert root.status == "succeeded" and root.answer, (language, text, called)


CODE_DIRS = ("agents", "chat", "config", "delegation", "reminders")


def test_every_translatable_string_of_the_code_is_in_the_catalogues():
    """Tool messages, the offline model, failure notes, reminder texts: a string wrapped in
    gettext without `make messages` (or left untranslated) fails here."""
    paths = [
        path
        for folder in CODE_DIRS
        for path in (ROOT / folder).rglob("*.py")
        if "migrations" not in path.parts
    ]
    scanned = source_facts("gettext", paths)
    wanted = {text: path for path, texts in scanned.items() for text in texts}
    assert len(wanted) > 100
    for locale in LOCALES:
        known = {
            (f"{e['context']}\x04{e['msgid']}" if e.get("context") else e["msgid"])
            for e in catalogue(locale, "django")
        }
        missing = {text: where for text, where in wanted.items() if text not in known}
        assert missing == {}, locale
