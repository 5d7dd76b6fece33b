"""Deterministic fake content shared by the providers' payloads: handles, names, sentences, dates.

Every value is a pure function of its seed (see `_det.Det`): the same request always gets the same
bytes, and an account keeps its name wherever it appears.
"""

from __future__ import annotations

import re
from datetime import datetime

from social_recording.sandbox._det import EPOCH_END, EPOCH_START, Det

ADJ = ("based", "degen", "cosmic", "tiny", "golden", "sleepy", "hyper", "lunar", "rapid", "quiet",
        "wild", "frozen", "solar", "happy", "brave", "neon")
NOUN = ("dog", "cat", "frog", "whale", "ape", "moon", "rocket", "pepe", "bonk", "wizard", "panda",
         "otter", "shiba", "hamster", "duck", "goat")
FIRST_NAMES = ("Alex", "Sam", "Jordan", "Kai", "Mina", "Leo", "Yuna", "Noah", "Ava", "Theo", "Ines", "Ravi")
PLACES = ("Miami", "Seoul", "Berlin", "Lisbon", "Singapore", "Dubai", "Austin", "Tokyo", "", "Solana")
PHRASES = (
    "gm frens, the chart is looking healthy today",
    "community takeover is live, join the movement",
    "we just got listed, thank you all for the support",
    "new roadmap drop this week, stay tuned",
    "this is the most fun community on solana",
    "devs are cooking something big",
    "holders meeting tonight in the telegram",
    "meme contest winners announced",
    "liquidity locked and contract renounced",
    "art reveal at 100k market cap",
)
TOPICS = ("solana", "memecoin", "crypto", "web3", "defi", "nft", "community", "trading")
LANGS = ("TypeScript", "Rust", "Python", "JavaScript", "Go", None)
COUNTRIES = ("US", "KR", "DE", "SG", "GB", "JP", "AE", "BR")


def handle_for(det: Det, label: str = "handle") -> str:
    """A plausible lower-case handle (letters, digits, underscore; ≤ 15 characters)."""
    base = f"{det.pick(label + '.a', ADJ)}{det.pick(label + '.n', NOUN)}"
    return f"{base}{det.num(label + '.d', 1, 999)}"[:15]


def display_name(det: Det, handle: str) -> str:
    if det.chance("name.kind", 1, 2):
        return f"{det.pick('name.first', FIRST_NAMES)} {det.pick('name.noun', NOUN).title()}"
    return handle.replace("_", " ").title()


def sentence(det: Det, label: str) -> str:
    return det.pick(label, PHRASES)


def created_date(det: Det, label: str = "created", *, before: datetime | None = None) -> datetime:
    end = min(EPOCH_END, before) if before is not None else EPOCH_END
    return det.date(label, EPOCH_START, max(EPOCH_START, end))


def site_for(name: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "project"
    return f"https://{slug}.io"
