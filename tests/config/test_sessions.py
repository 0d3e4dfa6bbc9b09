"""How long a sign-in lasts: a working day at most, over when the browser closes."""

from django.contrib.auth import get_user_model

from tests.support import run_python

SHOW_SESSION = (
    "from django.conf import settings; print(settings.SESSION_COOKIE_AGE, "
    "settings.SESSION_EXPIRE_AT_BROWSER_CLOSE)"
)


def test_a_sign_in_is_a_browser_session_that_ends_after_eight_hours(client, db):
    get_user_model().objects.create_user("ana", password="correct-horse-battery")

    client.post("/login/", {"username": "ana", "password": "correct-horse-battery"})
    cookie = client.cookies["sessionid"]

    assert (cookie["max-age"], cookie["expires"]) == ("", "")
    assert (
        client.session.get_expiry_age() == 8 * 3600 and client.session.get_expire_at_browser_close()
    )


def test_the_lifetime_is_set_from_the_environment(tmp_path):
    result = run_python(
        "-c",
        SHOW_SESSION,
        var_dir=tmp_path,
        DJANGO_SETTINGS_MODULE="config.settings",
        SESSION_HOURS="0.5",
        SESSION_EXPIRE_AT_BROWSER_CLOSE="0",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1800", "False"]
