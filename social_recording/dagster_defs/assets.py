"""The recorded data as Dagster assets, materialized by the runs that write them and observed after
every run.

The store's collections are external assets: the jobs (reconcile, retry, live) write them through
the recording engine. Declaring them gives the Catalog and the Lineage view what exists and how data
flows (tracker tokens -> token social URLs -> contents, accounts, venues -> metrics and token links).
A run reports an `AssetMaterialization` of each asset it wrote to, and an `AssetObservation` of
every asset whose numeric metadata the asset page plots over time: URLs by status (all nine),
tokens, and what the run converged, called, reused and paid for.

No `from __future__ import annotations`: Dagster reads annotations at decoration time.
"""

from collections.abc import Mapping, Sequence

from dagster import AssetKey, AssetMaterialization, AssetObservation, AssetSpec, MetadataValue

from social_recording.domain.graph import ObjectKind
from social_recording.domain.status import FetchStatus
from social_recording.recording.health import RunFigures, StoreFigures
from social_recording.recording.outcomes import Written
from social_recording.recording.run_state import RunState
from social_recording.store.base import HealthStore

GROUP = "social_recording"
PREFIX = "social_recording"


def _key(name: str) -> AssetKey:
    return AssetKey([PREFIX, name])


TRACKER_TOKENS = _key("tracker_tokens")
TOKEN_SOCIAL_URLS = _key("token_social_urls")
CONTENTS = _key("contents")
ACCOUNTS = _key("accounts")
VENUES = _key("venues")
METRICS = _key("metrics")
TOKEN_LINKS = _key("token_links")

OBJECT_ASSETS: dict[ObjectKind, AssetKey] = {
    ObjectKind.CONTENT: CONTENTS,
    ObjectKind.ACCOUNT: ACCOUNTS,
    ObjectKind.VENUE: VENUES,
}
WRITTEN_ASSETS: dict[Written, AssetKey] = {
    Written.TOKEN_URLS: TOKEN_SOCIAL_URLS,
    Written.CONTENTS: CONTENTS,
    Written.ACCOUNTS: ACCOUNTS,
    Written.VENUES: VENUES,
    Written.METRICS: METRICS,
    Written.TOKEN_LINKS: TOKEN_LINKS,
}
"""The asset each collection a recording writes to belongs to."""
_OBJECT_WORDS = {
    ObjectKind.CONTENT: ("contents", "Posts, videos, repositories and web pages a token's links point at (or that "
                         "those quote), one row per object, keyed by the platform's immutable id."),
    ObjectKind.ACCOUNT: ("accounts", "Authors and channels: the account behind each content, one row per account."),
    ObjectKind.VENUE: ("venues", "Places content lives in: subreddits, Telegram groups and channels, one row each."),
}


def _spec(key: AssetKey, description: str, deps: list[AssetKey], collection: str) -> AssetSpec:
    return AssetSpec(
        key,
        description=description,
        deps=deps,
        group_name=GROUP,
        metadata={"collection": MetadataValue.text(collection)},
    )


ASSET_SPECS: list[AssetSpec] = [
    AssetSpec(
        TRACKER_TOKENS,
        description=(
            "Tokens in the in-house tracker that enough alpha-finder investors bought, with the social "
            "links of their profiles. Read by reconcile_job (one UTC day at a time) and token_flow_sensor "
            "(freshly traded tokens); never written by us."
        ),
        group_name=GROUP,
    ),
    _spec(
        TOKEN_SOCIAL_URLS,
        "One row per (token, canonical social URL) with where recording it stands: ok, not_found, "
        "blocked, invalid and exhausted are final; error, unsupported, skipped_paid and pending may still "
        "change, and the retry job re-attempts them. Every run observes the counts by status here.",
        [TRACKER_TOKENS],
        "tokens, token_urls",
    ),
    *(
        _spec(OBJECT_ASSETS[kind], words, [TOKEN_SOCIAL_URLS], name)
        for kind, (name, words) in _OBJECT_WORDS.items()
    ),
    _spec(
        METRICS,
        "The first value seen of each metric (likes, views, members, stars...) per object; never updated.",
        [CONTENTS, ACCOUNTS, VENUES],
        "metrics",
    ),
    _spec(
        TOKEN_LINKS,
        "Which objects each token links to, per entry URL, with the object's depth in a quote chain.",
        [TOKEN_SOCIAL_URLS, CONTENTS, ACCOUNTS, VENUES],
        "token_links",
    ),
]
"""External assets: the jobs write them, Dagster only shows and checks them."""


def _run_figures(run: RunState | RunFigures | None) -> RunFigures | None:
    if run is None or isinstance(run, RunFigures):
        return run
    return RunFigures.of(run)


def observations_for_run(
    store: HealthStore, run: RunState | RunFigures | None = None, *, figures: StoreFigures | None = None
) -> list[AssetObservation]:
    """One observation per recorded-data asset, from the store now and the run's counters.

    Every figure is numeric so the asset page plots it; the run's own figures are left out when there
    is no run (the hourly health check observes the store alone)."""
    now = figures or StoreFigures.read(store)
    done = _run_figures(run)
    urls: dict[str, MetadataValue] = {f"urls_{s.value}": MetadataValue.int(now.by_status.get(s, 0))
                                      for s in FetchStatus}
    urls["urls_total"] = MetadataValue.int(now.urls)
    urls["urls_not_converged"] = MetadataValue.int(now.not_converged)
    urls["tokens"] = MetadataValue.int(now.tokens)
    urls["urls_by_platform"] = MetadataValue.json(
        {platform: {s.value: n for s, n in counts.items() if n} for platform, counts in now.by_platform.items()}
    )
    if done is not None:
        urls.update({
            "urls_processed_this_run": MetadataValue.int(done.urls),
            "urls_converged_this_run": MetadataValue.int(done.converged),
            "calls_made_this_run": MetadataValue.int(done.calls_made),
            "calls_reused_this_run": MetadataValue.int(done.calls_reused),
            "paid_calls_this_run": MetadataValue.int(done.paid_calls),
        })
    observations = [AssetObservation(TOKEN_SOCIAL_URLS, metadata=urls)]
    observations += [
        AssetObservation(key, metadata={"objects": MetadataValue.int(now.objects.get(kind, 0))})
        for kind, key in OBJECT_ASSETS.items()
    ]
    observations.append(AssetObservation(METRICS, metadata={"metric_points": MetadataValue.int(now.metrics)}))
    observations.append(AssetObservation(TOKEN_LINKS, metadata={"links": MetadataValue.int(now.links)}))
    return observations


def materializations_for_run(
    job: str, written: Mapping[Written, int], observations: Sequence[AssetObservation] = ()
) -> list[AssetMaterialization]:
    """One materialization per asset the run wrote to (`written`: collection -> URL recordings, or
    tokens created, that wrote to it), so the catalog shows when the data was last written and by
    which run. Each carries the figures of that asset's observation beside `writes_this_run`, so the
    asset page's latest metadata shows the numbers."""
    observed = {o.asset_key: dict(o.metadata) for o in observations}
    return [
        AssetMaterialization(
            WRITTEN_ASSETS[collection],
            description=f"written by this {job} run",
            metadata={**observed.get(WRITTEN_ASSETS[collection], {}), "writes_this_run": MetadataValue.int(n)},
        )
        for collection, n in sorted(written.items())
        if n
    ]
