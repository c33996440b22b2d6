"""DRF's content negotiation, with `?format=` given empty refused as an unknown format."""

from __future__ import annotations

from collections.abc import Iterable

from django.http import Http404
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class StrictContentNegotiation(DefaultContentNegotiation):
    """An empty `format` query parameter names no format the endpoint serves (the schema lists
    them): 404, as for any other unknown format, instead of being read as none given."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        """The renderer DRF picks, once an empty `format` was refused."""
        override = self.settings.URL_FORMAT_OVERRIDE
        if not format_suffix and override and request.query_params.get(override) == "":
            raise Http404
        return super().select_renderer(request, renderers, format_suffix)
