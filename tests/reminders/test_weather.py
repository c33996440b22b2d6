"""Weather: the offline provider, advice, Open-Meteo against a local fake server, the tool."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import date, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from reminders.weather import (
    Forecast,
    OfflineWeatherProvider,
    OpenMeteoProvider,
    WeatherError,
    weather_advice,
    weather_provider,
)
from tests.reminders.conftest import call

SATURDAY = date(2025, 6, 14)


def forecast(condition="clear", low=18.0, high=25.0, chance=10) -> Forecast:
    return Forecast("Taipei", "Taiwan", SATURDAY, condition, low, high, chance, "test")


def test_offline_forecast_is_deterministic_and_labelled_simulated():
    provider = OfflineWeatherProvider()
    first = provider.forecast("Taipei", SATURDAY)
    assert first == provider.forecast("  taipei ", SATURDAY) == provider.forecast("台北", SATURDAY)
    assert first.city == "Taipei" and "simulated" in first.source
    assert first.temp_min < first.temp_max
    days = {provider.forecast("London", SATURDAY + timedelta(days=n)).condition for n in range(40)}
    assert len(days) > 2  # it varies by day


def test_offline_provider_refuses_an_unknown_city_like_a_geocoder():
    with pytest.raises(WeatherError) as caught:
        OfflineWeatherProvider().forecast("Atlantis", SATURDAY)
    assert caught.value.code == "unknown_city" and "Atlantis" in str(caught.value)


def test_offline_override_pins_a_condition():
    rainy = OfflineWeatherProvider({"Shanghai": "rain"}).forecast("上海", SATURDAY)
    assert rainy.condition == "rain" and rainy.precipitation_probability >= 70


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"condition": "rain"}, ["bring an umbrella"]),
        ({"condition": "showers"}, ["bring an umbrella"]),
        ({"condition": "cloudy", "chance": 60}, ["bring an umbrella"]),
        ({"condition": "thunderstorm"}, ["bring an umbrella", "thunderstorms"]),
        ({"condition": "snow", "low": -3, "high": 1}, ["snow expected"]),
        ({"high": 38}, ["extreme heat (38°C)"]),
        ({"low": -15, "high": -8}, ["extreme cold (-15°C)"]),
    ],
)
def test_bad_weather_gives_advice(kwargs, expected):
    advice = " | ".join(weather_advice(forecast(**kwargs)))
    for words in expected:
        assert words in advice
    assert len(weather_advice(forecast(**kwargs))) == len(expected)


def test_fair_weather_gives_none():
    assert weather_advice(forecast()) == []
    assert weather_advice(forecast(high=34.9, low=-9.9, chance=59)) == []


class FakeOpenMeteo:
    """A local stand-in for Open-Meteo's geocoding and forecast endpoints."""

    def __init__(self) -> None:
        self.places: dict[str, dict[str, Any]] = {
            "Berlin": {"name": "Berlin", "country": "Germany", "latitude": 52.5, "longitude": 13.4}
        }
        self.daily: dict[str, Any] = {
            "time": ["2025-06-14"],
            "weather_code": [63],
            "temperature_2m_max": [21.5],
            "temperature_2m_min": [12.1],
            "precipitation_probability_max": [85],
        }
        self.status = 200
        self.raw: bytes | None = None
        self.delay = 0.0
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = parse_qs(url.query)
                fake.requests.append((url.path, query))
                time.sleep(fake.delay)
                if url.path == "/v1/search":
                    found = fake.places.get(query["name"][0])
                    body: dict[str, Any] = {"results": [found]} if found else {}
                else:
                    body = {"daily": fake.daily}
                if fake.status != 200:
                    body = {"error": True, "reason": "Parameter start_date is out of range"}
                payload = fake.raw if fake.raw is not None else json.dumps(body).encode()
                try:
                    self.send_response(fake.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (the timeout test)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def provider(self, timeout: float = 2.0) -> OpenMeteoProvider:
        host, port = self.server.server_address[:2]
        return OpenMeteoProvider(
            geocoding_url=f"http://{host}:{port}/v1/search",
            forecast_url=f"http://{host}:{port}/v1/forecast",
            timeout=timeout,
        )


@pytest.fixture
def open_meteo() -> Iterator[FakeOpenMeteo]:
    fake = FakeOpenMeteo()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def test_open_meteo_geocodes_then_reads_that_days_forecast(open_meteo):
    result = open_meteo.provider().forecast("Berlin", SATURDAY)
    assert result == Forecast("Berlin", "Germany", SATURDAY, "rain", 12.1, 21.5, 85, "open-meteo")
    (geo_path, geo), (path, query) = open_meteo.requests
    assert geo_path == "/v1/search" and geo["name"] == ["Berlin"] and geo["count"] == ["1"]
    assert path == "/v1/forecast" and query["latitude"] == ["52.5"]
    assert query["start_date"] == query["end_date"] == ["2025-06-14"]
    assert query["timezone"] == ["auto"] and "weather_code" in query["daily"][0]


def test_open_meteo_unknown_city_is_a_clear_error(open_meteo):
    with pytest.raises(WeatherError) as caught:
        open_meteo.provider().forecast("Nowhereville", SATURDAY)
    assert caught.value.code == "unknown_city"


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        ({"status": 400}, "HTTP 400: Parameter start_date is out of range"),
        ({"status": 503, "raw": b"<html>busy</html>"}, "HTTP 503."),
        ({"raw": b"not json"}, "HTTP 200."),
        ({"daily": {"time": []}}, "unusable answer"),
        ({"delay": 0.5}, "did not answer within 0.2 s"),
    ],
)
def test_open_meteo_failures_are_clear_errors(open_meteo, setup, words):
    for key, value in setup.items():
        setattr(open_meteo, key, value)
    with pytest.raises(WeatherError) as caught:
        open_meteo.provider(timeout=0.2).forecast("Berlin", SATURDAY)
    assert caught.value.code == "unavailable" and words in str(caught.value)


