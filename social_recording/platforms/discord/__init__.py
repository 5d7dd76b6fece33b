"""Discord invites, through Discord's public invite endpoint: free, no key: its generator and sandbox fake.
Its descriptor and URL rules are pure data in its
`spec.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.platforms.discord.spec import DESCRIPTOR, DISCORD

__all__ = ["DESCRIPTOR", "DISCORD"]
