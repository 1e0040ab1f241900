"""The Telegram Mini App: the what-if calculator page and its JSON routes (mounted under /app)."""
