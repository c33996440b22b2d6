"""Weather forecasts behind one provider interface: Open-Meteo over HTTP, or a deterministic
offline provider (the default, and what tests use), plus the advice bad weather calls for."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from datetime import date
from typing import Any, Protocol

import httpx
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import pgettext, pgettext_lazy

RAINY = frozenset({"drizzle", "rain", "showers", "thunderstorm"})
HOT_C, COLD_C = 35.0, -10.0  # "extreme" temperatures

# WMO weather interpretation codes (Open-Meteo's `weather_code`) to plain conditions.
_WMO = {
    **dict.fromkeys([0], "clear"),
    **dict.fromkeys([1, 2], "partly cloudy"),
    **dict.fromkeys([3], "cloudy"),
    **dict.fromkeys([45, 48], "fog"),
    **dict.fromkeys([51, 53, 55, 56, 57], "drizzle"),
    **dict.fromkeys([61, 63, 65, 66, 67], "rain"),
    **dict.fromkeys([71, 73, 75, 77, 85, 86], "snow"),
    **dict.fromkeys([80, 81, 82], "showers"),
    **dict.fromkeys([95, 96, 99], "thunderstorm"),
}

# Each condition (an English code in data) as it reads in a sentence, in the active language.
CONDITION_NAMES = {
    "clear": pgettext_lazy("weather", "clear"),
    "partly cloudy": pgettext_lazy("weather", "partly cloudy"),
    "cloudy": pgettext_lazy("weather", "cloudy"),
    "fog": pgettext_lazy("weather", "fog"),
    "drizzle": pgettext_lazy("weather", "drizzle"),
    "rain": pgettext_lazy("weather", "rain"),
    "showers": pgettext_lazy("weather", "showers"),
    "snow": pgettext_lazy("weather", "snow"),
    "thunderstorm": pgettext_lazy("weather", "thunderstorm"),
    "unknown": pgettext_lazy("weather", "unknown"),
}


@dataclass(frozen=True)
class Forecast:
    """One day's forecast for one place."""

    city: str
    country: str
    date: date
    condition: str  # clear, partly cloudy, cloudy, fog, drizzle, rain, showers, snow, thunderstorm
    temp_min: float
    temp_max: float
    precipitation_probability: int | None  # percent
    source: str

    def as_data(self) -> dict[str, Any]:
        """JSON-ready fields, with the advice it calls for."""
        return {**asdict(self), "date": self.date.isoformat(), "advice": weather_advice(self)}


class WeatherError(Exception):
    """A forecast could not be had: `code` is unknown_city or unavailable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class WeatherProvider(Protocol):
    """Anything that forecasts one day for a named city."""

    name: str

    def forecast(self, city: str, day: date) -> Forecast:
        """The forecast, or WeatherError."""
        ...


def weather_advice(forecast: Forecast) -> list[str]:
    """What bad weather (rain, snow, extreme temperatures) means for someone going out, in the
    active language."""
    advice = []
    wet = forecast.condition in RAINY or (
        forecast.condition != "snow" and (forecast.precipitation_probability or 0) >= 60
    )
    if wet:
        advice.append(_("rain expected: bring an umbrella"))
    if forecast.condition == "thunderstorm":
        advice.append(_("thunderstorms expected: allow extra travel time"))
    if forecast.condition == "snow":
        advice.append(_("snow expected: dress warmly and allow extra travel time"))
    if forecast.temp_max >= HOT_C:
        advice.append(
            _("extreme heat (%(temp)s°C): carry water, avoid midday sun")
            % {"temp": f"{forecast.temp_max:.0f}"}
        )
    if forecast.temp_min <= COLD_C:
        advice.append(
            _("extreme cold (%(temp)s°C): dress very warmly") % {"temp": f"{forecast.temp_min:.0f}"}
        )
    return advice


def advice_list(advice: list[str]) -> str:
    """Pieces of advice joined as one phrase ("a; b") in the active language."""
    return pgettext("list separator", "; ").join(advice)


def condition_name(condition: str) -> str:
    """A condition's name in the active language ("partly cloudy", 多云)."""
    return str(CONDITION_NAMES.get(condition, condition))


# name -> (display name, country, typical mean temperature °C, northern hemisphere)
OFFLINE_CITIES: dict[str, tuple[str, str, float, bool]] = {
    "taipei": ("Taipei", "Taiwan", 23, True),
    "shanghai": ("Shanghai", "China", 17, True),
    "beijing": ("Beijing", "China", 13, True),
    "shenzhen": ("Shenzhen", "China", 23, True),
    "guangzhou": ("Guangzhou", "China", 22, True),
    "hong kong": ("Hong Kong", "China", 23, True),
    "tokyo": ("Tokyo", "Japan", 16, True),
    "seoul": ("Seoul", "South Korea", 13, True),
    "singapore": ("Singapore", "Singapore", 28, True),
    "sydney": ("Sydney", "Australia", 18, False),
    "london": ("London", "United Kingdom", 11, True),
    "paris": ("Paris", "France", 12, True),
    "berlin": ("Berlin", "Germany", 10, True),
    "new york": ("New York", "United States", 13, True),
    "san francisco": ("San Francisco", "United States", 14, True),
    "chicago": ("Chicago", "United States", 10, True),
    "phoenix": ("Phoenix", "United States", 24, True),
    "moscow": ("Moscow", "Russia", 6, True),
    "dubai": ("Dubai", "United Arab Emirates", 28, True),
    "reykjavik": ("Reykjavik", "Iceland", 5, True),
}
OFFLINE_ALIASES = {
    "台北": "taipei",
    "臺北": "taipei",
    "上海": "shanghai",
    "北京": "beijing",
    "深圳": "shenzhen",
    "广州": "guangzhou",
    "香港": "hong kong",
    "东京": "tokyo",
    "首尔": "seoul",
    "新加坡": "singapore",
    "悉尼": "sydney",
    "伦敦": "london",
    "巴黎": "paris",
    "柏林": "berlin",
    "纽约": "new york",
    "旧金山": "san francisco",
    "莫斯科": "moscow",
    "迪拜": "dubai",
    "nyc": "new york",
    "sf": "san francisco",
}


