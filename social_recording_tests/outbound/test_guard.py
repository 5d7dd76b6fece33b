"""The redirect guard's rule, target by target (the clients' tests prove nothing is sent)."""

from __future__ import annotations

import pytest

from social_recording.outbound.guard import UnresolvedHost, UnsafeTarget, check_target
from social_recording_tests.outbound._net import Dns


@pytest.mark.parametrize(
    ("url", "phrase"),
    [
        ("http://127.0.0.1/", "loopback address 127.0.0.1"),
        ("http://[::1]/", "loopback address ::1"),
        ("http://169.254.169.254/", "address 169.254.169.254"),
        ("http://10.1.2.3/", "private address 10.1.2.3"),
        ("http://192.168.0.1/", "private address 192.168.0.1"),
        ("http://[::ffff:127.0.0.1]/", "loopback address 127.0.0.1 (embedded in ::ffff:127.0.0.1)"),
        ("http://[2002:a00:1::1]/", "private address 10.0.0.1 (embedded in 2002:a00:1::1)"),  # 6to4
        ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", "embedded in"),  # Teredo -> 10.0.0.1
        ("http://[64:ff9b::7f00:1]/", "loopback address 127.0.0.1 (embedded in"),  # NAT64
        ("http://0x7f.1/", "loopback address 127.0.0.1"),
        ("http://localhost/", "local host name 'localhost'"),
        ("http://api.localhost./", "local host name 'api.localhost.'"),
        ("file:///etc/passwd", "scheme 'file'"),
        ("gopher://example.com/", "scheme 'gopher'"),
        ("ftp://example.com/", "scheme 'ftp'"),
        ("javascript:alert(1)", "scheme 'javascript'"),
        ("https:///nohost", "without a host"),
        ("https://example.com:99999/", "unparseable"),
    ],
)
def test_refused_targets_name_the_reason(url: str, phrase: str) -> None:
    dns = Dns()
    with pytest.raises(UnsafeTarget) as info:
        check_target(url, dns)
    assert phrase in info.value.reason
    assert dns.asked == []  # decided without asking DNS


def test_names_are_resolved_and_every_address_must_be_public() -> None:
    dns = Dns({"mixed.example": ["93.184.216.34", "10.0.0.7"], "ok.example": ["93.184.216.34", "2606:4700::1"]})
    check_target("https://ok.example/a?b=c", dns)
    with pytest.raises(UnsafeTarget) as info:
        check_target("https://mixed.example/", dns)
    assert info.value.reason == "host 'mixed.example' (it resolves to private address 10.0.0.7)"
    check_target("https://mixed.example/", None)  # no resolver: a name is not checked
    check_target("http://93.184.216.34:8080/", dns)


def test_a_resolver_failure_is_not_a_refusal() -> None:
    def broken(host: str) -> list[str]:
        raise OSError("no DNS")

    with pytest.raises(UnresolvedHost, match="cannot resolve host 'x.example': OSError"):
        check_target("https://x.example/", broken)
    with pytest.raises(UnresolvedHost, match="no address"):
        check_target("https://x.example/", Dns({"x.example": []}))
    with pytest.raises(UnsafeTarget, match="unparseable address"):
        check_target("https://x.example/", Dns({"x.example": ["junk"]}))
