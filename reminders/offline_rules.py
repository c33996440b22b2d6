"""Rules that let the built-in offline model call the planner tools from plain words (English
or Chinese): each reads one tool's arguments from the text, or returns None when it does not
apply. Dates, parts of the day and times are passed on as words; the tools resolve them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agents.registry import offline_rule_set
from reminders.dates import SEGMENT_WORDS, SEGMENTS
from reminders.schedule_rule import schedule_prompt_args
from reminders.time_words import TIME_WORDS
from reminders.weather import OFFLINE_ALIASES, OFFLINE_CITIES

Args = dict[str, Any] | None

_EN_DAY = (
    r"\d{4}-\d{2}-\d{2}|day after tomorrow|today|tomorrow|tonight"
    r"|(?:this |next |coming )?(?:mon|tues|wednes|thurs|fri|satur|sun)day|(?:this |next )?weekend"
)
_CN_DAY = (  # both scripts: the tools read either
    r"大[后後]天|今天|明天|[后後]天|(?:下|[这這]|本)?(?:[周週]|星期|[礼禮]拜)[一二三四五六日天]"
    r"|(?:下|[这這])?[周週]末"
)
_DAY = re.compile(rf"(?:\bon\s+)?\b(?:{_EN_DAY})\b|{_CN_DAY}", re.IGNORECASE)
_SEGMENT = re.compile(
    r"(?:\bin the\s+)?\b(?:morning|afternoon|evening|tonight)\b|早上|上午|早晨|下午|中午|晚上|傍晚",
    re.IGNORECASE,
)
_CREATE = re.compile(
    r"^\s*(?:please\s+)?(?:add|create|new|plan|schedule|put)\b(?:\s+(?:a|an|new|the))*"
    r"(?:\s+(?:task|todo|to-do))?\s*(?:to\b|:|-)?\s*"
    r"|^\s*(?:请|請)?(?:添加|新建|新增|创建|創建|加个|加個|加一个|加一個|记一下|記一下|安排)(?:一个|一個)?(?:任务|任務|待办|待辦)?[:：]?\s*",
    re.IGNORECASE,
)
_QUERY = re.compile(
    r"\b(?:list|show|what are|which)\b.*\b(?:tasks?|to-?dos?)\b|\bmy (?:tasks|to-?dos)\b"
    r"|我的任务|有哪些任务|任务列表|待办事项",
    re.IGNORECASE,
)
_FINISH = re.compile(
    r"\b(?:finish(?:ed)?|complete(?:d)?|done with|tick off)\s+(?:the\s+)?(?:task\s+)?(.+)"
    r"|\bmark(?:ed)?\s+(?:the\s+)?(?:task\s+)?(.+?)\s+(?:as\s+)?done\b|完成了?(?:任务)?[:：]?(.+)",
    re.IGNORECASE,
)
_REMOVE = re.compile(
    r"\b(?:remove|delete|drop)\s+(?:the\s+)?(?:task\s+)?(.+)|(?:删除|删掉)(?:任务)?[:：]?(.+)",
    re.IGNORECASE,
)
_MODIFY = re.compile(
    r"\b(?:move|reschedule|change|postpone)\s+(?:the\s+)?(?:task\s+)?(.+?)\s+to\s+(.+)"
    r"|把?(.+?)改到(.+)",
    re.IGNORECASE,
)
_SCHEDULE = re.compile(
    r"\b(?:schedule|agenda|calendar|plans)\b|日程|有什么安排|安排了什么", re.IGNORECASE
)
_FREE = re.compile(r"\b(?:free|available|free time|slots?)\b|空闲|有空|空档", re.IGNORECASE)
_WEATHER = re.compile(
    r"\b(?:weather|forecast|rain|raining|snow|temperature|umbrella)\b|天气|下雨|下雪|气温",
    re.IGNORECASE,
)
_CITY_IN = re.compile(
    r"\bin\s+([A-Z][A-Za-z .'-]*?)(?=\s+(?:on|this|next|today|tomorrow|tonight|for|at)\b|[?.!,]|$)"
)
_REMIND = re.compile(
    r"\bremind me\b(?:\s+(?:about|of|to))?\s+(.+)|\bset (?:a )?reminder for\s+(.+)|提醒我(.+)",
    re.IGNORECASE,
)
_LIST_REMINDERS = re.compile(
    r"\b(?:list|show|what are|which)\b.*\breminders\b|\bmy reminders\b"
    r"|我的提醒|有哪些提醒|提醒列表",
    re.IGNORECASE,
)
_CANCEL_REMINDER = re.compile(
    r"\bcancel\b.*?\breminder\b(?:\s*#?(\d+))?(?:\s+(?:for|about|of)\s+(.+))?|取消(.*?)的?提醒",
    re.IGNORECASE,
)


def _first(match: re.Match[str] | None) -> str:
    return next((g for g in match.groups() if g), "") if match else ""


def _clean(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" \t,.;:!?，。：！？\"'“”")
    return re.sub(r"^(?:the|a|an)\s+|\s+(?:task|on|at|in|for)$", "", text, flags=re.I).strip()


def _when(text: str) -> dict[str, str]:
    """The date, part of the day and time named in the text, as tool arguments."""
    found: dict[str, str] = {}
    if day := _DAY.search(text):
        found["date"] = re.sub(r"^on\s+", "", day.group(0), flags=re.I).lower()
    if segment := _SEGMENT.search(text):
        word = re.sub(r"^in the\s+", "", segment.group(0), flags=re.I).lower()
        found["segment"] = SEGMENT_WORDS[word]
    if time_ := TIME_WORDS.search(text):  # as said (下午3点, 2:30 pm): the tool reads it
        found["start"] = time_.group("time")
        found.pop("segment", None)
    return found


def _without_when(text: str) -> str:
    for pattern in (TIME_WORDS, _DAY, _SEGMENT):
        text = pattern.sub(" ", text)
    return _clean(text)


def _city(text: str) -> str:
    lowered = text.casefold()
    for alias, key in OFFLINE_ALIASES.items():
        if re.search(r"[\u4e00-\u9fff]", alias) and alias in text:
            return OFFLINE_CITIES[key][0]
    for key, (name, *_rest) in OFFLINE_CITIES.items():
        if re.search(rf"\b{re.escape(key)}\b", lowered):
            return name
    match = _CITY_IN.search(text)
    return match.group(1).strip() if match else ""


def create_task_args(text: str) -> Args:
    """Read a new task: "add a task: pick someone up at the airport Saturday morning",
    "添加任务：周末早上去机场接人"."""
    match = _CREATE.match(text)
    if not match or not match.group(0).strip():
        return None
    title = _without_when(text[match.end() :])
    return {"title": title, **_when(text)} if title else None


def query_tasks_args(text: str) -> Args:
    """Read a task query, e.g. "show my tasks for tomorrow", "我的任务"."""
    if not _QUERY.search(text):
        return None
    when = _when(text)
    return {"date": when["date"]} if "date" in when else {}


def finish_task_args(text: str) -> Args:
    """Read which task is done: "finish the airport task", "mark buy milk as done", "完成买牛奶"."""
    title = _clean(_first(_FINISH.search(text)))
    return {"title": title} if title else None


def remove_task_args(text: str) -> Args:
    """Read which task to delete, e.g. "delete the task buy milk", "删除任务买牛奶"."""
    title = _clean(_first(_REMOVE.search(text)))
    return {"title": title} if title else None


def modify_task_args(text: str) -> Args:
    """Read a task and its new time: "move the airport task to sunday afternoon",
    "把买牛奶改到明天"."""
    match = _MODIFY.search(text)
    if not match:
        return None
    title, target = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
    changes = _when(target)
    return {"title": _clean(title), **changes} if changes and _clean(title) else None


def day_schedule_args(text: str) -> Args:
    """Read which day to show, e.g. "what's my schedule tomorrow", "明天的日程"."""
    return {"date": _when(text).get("date", "today")} if _SCHEDULE.search(text) else None


def free_slots_args(text: str) -> Args:
    """Read the day (and part of it) to search free time in, e.g. "when am I free on friday",
    "周五什么时候有空", "明天下午有空吗" (the afternoon only)."""
    if not _FREE.search(text):
        return None
    when = _when(text)
    args = {"date": when.get("date", "today")}
    if when.get("segment") in SEGMENTS:
        first, last = SEGMENTS[when["segment"]]
        args |= {"day_start": f"{first:%H:%M}", "day_end": f"{last:%H:%M}"}
    return args


def weather_args(text: str) -> Args:
    """Read a city and day, e.g. "weather in Paris tomorrow", "上海周末天气"."""
    if not _WEATHER.search(text):
        return None
    city = _city(text)
    return {"date": _when(text).get("date", "today"), **({"city": city} if city else {})}


def schedule_reminder_args(text: str) -> Args:
    """Read the task to remind about, and when it is if it is new: "remind me about the airport
    pickup in Taipei", "remind me to call Ana tomorrow at 9", "提醒我明天下午三点开会"."""
    said = _first(_REMIND.search(text))
    city = _city(said)
    title = _without_when(re.sub(r"\s+in\s+[A-Z][\w .'-]*$", "", said))
    return ({"title": title, **_when(said), **({"city": city} if city else {})}) if title else None


