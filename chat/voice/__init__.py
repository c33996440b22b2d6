"""Voice in the chat page: speech to text for the composer, text to speech for answers."""
