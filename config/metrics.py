"""The metrics registry: Prometheus instruments the apps define and record (prometheus_client),
readings of the database taken at each scrape, and `/metrics`, open to staff or to a caller
presenting METRICS_TOKEN (docs/operations.md, *Health and metrics*)."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Iterable, Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

PREFIX = "agent_platform_"
REGISTRY = CollectorRegistry(auto_describe=True)

# Seconds, from a hop's few milliseconds to a long model answer.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


def counter(name: str, documentation: str, labels: Iterable[str] = ()) -> Counter:
    """A counter in the platform's registry, named with its prefix."""
    return Counter(PREFIX + name, documentation, list(labels), registry=REGISTRY)


def gauge(name: str, documentation: str, labels: Iterable[str] = ()) -> Gauge:
    """A gauge this process sets (connections open, say), in the platform's registry."""
    return Gauge(PREFIX + name, documentation, list(labels), registry=REGISTRY)


def histogram(name: str, documentation: str, labels: Iterable[str] = ()) -> Histogram:
    """A latency histogram in seconds, in the platform's registry."""
    return Histogram(
        PREFIX + name, documentation, list(labels), buckets=LATENCY_BUCKETS, registry=REGISTRY
    )


Reading = tuple[str, str, list[str], list[tuple[list[str], float]]]


class _Readings(Collector):
    """Gauges read from the database at each scrape (queue depth, people waiting): the same
    for every process, so any web process can answer for the whole deployment."""

    def __init__(self) -> None:
        self.sources: list[Callable[[], Iterable[Reading]]] = []

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            try:
                readings = list(source())
            except Exception:  # a scrape shows what it can; the log says what it could not
                logger.exception("metrics source %s failed", getattr(source, "__name__", source))
                continue
            for name, documentation, labels, samples in readings:
                family = GaugeMetricFamily(PREFIX + name, documentation, labels=labels)
                for values, value in samples:
                    family.add_metric(values, value)
                yield family

    def describe(self) -> Iterator[Metric]:
        return iter(())  # known only at scrape time


_READINGS = _Readings()
REGISTRY.register(_READINGS)


def readings_source(source: Callable[[], Iterable[Reading]]) -> None:
    """Register a function read at each scrape: it yields (name, documentation, label names,
    [(label values, value)]) for gauges of the database's state. Registered once per process
    (an app's ready())."""
    if source not in _READINGS.sources:
        _READINGS.sources.append(source)


def metrics_text() -> bytes:
    """Every metric in Prometheus' text format."""
    return generate_latest(REGISTRY)


def token_presented(authorization: str) -> bool:
    """Whether an Authorization header carries METRICS_TOKEN as its bearer token."""
    token = settings.METRICS_TOKEN
    scheme, _, presented = authorization.partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(presented, token)


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus' scrape: a staff member's session or the METRICS_TOKEN bearer token; 401 for
    an anonymous caller, 403 for a signed-in one who is not staff."""
    if not token_presented(request.headers.get("Authorization", "")):
        if not request.user.is_authenticated:
            response = HttpResponse("Sign in as staff or present METRICS_TOKEN.", status=401)
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        if not request.user.is_staff:
            return HttpResponse("Metrics are for staff.", status=403)
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_LATEST)
