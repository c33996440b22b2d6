"""The models a provider offers, for the admin's model picker: the OpenAI-compatible server's
`/models` (cached a few minutes), or the offline model's own name."""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache

from agents.providers.base import ProviderError

OFFLINE_MODEL_NAME = "offline"
CACHE_SECONDS = 300


def provider_model_names(provider: str) -> list[str]:
    """The model names `provider` ("default", "openai" or "offline") offers, sorted; the
    OpenAI-compatible server is asked at OPENAI_BASE_URL with OPENAI_API_KEY. Raises
    ProviderError when it cannot be asked or does not answer."""
    if provider == "default":
        provider = settings.DEFAULT_MODEL_PROVIDER
    if provider == "offline":
        return [OFFLINE_MODEL_NAME]
    if provider != "openai":
        raise ProviderError("model_misconfigured", f"Unknown model provider {provider!r}.")
    key = f"agents:models:{settings.OPENAI_BASE_URL}"
    names = cache.get(key)
    if names is None:
        names = _openai_model_names()
        cache.set(key, names, CACHE_SECONDS)
    return list(names)


def _openai_model_names() -> list[str]:
    """`client.models.list()` of the configured server."""
    import openai  # as the provider does: the SDK is imported where used (0.9 s)

    base_url = settings.OPENAI_BASE_URL
    api_key = settings.OPENAI_API_KEY or ("not-needed" if base_url else "")
    if not api_key:
        raise ProviderError(
            "model_misconfigured", "OPENAI_API_KEY is not set and no OPENAI_BASE_URL is given."
        )
    client = openai.OpenAI(
        base_url=base_url or None,
        api_key=api_key,
        timeout=min(settings.OPENAI_TIMEOUT, 10.0),
        max_retries=0,
    )
    try:
        return sorted({model.id for model in client.models.list()})
    except openai.APIError as exc:
        raise ProviderError("model_unavailable", f"The model list failed: {exc}") from exc
