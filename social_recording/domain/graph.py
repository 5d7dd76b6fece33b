"""The social graph a generator returns, and `plan()`, the contract check before any write.

A graph is a list of groups; each group holds at most one content, one account and one venue, and
may name a parent group (the content that quotes / contains it). groups[0] is the root: the object
behind the entry URL. `link_depth` is the distance from the root (no `min` folding
across entry URLs is needed, one row per object per entry URL already has the smallest depth).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from social_recording.domain.platform import Platform


class SocialContractError(Exception):
    """The generator output broke the graph contract: fails identically forever -> `invalid`.

    `attempted` says whether the invocation that produced the broken output made an external call.
    """

    def __init__(self, message: str, *, attempted: bool = True) -> None:
        super().__init__(message)
        self.attempted = attempted


class ObjectKind(StrEnum):
    CONTENT = "content"
    ACCOUNT = "account"
    VENUE = "venue"


class SocialObject(BaseModel):
    """One content / account / venue as observed. Identity is `platform_key` (the platform's immutable id).

    `outbound_urls` are canonical; `media_urls`, `avatar_url`, `icon_url` are stored exactly as the
    API sent them (display URLs are never canonicalised), and only when they are http(s) links: an
    inline `data:` image (t.me's placeholder avatar) or any other scheme is not a URL to keep.
    """

    model_config = ConfigDict(frozen=True)

    platform: Platform
    platform_key: str = Field(min_length=1)
    subtype: str = Field(min_length=1)
    fields: dict[str, Any] = Field(default_factory=dict)
    outbound_urls: list[str] = Field(default_factory=list)
    media_urls: list[str] = Field(default_factory=list)
    avatar_url: str | None = None
    icon_url: str | None = None
    metrics: dict[str, float] = Field(default_factory=dict)

    @field_validator("media_urls", mode="after")
    @classmethod
    def _links_only(cls, values: list[str]) -> list[str]:
        return [v for v in values if is_display_link(v)]

    @field_validator("avatar_url", "icon_url", mode="after")
    @classmethod
    def _link_or_none(cls, value: str | None) -> str | None:
        return value if value is not None and is_display_link(value) else None


def is_display_link(value: str) -> bool:
    """An http(s) link (case-insensitive scheme); `data:`, `blob:`, `javascript:` and the like are not."""
    return value.strip().lower().startswith(("https://", "http://"))


class GraphGroup(BaseModel):
    model_config = ConfigDict(frozen=True)

    ref: str = Field(min_length=1)
    content: SocialObject | None = None
    account: SocialObject | None = None
    venue: SocialObject | None = None
    parent_ref: str | None = None

    def objects(self) -> list[tuple[ObjectKind, SocialObject]]:
        """The group's objects in a fixed order (content, account, venue)."""
        out: list[tuple[ObjectKind, SocialObject]] = []
        if self.content is not None:
            out.append((ObjectKind.CONTENT, self.content))
        if self.account is not None:
            out.append((ObjectKind.ACCOUNT, self.account))
        if self.venue is not None:
            out.append((ObjectKind.VENUE, self.venue))
        return out


class SocialGraph(BaseModel):
    model_config = ConfigDict(frozen=True)

    groups: list[GraphGroup] = Field(default_factory=list)


@dataclass(frozen=True)
class PlannedGroup:
    group: GraphGroup
    depth: int


def plan(graph: SocialGraph) -> list[PlannedGroup]:
    """Validate `graph` and order its groups root-first with their depth.

    Raises SocialContractError on: no groups, an empty group, duplicate refs, a parent reference
    to an unknown group, a parent reference to a group without content, a cycle, or a group not
    reachable from the root (groups[0]).
    """
    groups = graph.groups
    if not groups:
        raise SocialContractError("graph has no groups")
    by_ref: dict[str, GraphGroup] = {}
    for g in groups:
        if g.ref in by_ref:
            raise SocialContractError(f"duplicate group ref {g.ref!r}")
        if not g.objects():
            raise SocialContractError(f"group {g.ref!r} holds no content, account or venue")
        by_ref[g.ref] = g
    for g in groups:
        if g.parent_ref is None:
            continue
        parent = by_ref.get(g.parent_ref)
        if parent is None:
            raise SocialContractError(f"group {g.ref!r} names unknown parent {g.parent_ref!r}")
        if parent.content is None:
            raise SocialContractError(
                f"group {g.ref!r} names parent {g.parent_ref!r}, which has no content"
            )
    _reject_cycles(groups, by_ref)
    root = groups[0]
    if root.parent_ref is not None:
        raise SocialContractError(f"root group {root.ref!r} must not have a parent")
    children: dict[str, list[GraphGroup]] = {}
    for g in groups:
        if g.parent_ref is not None:
            children.setdefault(g.parent_ref, []).append(g)
    ordered: list[PlannedGroup] = []
    seen: set[str] = set()
    queue: deque[tuple[GraphGroup, int]] = deque([(root, 0)])
    while queue:
        g, depth = queue.popleft()
        if g.ref in seen:
            continue
        seen.add(g.ref)
        ordered.append(PlannedGroup(g, depth))
        for child in children.get(g.ref, []):
            queue.append((child, depth + 1))
    unreachable = [g.ref for g in groups if g.ref not in seen]
    if unreachable:
        raise SocialContractError(f"groups not reachable from root {root.ref!r}: {unreachable}")
    return ordered


def _reject_cycles(groups: list[GraphGroup], by_ref: dict[str, GraphGroup]) -> None:
    for start in groups:
        visited: set[str] = set()
        current: GraphGroup | None = start
        while current is not None and current.parent_ref is not None:
            if current.ref in visited:
                raise SocialContractError(f"cycle in parent chain through group {current.ref!r}")
            visited.add(current.ref)
            current = by_ref.get(current.parent_ref)
        if current is not None and current.ref in visited:
            raise SocialContractError(f"cycle in parent chain through group {current.ref!r}")


@dataclass(frozen=True)
class PlannedLink:
    """One link the writer will create: an object of the graph at its depth (one per object, min depth)."""

    kind: ObjectKind
    obj: SocialObject
    depth: int


def planned_links(planned: list[PlannedGroup]) -> list[PlannedLink]:
    """Fold by object identity: an object appearing in several groups is linked once, at its smallest
    depth (root-first order makes the first occurrence the smallest)."""
    out: list[PlannedLink] = []
    seen: set[tuple[ObjectKind, str]] = set()
    for pg in planned:
        for kind, obj in pg.group.objects():
            key = (kind, obj.platform_key)
            if key in seen:
                continue
            seen.add(key)
            out.append(PlannedLink(kind, obj, pg.depth))
    return out
