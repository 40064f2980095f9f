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


def test_a_libpq_key_value_password_is_redacted_quoted_or_not():
    text = "cannot use host=db.example port=5432 password=X1secret user=u and sslpassword = 'two words\\' here' dbname=d"
    out = redact_url(text)
    assert "X1secret" not in out and "two words" not in out and "here'" not in out, out
    assert out == "cannot use host=db.example port=5432 password=*** user=u and sslpassword = *** dbname=d"


def test_a_url_missing_its_colon_or_with_a_space_in_its_password_loses_the_password():
    for text, secret in [("--store 'postgresql//u:pwSECRET@h/d' is not", "pwSECRET"),
                         ("at postgresql://u:pa ssSECRET@127.0.0.1:1/d (refused)", "ssSECRET"),
                         ("at postgresql://u:p@ss@SECRET@127.0.0.1:1/d", "SECRET"),
                         ("plain u:pwSECRET@h/d", "pwSECRET")]:
        out = redact_url(text)
        assert secret not in out and "***@" in out, out


def test_scrub_takes_out_a_key_value_password_and_a_percent_encoded_one():
    assert scrub('FATAL: password "X 1" for host=h password=\'X 1\'', "host=h password='X 1'") == \
        'FATAL: password "***" for host=h password=***'
    assert scrub("auth failed for p@ss", "postgresql://u:p%40ss@h/d") == "auth failed for ***"


def test_a_store_that_is_no_url_is_one_line_without_its_password(capsys):
    from agent.cli import main

    for store in ("host=127.0.0.1 port=1 dbname=d password=PWSECRET", "postgresql//u:PWSECRET@127.0.0.1:1/d",
                  "postgresql://u:pw PWSECRET@127.0.0.1:1/d"):
        rc = main(["search", "anything", "--store", store])
        err = capsys.readouterr().err
        assert rc == 2 and "PWSECRET" not in err and len(err.strip().splitlines()) == 1, err
