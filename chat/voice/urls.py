"""Routes of the chat page's voice endpoints, under /voice/."""

from django.urls import path

from chat.voice.views import SpeechView, TranscriptionView

app_name = "voice"
urlpatterns = [
    path("transcriptions/", TranscriptionView.as_view(), name="transcriptions"),
    path("speech/", SpeechView.as_view(), name="speech"),
]
