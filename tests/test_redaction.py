"""models.redaction: the one place URLs and driver messages lose their credentials before they are printed."""

from models.redaction import redact_url, scrub


def test_every_url_in_a_text_loses_its_user_part_and_secret_parameters():
    text = ("cannot reach http://alice:hunter2@127.0.0.1:9/v1?api_key=K1&x=1 nor "
            "postgresql://bob:s3cret@db.example/docs?sslmode=require&PASSWORD=p2 (twice)")
    out = redact_url(text)
    assert out == ("cannot reach http://***@127.0.0.1:9/v1?api_key=***&x=1 nor "
                   "postgresql://***@db.example/docs?sslmode=require&PASSWORD=*** (twice)")


def test_a_url_without_credentials_and_plain_text_are_unchanged():
    for text in ("http://127.0.0.1:8080/v1", "postgresql:///docs?host=/tmp", "no url here: user@host", ""):
        assert redact_url(text) == text


def test_scrub_takes_the_urls_secrets_out_of_a_driver_message_and_keeps_its_first_line():
    url = "postgresql://reader:reader-secret@127.0.0.1:5432/db?sslpassword=k3y"
    message = ('\n  connection failed: password "reader-secret" rejected for\nreader at '
               "postgresql://reader:reader-secret@127.0.0.1:5432/db; key k3y\nsecond line")
    assert scrub(message, url) == 'connection failed: password "***" rejected for'
    assert scrub("FATAL: role at postgresql://reader:zzz@h/db", url) == "FATAL: role at postgresql://***@h/db"