def test_open_meteo_unreachable_is_a_clear_error():
    provider = OpenMeteoProvider(
        geocoding_url="http://127.0.0.1:9/v1/search", forecast_url="http://127.0.0.1:9/x", timeout=1
    )
    with pytest.raises(WeatherError, match="unreachable"):
        provider.forecast("Berlin", SATURDAY)


def test_provider_is_chosen_by_setting(settings):
    assert isinstance(weather_provider(), OfflineWeatherProvider)
    settings.WEATHER_PROVIDER = "open-meteo"
    assert isinstance(weather_provider(), OpenMeteoProvider)
    settings.WEATHER_PROVIDER = "nonsense"
    with pytest.raises(WeatherError, match="Unknown WEATHER_PROVIDER"):
        weather_provider()


def test_get_weather_tool_through_open_meteo(open_meteo, settings, taipei_user, clock):
    host, port = open_meteo.server.server_address[:2]
    settings.WEATHER_PROVIDER = "open-meteo"
    settings.WEATHER_GEOCODING_URL = f"http://{host}:{port}/v1/search"
    settings.WEATHER_FORECAST_URL = f"http://{host}:{port}/v1/forecast"
    result = call(taipei_user, "get_weather", city="Berlin", date="saturday")
    assert result["status"] == "success"
    assert result["data"]["forecast"]["condition"] == "rain"
    assert "bring an umbrella" in result["message"] and "Saturday 14 June" in result["message"]
    open_meteo.status = 500
    failed = call(taipei_user, "get_weather", city="Berlin", date="saturday")
    assert failed["status"] == "error" and "HTTP 500" in failed["message"]


def test_get_weather_tool_errors(taipei_user, clock, fixed_weather, settings):
    assert call(taipei_user, "get_weather", city="Atlantis")["status"] == "error"
    no_city = call(taipei_user, "get_weather")
    assert no_city["status"] == "need_confirmation" and "Ask the user" not in no_city["message"]
    assert no_city["ask"]["question"] == "Which city is it in?"  # put to the user by the engine
    assert no_city["ask"]["answer_into"] == "city"
    settings.WEATHER_DEFAULT_CITY = "Taipei"
    assert call(taipei_user, "get_weather")["status"] == "success"
    past = call(taipei_user, "get_weather", city="Taipei", date="yesterday")
    assert past["status"] == "error" and "outside" in past["message"]
    far = call(taipei_user, "get_weather", city="Taipei", date="2025-06-26")  # today + 15: ok
    assert far["status"] == "success"
    too_far = call(taipei_user, "get_weather", city="Taipei", date="2025-06-27")
    assert too_far["status"] == "error"
    assert call(taipei_user, "get_weather", city="Taipei", date="someday")["status"] == "error"
    assert call(taipei_user, "get_weather", city="")["registry_error"] == "invalid_arguments"