class OfflineWeatherProvider:
    """A simulated forecast that is the same for the same city and day (no network): a known
    city's typical temperature for the season plus a hashed variation; unknown cities fail like
    a real geocoder would. `overrides` pins a city's condition (tests, demos)."""

    name = "offline"

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self.overrides = {k.casefold(): v for k, v in (overrides or {}).items()}

    def forecast(self, city: str, day: date) -> Forecast:
        """The simulated forecast."""
        key = " ".join(city.casefold().split())
        key = OFFLINE_ALIASES.get(key, key)
        if key not in OFFLINE_CITIES:
            raise WeatherError(
                "unknown_city", _("No city called %(city)s was found.") % {"city": repr(city)}
            )
        name, country, mean, north = OFFLINE_CITIES[key]
        digest = hashlib.sha256(f"{key}|{day.isoformat()}".encode()).digest()
        season = [-8, -7, -4, 0, 4, 7, 9, 8, 5, 1, -3, -6][day.month - 1] * (1 if north else -1)
        high = round(mean + season + 4 + (digest[0] % 7) - 3, 1)
        low = round(high - 5 - digest[1] % 5, 1)
        chance = digest[2] % 101
        condition = self.overrides.get(key) or _offline_condition(digest[3], chance, high)
        if condition in RAINY or condition == "snow":
            chance = max(chance, 70)
        return Forecast(name, country, day, condition, low, high, chance, "offline (simulated)")


def _offline_condition(roll: int, chance: int, high: float) -> str:
    if chance >= 70:
        return "snow" if high <= 2 else ("thunderstorm" if roll % 5 == 0 else "rain")
    return ["clear", "partly cloudy", "cloudy", "partly cloudy", "fog"][roll % 5]


class OpenMeteoProvider:
    """Open-Meteo's geocoding and forecast APIs over HTTP (no key needed), with timeouts."""

    name = "open-meteo"

    def __init__(self, *, geocoding_url: str, forecast_url: str, timeout: float) -> None:
        self.geocoding_url = geocoding_url
        self.forecast_url = forecast_url
        self.timeout = timeout

    def forecast(self, city: str, day: date) -> Forecast:
        """Geocode the city, then fetch that day's daily forecast in the place's own timezone."""
        found = self._get(
            self.geocoding_url, {"name": city, "count": 1, "language": "en", "format": "json"}
        ).get("results")
        if not found:
            raise WeatherError(
                "unknown_city", _("No city called %(city)s was found.") % {"city": repr(city)}
            )
        place = found[0]
        daily = self._get(
            self.forecast_url,
            {
                "latitude": place["latitude"],
                "longitude": place["longitude"],
                "daily": "weather_code,temperature_2m_max,temperature_2m_min,"
                "precipitation_probability_max",
                "timezone": "auto",
                "start_date": day.isoformat(),
                "end_date": day.isoformat(),
            },
        ).get("daily")
        try:
            chance = daily["precipitation_probability_max"][0]
            return Forecast(
                place.get("name", city),
                place.get("country", ""),
                day,
                _WMO.get(int(daily["weather_code"][0]), "unknown"),
                float(daily["temperature_2m_min"][0]),
                float(daily["temperature_2m_max"][0]),
                None if chance is None else int(chance),
                self.name,
            )
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise WeatherError(
                "unavailable", _("The weather service sent an unusable answer.")
            ) from exc

    def _get(self, url: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            response = httpx.get(url, params=params, timeout=self.timeout)
        except httpx.TimeoutException as exc:
            raise WeatherError(
                "unavailable",
                _("The weather service did not answer within %(seconds)s s.")
                % {"seconds": f"{self.timeout:g}"},
            ) from exc
        except httpx.HTTPError as exc:
            raise WeatherError(
                "unavailable",
                _("The weather service is unreachable: %(reason)s.") % {"reason": exc},
            ) from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code != 200 or not isinstance(body, dict):
            reason = body.get("reason") if isinstance(body, dict) else None
            values = {"status": response.status_code, "reason": reason}
            raise WeatherError(
                "unavailable",
                _("The weather service answered HTTP %(status)s: %(reason)s") % values
                if reason
                else _("The weather service answered HTTP %(status)s.") % values,
            )
        return body


def weather_provider() -> WeatherProvider:
    """The provider WEATHER_PROVIDER names: offline (default) or open-meteo."""
    if settings.WEATHER_PROVIDER == "open-meteo":
        return OpenMeteoProvider(
            geocoding_url=settings.WEATHER_GEOCODING_URL,
            forecast_url=settings.WEATHER_FORECAST_URL,
            timeout=settings.WEATHER_TIMEOUT,
        )
    if settings.WEATHER_PROVIDER == "offline":
        return OfflineWeatherProvider()
    raise WeatherError(
        "unavailable",
        _("Unknown WEATHER_PROVIDER %(name)s.") % {"name": repr(settings.WEATHER_PROVIDER)},
    )
