"""LINE: the webhook LINE calls and the Messaging API the answers go out through."""
