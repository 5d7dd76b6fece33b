"""Table tests for the graph contract (`plan`) and link folding."""

from __future__ import annotations

import pytest

from social_recording.domain.graph import (
    GraphGroup,
    ObjectKind,
    SocialContractError,
    SocialGraph,
    SocialObject,
    plan,
    planned_links,
)
from social_recording.domain.urls import Platform


def tweet(key: str) -> SocialObject:
    return SocialObject(platform=Platform.X, platform_key=f"x:{key}", subtype="tweet")


def user(key: str) -> SocialObject:
    return SocialObject(platform=Platform.X, platform_key=f"x-user:{key}", subtype="user")


def g(ref: str, parent: str | None = None, *, content: bool = True, account: str | None = None) -> GraphGroup:
    return GraphGroup(
        ref=ref,
        content=tweet(ref) if content else None,
        account=user(account or ref),
        parent_ref=parent,
    )


def test_single_group_is_depth_zero() -> None:
    out = plan(SocialGraph(groups=[g("a")]))
    assert [(p.group.ref, p.depth) for p in out] == [("a", 0)]


def test_quote_chain_depths_are_distance_from_root() -> None:
    graph = SocialGraph(groups=[g("a"), g("c", "b"), g("b", "a")])
    assert [(p.group.ref, p.depth) for p in plan(graph)] == [("a", 0), ("b", 1), ("c", 2)]


def test_account_only_and_venue_only_groups_are_valid() -> None:
    venue = SocialObject(platform=Platform.TELEGRAM, platform_key="telegram:chan", subtype="channel")
    assert plan(SocialGraph(groups=[GraphGroup(ref="v", venue=venue)]))[0].depth == 0
    assert plan(SocialGraph(groups=[GraphGroup(ref="u", account=user("1"))]))[0].depth == 0


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([], "no groups"),
        ([GraphGroup(ref="a")], "holds no content"),
        ([g("a"), g("a")], "duplicate group ref"),
        ([g("a"), g("b", "zz")], "unknown parent 'zz'"),
        ([g("a", content=False), g("b", "a")], "which has no content"),
        ([g("a"), g("b", "c"), g("c", "b")], "cycle"),
        ([g("a", "a")], "cycle"),
        ([g("a", "b"), g("b", "a")], "cycle"),
        ([g("a"), g("b")], "not reachable"),
    ],
)
def test_contract_violations(groups: list[GraphGroup], message: str) -> None:
    with pytest.raises(SocialContractError, match=message):
        plan(SocialGraph(groups=groups))


def test_contract_error_carries_attempted() -> None:
    err = SocialContractError("x", attempted=False)
    assert err.attempted is False
    assert SocialContractError("y").attempted is True


def test_planned_links_fold_by_object_at_smallest_depth() -> None:
    # the same author quotes himself: one account link, at depth 0
    graph = SocialGraph(groups=[g("a", account="u1"), g("b", "a", account="u1"), g("c", "b", account="u2")])
    links = planned_links(plan(graph))
    assert [(lk.kind, lk.obj.platform_key, lk.depth) for lk in links] == [
        (ObjectKind.CONTENT, "x:a", 0),
        (ObjectKind.ACCOUNT, "x-user:u1", 0),
        (ObjectKind.CONTENT, "x:b", 1),
        (ObjectKind.CONTENT, "x:c", 2),
        (ObjectKind.ACCOUNT, "x-user:u2", 2),
    ]
