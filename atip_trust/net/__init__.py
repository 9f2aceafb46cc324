"""Layer 2: the one HTTP client (httpx): URL rules, same-origin redirects, size and time caps."""
