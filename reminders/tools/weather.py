"""The weather tool: get_weather (city, date) through the configured provider."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents.registry import ToolContext, tool
from agents.tool_questions import UserQuestion
from config.text import sentences
from reminders import weather
from reminders.dates import day_long, day_short
from reminders.outcome import Outcome, error, need_confirmation, success
from reminders.tools.common import DATE, planner_tool, read_date, user_clock

FORECAST_DAYS = 16  # how far ahead forecasts reach (Open-Meteo's limit), today included


@tool(
    "get_weather",
    "The weather forecast for a city on one day (today up to 15 days ahead): condition, "
    "temperatures, chance of precipitation, and advice when it is bad.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 100},
            "date": DATE,
        },
        "additionalProperties": False,
    },
    title=gettext_lazy("Check the weather"),
)
@planner_tool
def get_weather(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """One day's forecast, or a clear error (unknown city, out of range, service down)."""
    when = user_clock(context)
    day = read_date(args.get("date"), when)
    city = (args.get("city") or settings.WEATHER_DEFAULT_CITY).strip()
    if not city:
        question = _("Which city is it in?")
        return need_confirmation(
            _("The forecast needs a city."),
            ask=UserQuestion(question, answer_into="city"),
            reason="no_city",
        )
    if not when.today <= day < when.today + timedelta(days=FORECAST_DAYS):
        return error(
            _("Forecasts cover today to %(days)s days ahead; %(day)s is outside that.")
            % {"days": FORECAST_DAYS - 1, "day": day_long(day)}
        )
    try:
        forecast = weather.weather_provider().forecast(city, day)
    except weather.WeatherError as exc:
        return error(str(exc), reason=exc.code)
    return success(forecast_message(forecast), forecast=forecast.as_data())


def forecast_message(forecast: weather.Forecast) -> str:
    """One day's forecast as a sentence in the active language, with advice when it is bad."""
    values = {
        "city": forecast.city,
        "day": day_short(forecast.date),
        "condition": weather.condition_name(forecast.condition),
        "low": f"{forecast.temp_min:.0f}",
        "high": f"{forecast.temp_max:.0f}",
        "chance": forecast.precipitation_probability,
    }
    if forecast.precipitation_probability is not None:
        message = (
            _(
                "%(city)s on %(day)s: %(condition)s, %(low)s–%(high)s°C, %(chance)s%% chance "
                "of precipitation."
            )
            % values
        )
    else:
        message = _("%(city)s on %(day)s: %(condition)s, %(low)s–%(high)s°C.") % values
    advice = weather.weather_advice(forecast)
    if not advice:
        return message
    return sentences(message, _("Advice: %(advice)s.") % {"advice": weather.advice_list(advice)})
