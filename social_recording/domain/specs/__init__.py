"""Every platform's spec: its descriptor (the provider account, its rates and price) and its URL
rules, one module each, and the catalogue registering them. Pure data at the bottom layer, so the
canonicaliser reads every platform's rules without importing upward (docs/architecture.md, "Layers").
Each platform's generator and sandbox fake stay in `social_recording/platforms/<platform>/`."""
