"""URLs of the OpenAI-compatible API, under /api/openai/v1/."""

from django.urls import path

from chat.interop import openai_api

urlpatterns = [
    path("models", openai_api.models, name="openai-models"),
    path("chat/completions", openai_api.chat_completions, name="openai-chat-completions"),
]
