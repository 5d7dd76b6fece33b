"""One module per fake provider: its payloads (in the real provider's shapes, generated
deterministically) and its request handler. The transport routes each request to the provider that
accepts its host; `_common` holds what they share, `_text` the fake content they draw from."""
