"""Fake RDAP: rdap.org redirects `GET /domain/<name>` to the registry's server, which answers the
domain record (registration date in `events`), or 404 when a `not_found` web target of the scenario
lives on that domain (an unregistered domain has no record)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import httpx

from social_recording.domain.urls import parse_canonical
from social_recording.platforms.web.generator import registrable_domain
from social_recording.sandbox import fake_api as api

RDAP_HOST = "rdap.org"
_RDAP_JSON = "application/rdap+json"

# ------------------------------------------------------------------------------------------ rdap

RDAP_REGISTRIES: dict[str, str] = {
    "com": "https://rdap.verisign.com/com/v1",
    "net": "https://rdap.verisign.com/net/v1",
    "org": "https://rdap.publicinterestregistry.org/rdap",
}
RDAP_DEFAULT_REGISTRY = "https://rdap.identitydigital.services/rdap"


def rdap_registry_url(domain: str) -> str:
    tld = domain.rsplit(".", 1)[-1].lower()
    return f"{RDAP_REGISTRIES.get(tld, RDAP_DEFAULT_REGISTRY)}/domain/{domain}"


def rdap_domain(domain: str) -> dict[str, Any]:
    det = api.Det("rdap", domain.lower())
    registered = det.date("registered", datetime(2015, 1, 1, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC))
    changed = det.date("changed", registered, datetime(2026, 10, 20, tzinfo=UTC))
    expires = registered.replace(year=registered.year + det.num("years", 1, 5))
    registrar = det.pick("registrar", (("NameCheap, Inc.", "1068"), ("GoDaddy.com, LLC", "146"),
                                       ("Porkbun LLC", "1861"), ("Cloudflare, Inc.", "1910")))
    return {
        "objectClassName": "domain",
        "handle": f"{det.digits('handle', 10)}_DOMAIN_{domain.rsplit('.', 1)[-1].upper()}-VRSN",
        "ldhName": domain.upper(),
        "links": [{"value": rdap_registry_url(domain), "rel": "self", "href": rdap_registry_url(domain),
                   "type": "application/rdap+json"}],
        "status": ["client transfer prohibited"],
        "entities": [{
            "objectClassName": "entity",
            "handle": registrar[1],
            "roles": ["registrar"],
            "publicIds": [{"type": "IANA Registrar ID", "identifier": registrar[1]}],
            "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", registrar[0]]]],
        }],
        "events": [
            {"eventAction": "registration", "eventDate": api.iso_s(registered)},
            {"eventAction": "expiration", "eventDate": api.iso_s(expires)},
            {"eventAction": "last changed", "eventDate": api.iso_s(changed)},
            {"eventAction": "last update of RDAP database", "eventDate": "2026-10-31T00:00:00Z"},
        ],
        "secureDNS": {"delegationSigned": False},
        "nameservers": [
            {"objectClassName": "nameserver", "ldhName": f"{det.pick('ns1', ('ADA', 'BEN', 'CODY'))}.NS.CLOUDFLARE.COM"},
            {"objectClassName": "nameserver", "ldhName": f"{det.pick('ns2', ('MAX', 'NORA', 'OWEN'))}.NS.CLOUDFLARE.COM"},
        ],
        "rdapConformance": ["rdap_level_0", "icann_rdap_technical_implementation_guide_0",
                            "icann_rdap_response_profile_0"],
        "notices": [{"title": "Terms of Use", "description": ["Service subject to Terms of Use."],
                     "links": [{"href": "https://www.verisign.com/domain-names/registration-data-access-protocol/terms-service/index.xhtml",
                                "type": "text/html"}]}],
    }


def rdap_not_found(domain: str) -> dict[str, Any]:
    return {"errorCode": 404, "title": "Not Found", "description": [f"The domain {domain} was not found."],
            "rdapConformance": ["rdap_level_0"]}


RDAP_REGISTRY_HOSTS = frozenset(httpx.URL(u).host for u in (*RDAP_REGISTRIES.values(), RDAP_DEFAULT_REGISTRY))


class RdapProvider(api.Provider):
    service = "rdap"
    hosts = RDAP_REGISTRY_HOSTS | {RDAP_HOST}

    def __init__(self, scenario: api.Scenario) -> None:
        self._missing: set[str] = set()
        for url, spec in scenario.targets.items():
            if spec.outcome.kind is api.OutcomeKind.NOT_FOUND and api.target_subjects(url)[:1] == [f"scan:{url}"]:
                host = parse_canonical(url).host.lower()
                self._missing.update({host, registrable_domain(host) or host})


    def describe(self, request: httpx.Request) -> api.Call:
        path = request.url.path.rstrip("/")
        match = re.search(r"/domain/([^/]+)$", path)
        if match is None:
            return api.Call(self.service, f"path:{path}")
        domain = unquote(match.group(1)).lower().rstrip(".")
        return api.Call(self.service, f"rdap:{domain}", args={"domain": domain})

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        domain = call.args.get("domain")
        if domain is None:
            return api.json_reply(404, rdap_not_found(request.url.path.rstrip("/")), content_type=_RDAP_JSON)
        if (request.url.host or "").lower() == RDAP_HOST:
            return api.Reply(302, b"", {"location": rdap_registry_url(domain)})
        if domain in self._missing:
            return api.json_reply(404, rdap_not_found(domain), content_type=_RDAP_JSON)
        return api.json_reply(200, rdap_domain(domain), content_type=_RDAP_JSON)
