"""Who may reach the review desk, and which form posts it accepts: the pure rules behind the web app."""

from __future__ import annotations

import pytest

from bot.review.auth import (
    BindRefused,
    bearer_token,
    check_bind,
    csrf_token,
    csrf_valid,
    is_loopback,
    local_path,
    login_cookie,
    login_cookie_valid,
    new_key,
    same_origin,
    token_matches,
)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True), ("localhost", True),
     ("LOCALHOST", True), ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), ("review.example.com", False)],
)
def test_only_loopback_addresses_count_as_this_machine(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_public_bind_address_needs_a_token() -> None:
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "s3cret")
    for token in (None, ""):
        with pytest.raises(BindRefused) as caught:
            check_bind("0.0.0.0", token)
        assert str(caught.value) == ("refusing to serve the review desk on 0.0.0.0: it is not a loopback address, "
                                     "so REVIEW_TOKEN must be set (or bind 127.0.0.1)")


@pytest.mark.parametrize(
    ("header", "expected"),
    [("Bearer abc", "abc"), ("bearer  abc ", "abc"), ("Basic abc", None), ("Bearer", None), ("", None), (None, None)],
)
def test_bearer_header_is_read_strictly(header: str | None, expected: str | None) -> None:
    assert bearer_token(header) == expected


def test_tokens_cookies_and_csrf_tokens_only_match_their_own() -> None:
    key, other_key = new_key(), new_key()
    assert token_matches("s3cret", "s3cret") and not token_matches("s3cre", "s3cret") and not token_matches(None, "x")
    cookie = login_cookie(key, "s3cret")
    assert "s3cret" not in cookie
    assert login_cookie_valid(key, "s3cret", cookie)
    assert not login_cookie_valid(other_key, "s3cret", cookie)  # a restart logs everyone out
    assert not login_cookie_valid(key, "rotated", cookie) and not login_cookie_valid(key, "s3cret", None)
    token = csrf_token(key, "session-a")
    assert csrf_valid(key, "session-a", token)
    assert not csrf_valid(key, "session-b", token) and not csrf_valid(key, "session-a", None)
    assert not csrf_valid(key, None, token) and not csrf_valid(key, "session-a", "")


@pytest.mark.parametrize(
    ("origin", "referer", "accepted"),
    [
        ("http://127.0.0.1:8765", None, True),
        (None, "http://127.0.0.1:8765/exchanges/x", True),
        (None, None, True),  # curl and scripts: held to the CSRF or bearer token instead
        ("https://evil.example", None, False),
        ("https://evil.example", "http://127.0.0.1:8765/", False),  # Origin wins
        (None, "https://evil.example/page", False),
        ("null", None, False),
        ("http://127.0.0.1:9999", None, False),
    ],
)
def test_form_posts_from_another_site_are_refused(origin: str | None, referer: str | None, accepted: bool) -> None:
    assert same_origin("127.0.0.1:8765", origin, referer) is accepted


@pytest.mark.parametrize(
    ("target", "expected"),
    [("/exchanges/x?y=1", "/exchanges/x?y=1"), (None, "/"), ("", "/"), ("//evil.example/", "/"),
     ("https://evil.example/", "/"), ("/\\evil.example", "/"), ("exchanges", "/")],
)
def test_after_sign_in_the_redirect_stays_on_this_site(target: str | None, expected: str) -> None:
    assert local_path(target) == expected
