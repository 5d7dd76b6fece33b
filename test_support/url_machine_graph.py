"""The stored graph, checked by the model against the graphs its fake provider handed out.

Every ok answer hands out a graph built here: a root content and its author, a quoted content naming
the same author again (one link, at depth 0) with a venue, and for some URLs a reply nested one level
deeper. The author is shared by every URL of a host, and every answer carries new values (fields and
metrics), so an object seen again comes with another body. After each step the model reads the store
back and asks: the links of an ok element are exactly the URL's objects at their depths, each object
once; an object's body and metrics are values some answer handed out, and, once stored, never change
(objects and metrics keep their first-seen values, docs/architecture.md).
"""

from __future__ import annotations

import itertools
import zlib
from typing import Any

from hypothesis.stateful import invariant

from social_recording.domain.graph import GraphGroup, ObjectKind, SocialGraph, SocialObject
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import parse_canonical


class GraphLedger:
    """What the fake provider handed out: every object's bodies and metrics, in the order given."""

    def __init__(self) -> None:
        self.answers = itertools.count(1)
        self.given: dict[str, list[tuple[dict[str, Any], dict[str, float]]]] = {}

    def obj(self, url: str, key: str, subtype: str, n: int, metric: str | None = None) -> SocialObject:
        platform = parse_canonical(url).platform
        fields = {"text": f"{key} as of answer {n}"}
        metrics = {metric: float(n)} if metric is not None else {}
        self.given.setdefault(key, []).append((fields, metrics))
        return SocialObject(platform=platform, platform_key=key, subtype=subtype, fields=fields, metrics=metrics)


def ledger_of(world: Any) -> GraphLedger:
    """The world's ledger (created on first use: the world is the model's shared dataclass)."""
    ledger = getattr(world, "graph_ledger", None)
    if ledger is None:
        ledger = GraphLedger()
        world.graph_ledger = ledger
    return ledger


def nested(url: str) -> bool:
    """Whether the URL's graph holds a reply two levels down (drawn once per URL, deterministically)."""
    return zlib.crc32(url.encode()) % 2 == 0


def author_key(url: str) -> str:
    return f"account:{parse_canonical(url).host}:author"


BROKEN = "a broken graph: "
"""The answer that hands out a graph breaking the contract (docs/architecture.md, "Recording one URL":
a broken graph is `invalid`), followed by one of BROKEN_SHAPES."""
BROKEN_SHAPES = ("a group under a parent without content", "a parent no group has", "two groups with one ref",
                 "an empty group", "a root with a parent", "a group out of the root's reach", "a cycle",
                 "no groups")


def broken_graph(shape: str, url: str) -> SocialGraph:
    """A graph of `shape` (BROKEN_SHAPES): each breaks one rule of the graph contract, and each is
    otherwise well formed (objects the URL's platform names), so only that rule refuses it."""
    platform = parse_canonical(url).platform

    def obj(key: str, subtype: str = "post") -> SocialObject:
        return SocialObject(platform=platform, platform_key=f"broken:{key}:{url}", subtype=subtype)

    root = GraphGroup(ref="root", content=obj("root"), account=obj("author", "user"))
    groups = {
        "a group under a parent without content": [
            root, GraphGroup(ref="author", account=obj("other", "user"), parent_ref="root"),
            GraphGroup(ref="post", content=obj("post"), parent_ref="author")],
        "a parent no group has": [root, GraphGroup(ref="post", content=obj("post"), parent_ref="gone")],
        "two groups with one ref": [root, GraphGroup(ref="root", content=obj("post"))],
        "an empty group": [root, GraphGroup(ref="post", parent_ref="root")],
        "a root with a parent": [GraphGroup(ref="root", content=obj("root"), parent_ref="post"),
                                 GraphGroup(ref="post", content=obj("post"))],
        "a group out of the root's reach": [root, GraphGroup(ref="post", content=obj("post"))],
        "a cycle": [root, GraphGroup(ref="a", content=obj("a"), parent_ref="b"),
                    GraphGroup(ref="b", content=obj("b"), parent_ref="a")],
        "no groups": [],
    }[shape]
    return SocialGraph(groups=groups)


def graph_answer(world: Any, url: str) -> SocialGraph:
    """The graph of one ok answer, with this answer's values (or the broken graph the answer names)."""
    answer = world.answers.get(url, "ok")
    if answer.startswith(BROKEN):
        return broken_graph(answer[len(BROKEN):], url)
    led = ledger_of(world)
    n = next(led.answers)
    author = led.obj(url, author_key(url), "user", n, "followers")
    groups = [
        GraphGroup(ref="root", content=led.obj(url, f"content:{url}", "post", n, "likes"), account=author),
        GraphGroup(ref="quoted", content=led.obj(url, f"quoted:{url}", "post", n), account=author,
                   venue=led.obj(url, f"venue:{url}", "channel", n, "members"), parent_ref="root"),
    ]
    if nested(url):
        groups.append(GraphGroup(ref="reply", content=led.obj(url, f"reply:{url}", "post", n, "likes"),
                                 parent_ref="quoted"))
    return SocialGraph(groups=groups)


def expected_links(url: str) -> list[tuple[str, str, int]]:
    """(kind, platform key, depth) of every object of the URL's graph: each once, at its smallest depth."""
    out = [("content", f"content:{url}", 0), ("account", author_key(url), 0),
           ("content", f"quoted:{url}", 1), ("venue", f"venue:{url}", 1)]
    if nested(url):
        out.append(("content", f"reply:{url}", 2))
    return sorted(out)


class GraphRules:
    """The stored graph's checks (mixed into `UrlRules`)."""

    store: Any
    tokens: list[str]
    world: Any

    @invariant()
    def the_stored_graph_is_the_answers(self) -> None:
        led = ledger_of(self.world)
        first: dict[str, tuple[Any, ...]] = self.__dict__.setdefault("graph_first_seen", {})
        for address in self.tokens:
            doc = self.store.find_token(address)
            if doc is None:
                continue
            for el in doc.social_urls:
                if el.status is not FetchStatus.OK:
                    continue
                got = []
                for link in self.store.find_links(address, el.url):
                    kind = ObjectKind(link.object)
                    obj = self.store.get_object(kind, link.object_id)
                    assert obj is not None, f"{address} {el.url}: a link to a missing {kind.value} {link.object_id}"
                    key = obj["platform_key"]
                    got.append((kind.value, key, link.link_depth))
                    body = (obj["fields"], self.store.find_metrics(kind, link.object_id))
                    if key in first:
                        assert body == first[key], (
                            f"{key}: stored as {first[key]}, now {body}: an object and its metrics keep the "
                            f"values first seen")
                        continue
                    given = led.given.get(key, [])
                    assert body in [(f, m) for f, m in given], (
                        f"{key}: stored {body}, never handed out (handed out: {given})")
                    first[key] = body
                assert sorted(got) == expected_links(el.url), (
                    f"{address} {el.url}: links {sorted(got)}, the answers' graph is {expected_links(el.url)}")
