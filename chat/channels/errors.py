"""What a channel's sender raises for the gateway to act on, whichever channel it is."""


class RateLimited(Exception):
    """The channel answered 429 (and its SDK does not wait it out itself): send again later."""
