"""Site hosts: only globally routable targets unless ALLOW_PRIVATE_SITE_HOSTS is set."""

import ipaddress

import pytest
from django.core.exceptions import ValidationError

from portal.measure.hosts import check_site_host


@pytest.fixture
def strict(settings):
    settings.ALLOW_PRIVATE_SITE_HOSTS = False
    return settings


@pytest.mark.parametrize(
    "host, kind",
    [
        ("127.0.0.1", "a loopback address"),
        ("127.8.9.10", "a loopback address"),
        ("localhost", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("168.63.129.16", "a cloud metadata address"),
        ("169.254.10.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("10.1.2.3", "a private address"),
        ("172.16.0.9", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd00:ec2::254", "a private address"),
        ("100.64.0.1", "a reserved or non-routable address"),
        ("0.0.0.0", "a private address"),
        ("224.0.0.1", "a reserved or non-routable address"),
    ],
)
def test_site_host_refused_names_the_address_and_the_setting(strict, host, kind):
    with pytest.raises(ValidationError) as raised:
        check_site_host(host)
    message = raised.value.messages[0]
    assert f"{kind}: sites must be publicly routable hosts" in message
    assert "ALLOW_PRIVATE_SITE_HOSTS=1" in message


@pytest.mark.parametrize("host", ["8.8.8.8", "2001:4860:4860::8888", "134.79.1.1"])
def test_site_host_public_address_allowed(strict, host):
    check_site_host(host)


def test_site_host_unresolvable_name_says_so(strict):
    with pytest.raises(ValidationError) as raised:
        check_site_host("no-such-host.invalid")
    assert raised.value.code == "unresolvable"
    assert "'no-such-host.invalid' cannot be resolved" in raised.value.messages[0]


def test_site_host_private_allowed_when_the_setting_says_so(settings):
    settings.ALLOW_PRIVATE_SITE_HOSTS = True
    check_site_host("127.0.0.1")
    check_site_host("10.1.2.3")


@pytest.mark.parametrize(
    "host, kind",
    [
        # Finding 8: IPv6 forms that embed a private IPv4 address are judged by it.
        ("::127.0.0.1", "an IPv6 form of 127.0.0.1, a loopback address"),
        ("64:ff9b::a9fe:a9fe", "an IPv6 form of 169.254.169.254, a cloud metadata address"),
        ("64:ff9b::a00:1", "an IPv6 form of 10.0.0.1, a private address"),
        ("64:ff9b:1:7f00:0:100::", "an IPv6 form of 127.0.0.1, a loopback address"),
        ("2002:a9fe:a9fe::1", "an IPv6 form of 169.254.169.254, a cloud metadata address"),
        ("2002:c0a8:101::1", "an IPv6 form of 192.168.1.1, a private address"),
        ("2001:0:a00:1::1", "an IPv6 form of 10.0.0.1, a private address"),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "an IPv6 form of 127.0.0.1, a loopback address"),
        ("192.0.0.8", "a reserved or non-routable address"),
        ("192.0.0.170", "a private address"),
    ],
)
def test_site_host_embedding_a_private_address_refused(strict, host, kind):
    with pytest.raises(ValidationError) as raised:
        check_site_host(host)
    assert (
        f"resolves to {ipaddress.ip_address(host)}, {kind}: sites must be publicly routable"
        in (raised.value.messages[0])
    )


@pytest.mark.parametrize("host", ["64:ff9b::808:808", "2002:864:101::1", "::ffff:8.8.8.8"])
def test_site_host_embedding_a_public_address_allowed(strict, host):
    check_site_host(host)
