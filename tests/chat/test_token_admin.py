"""Staff manage API tokens in admin: create (secret shown once, stored hashed), revoke."""

from __future__ import annotations

import re

import pytest

from chat.models import ApiToken
from chat.tokens import token_hash

pytestmark = pytest.mark.django_db


def test_staff_create_a_token_see_it_once_and_revoke_it(admin_client, user):
    response = admin_client.post(
        "/admin/chat/apitoken/add/", {"user": user.pk, "name": "bridge"}, follow=True
    )
    raw = re.search(r"not shown again: (ap_[\w-]+)", response.content.decode()).group(1)
    token = ApiToken.objects.get(name="bridge")
    assert token.user == user and token.key_hash == token_hash(raw)
    assert raw not in admin_client.get(f"/admin/chat/apitoken/{token.pk}/change/").content.decode()
    admin_client.post("/admin/chat/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    token.refresh_from_db()
    assert token.revoked_at is not None
