"""The weather tool: get_weather (city, date) through the configured provider."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings

from agents.registry import ToolContext, tool
from reminders import weather
from reminders.outcome import Outcome, error, success
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
)
@planner_tool
def get_weather(context: ToolContext, args: dict[str, Any]) -> Outcome:
    """One day's forecast, or a clear error (unknown city, out of range, service down)."""
    when = user_clock(context)
    day = read_date(args.get("date"), when)
    city = (args.get("city") or settings.WEATHER_DEFAULT_CITY).strip()
    if not city:
        return error("Which city? Ask the user where it happens.")
    if not when.today <= day < when.today + timedelta(days=FORECAST_DAYS):
        return error(
            f"Forecasts cover today to {FORECAST_DAYS - 1} days ahead; "
            f"{day:%A %d %B %Y} is outside that."
        )
    try:
        forecast = weather.weather_provider().forecast(city, day)
    except weather.WeatherError as exc:
        return error(str(exc), reason=exc.code)
    advice = weather.weather_advice(forecast)
    message = (
        f"{forecast.city} on {day:%A %d %B}: {forecast.condition}, "
        f"{forecast.temp_min:.0f}–{forecast.temp_max:.0f}°C"
        + (
            f", {forecast.precipitation_probability}% chance of precipitation"
            if forecast.precipitation_probability is not None
            else ""
        )
        + (f". Advice: {'; '.join(advice)}." if advice else ".")
    )
    return success(message, forecast=forecast.as_data())
