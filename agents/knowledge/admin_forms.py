"""Forms of the knowledge admin's tools: many files at once, and a test search as a chosen user."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

from agents.knowledge.parsing import SUPPORTED

DEFAULT_TOP_K = 5  # as kb_search


class MultipleFileInput(forms.FileInput):
    """A file input that takes many files (a plain `<input type=file multiple>`)."""

    allow_multiple_selected = True


class UploadManyForm(forms.Form):
    """Files for one knowledge base; each is judged on its own by the batch, not here, so one
    empty or unsupported file does not send the others back."""

    uploads = forms.Field(
        label=_("Files"),
        required=False,  # clean_uploads says what is missing
        widget=MultipleFileInput(attrs={"accept": ",".join(f".{ext}" for ext in SUPPORTED)}),
        help_text=_(
            "Choose or drop several files: .md, .txt, .html, .pdf (with text) or .docx. A file "
            "with the same name as a document makes a new version of it."
        ),
    )
    effective_date = forms.DateField(
        label=_("Effective date"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        help_text=_("For every file of this upload (blank: today)."),
    )

    def clean_uploads(self) -> list[Any]:
        """The chosen files, at least one."""
        chosen = [f for f in self.files.getlist(self.add_prefix("uploads")) if f is not None]
        if not chosen:
            raise forms.ValidationError(_("Choose at least one file."))
        return chosen


class SearchAsForm(forms.Form):
    """A query, and the user to search as (the staff member by default)."""

    query = forms.CharField(
        label=_("Query"),
        max_length=settings.KNOWLEDGE_MAX_QUERY_CHARS,
        widget=forms.TextInput(attrs={"autofocus": True, "size": 60}),
    )
    username = forms.CharField(
        label=_("Search as"),
        max_length=150,
        help_text=_("A username: the passages are those this user would get (their access)."),
        widget=forms.TextInput(attrs={"autocomplete": "off", "list": "search-as-users"}),
    )
    top_k = forms.IntegerField(
        label=_("Passages"),
        min_value=1,
        max_value=settings.KNOWLEDGE_MAX_TOP_K,
        initial=DEFAULT_TOP_K,
        required=False,
    )

    def __init__(self, *args: Any, viewer: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.viewer = viewer
        self.fields["username"].initial = viewer.get_username()

    def clean_username(self) -> Any:
        """The user named; someone else only for staff who may view users."""
        username = self.cleaned_data["username"].strip()
        if username == self.viewer.get_username():
            return self.viewer
        if not self.viewer.has_perm("auth.view_user"):
            raise forms.ValidationError(
                _("Searching as another user needs the permission to view users.")
            )
        user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: username})
        found = user.first()
        if found is None:
            raise forms.ValidationError(_("No user is named %(name)s.") % {"name": username})
        return found
