"""Model providers behind one streaming interface, chosen per agent."""

from __future__ import annotations

from django.conf import settings

from agents.providers.base import ModelProvider, ProviderError


def provider_for(name: str) -> ModelProvider:
    """The provider an agent's `provider` setting names ("default" resolves from settings)."""
    if name == "default":
        name = settings.DEFAULT_MODEL_PROVIDER
    if name == "openai":
        from agents.providers.openai_provider import OpenAIProvider

        return OpenAIProvider()
    if name == "offline":
        from agents.providers.offline import OfflineProvider

        return OfflineProvider()
    if name == "a2a":
        from agents.providers.a2a_provider import A2AProvider

        return A2AProvider()
    raise ProviderError("model_misconfigured", f"Unknown model provider {name!r}.")