def list_reminders_args(text: str) -> Args:
    """Read a request to list reminders, e.g. "show my reminders", "我的提醒"."""
    return {} if _LIST_REMINDERS.search(text) else None


def cancel_reminder_args(text: str) -> Args:
    """Read which reminder to cancel: "cancel reminder #12", "cancel the reminder for the
    airport", "取消机场的提醒"."""
    match = _CANCEL_REMINDER.search(text)
    if not match:
        return None
    if match.group(1):
        return {"reminder_id": int(match.group(1))}
    title = _clean(match.group(2) or match.group(3) or "")
    return {"title": title} if title else None


# Most specific first: an agent holding several planner tools picks the first rule that applies.
# Each becomes its tool's offline rule (`rules_attach`, called once the tools are registered).
PLANNER_RULES: dict[str, Callable[[str], Args]] = {
    "cancel_reminder": cancel_reminder_args,
    "list_reminders": list_reminders_args,
    "schedule_reminder": schedule_reminder_args,
    "find_free_slots": free_slots_args,
    "get_day_schedule": day_schedule_args,
    "get_weather": weather_args,
    "finish_task": finish_task_args,
    "remove_task": remove_task_args,
    "modify_task": modify_task_args,
    "query_tasks": query_tasks_args,
    "create_task": create_task_args,
}


def rules_attach() -> None:
    """Give each planner tool its offline rule, in the order above (before the built-ins');
    a standing order in words is the schedule tool's, ahead of routing (Tool.claims_words)."""
    offline_rule_set("schedule_prompt", schedule_prompt_args, priority=-1, claims_words=True)
    for priority, (key, rule) in enumerate(PLANNER_RULES.items()):
        offline_rule_set(key, rule, priority=priority)
