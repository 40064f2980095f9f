"""Claims that say the opposite of their passage are unsupported; faithful paraphrases of the same passages are not.

The first six opposites are the ones a hostile-input probe found passing (#36, defect 9); the rest are written to
be like them: an antonym (also as a phrase: "turned on", "opt-in"), or the negated half of "A but not B" or
"A, not B" stated, or the two halves exchanged.
"""

from __future__ import annotations

import json

import pytest

from agent.cli import main
from fakes import HashEmbedder
from test_alignment import check  # the verdict on `claim [1]` with [1] = the passage


# (passage, the claim that says its opposite)
OPPOSITES = [
    # found by the probe
    pytest.param("Automatic updates are turned off unless AUTO_UPDATE=1 is set.",
                 "Automatic updates are turned on unless AUTO_UPDATE=1 is set.", id="off -> on"),
    pytest.param("A configuration file is mandatory for every deployment.",
                 "A configuration file is optional for every deployment.", id="mandatory -> optional"),
    pytest.param("The server rejects connections from unknown hosts.",
                 "The server accepts connections from unknown hosts.", id="rejects -> accepts"),
    pytest.param("The installer runs on Linux but not Windows.",
                 "The installer runs on Windows but not Linux.", id="A but not B -> B but not A"),
    pytest.param("The backup job runs every hour, not every minute.",
                 "The backup job runs every minute.", id="A, not B -> B"),
    pytest.param("Telemetry collection is opt-in.", "Telemetry collection is opt-out.", id="opt-in -> opt-out"),
    # like them
    pytest.param("Uploads larger than the limit are rejected.", "Uploads larger than the limit are accepted.",
                 id="rejected -> accepted"),
    pytest.param("Encryption of the archive is turned on by default.",
                 "Encryption of the archive is turned off by default.", id="turned on -> turned off"),
    pytest.param("The screen reader mode is switched off at startup.",
                 "The screen reader mode is switched on at startup.", id="switched off -> switched on"),
    pytest.param("Pattern matching in the search box is case-sensitive.",
                 "Pattern matching in the search box is case-insensitive.", id="sensitive -> insensitive"),
    pytest.param("Connections from remote hosts are refused.", "Connections from remote hosts are allowed.",
                 id="refused -> allowed"),
    pytest.param("Comments are allowed in the config file.", "Comments are forbidden in the config file.",
                 id="allowed -> forbidden"),
    pytest.param("Write access to the socket is denied to other users.",
                 "Write access to the socket is granted to other users.", id="denied -> granted"),
    pytest.param("The search index is rebuilt automatically when a file changes.",
                 "The search index is rebuilt manually when a file changes.", id="automatically -> manually"),
    pytest.param("The timeout value must be a positive number.", "The timeout value must be a negative number.",
                 id="positive -> negative"),
    pytest.param("Leading whitespace in each line is preserved.", "Leading whitespace in each line is stripped.",
                 id="preserved -> stripped"),
    pytest.param("The lock is released when the process exits.", "The lock is acquired when the process exits.",
                 id="released -> acquired"),
    pytest.param("Requests to the backend are processed in parallel.",
                 "Requests to the backend are processed sequentially.", id="parallel -> sequentially"),
    pytest.param("Downloads are paused when the battery is low.", "Downloads are resumed when the battery is low.",
                 id="paused -> resumed"),
    pytest.param("The sort used by the command is stable.", "The sort used by the command is unstable.",
                 id="stable -> unstable"),
    pytest.param("Sizes in the report are given in bytes, not kilobytes.",
                 "Sizes in the report are given in kilobytes.", id="bytes, not kilobytes -> kilobytes"),
    pytest.param("The cache lives in memory, not on disk.", "The cache lives on disk.", id="memory, not disk -> disk"),
    pytest.param("Timestamps in the log are shown in UTC, never in local time.",
                 "Timestamps in the log are shown in local time.", id="never in local time -> in local time"),
    pytest.param("Deleted messages are moved to the trash, not removed permanently.",
                 "Deleted messages are removed permanently.", id="moved, not removed -> removed"),
    pytest.param("The tool supports IPv4 but not IPv6.", "The tool supports IPv6 but not IPv4.",
                 id="IPv4 but not IPv6 -> the other way round"),
    pytest.param("The plugin works with Firefox but not with Chrome.", "The plugin works with Chrome.",
                 id="A but not with B -> B"),
]  # fmt: skip

# (passage, a faithful paraphrase of it): near the opposites above, and supported
PARAPHRASES = [
    pytest.param("Automatic updates are turned off unless AUTO_UPDATE=1 is set.",
                 "Unless AUTO_UPDATE=1 is set, automatic updates are turned off.", id="off, condition first"),
    pytest.param("A configuration file is mandatory for every deployment.",
                 "For every deployment, a configuration file is mandatory.", id="mandatory, reordered"),
    pytest.param("The server rejects connections from unknown hosts.",
                 "Connections from unknown hosts are rejected by the server.", id="rejects, passive"),
    pytest.param("The installer runs on Linux but not Windows.", "The installer runs on Linux, not on Windows.",
                 id="but not -> , not on"),
    pytest.param("The installer runs on Linux but not Windows.", "The installer runs on Linux.",
                 id="the stated half of but not"),
    pytest.param("The backup job runs every hour, not every minute.", "The backup job runs every hour.",
                 id="the stated half of , not"),
    pytest.param("Telemetry collection is opt-in.", "Collection of telemetry is opt-in.", id="opt-in, reworded"),
    pytest.param("Encryption of the archive is turned on by default.",
                 "By default, encryption of the archive is turned on.", id="turned on, reordered"),
    pytest.param("The tool supports IPv4 but not IPv6.", "The tool does not support IPv6.",
                 id="the negated half of but not"),
    pytest.param("Timestamps in the log are shown in UTC, never in local time.",
                 "Timestamps in the log are never shown in local time.", id="the negated half of , never"),
    pytest.param("The cache lives in memory, not on disk.", "The cache lives in memory.", id="memory, not disk"),
    pytest.param("The tool supports IPv4 but not IPv6.", "IPv6 is not supported by the tool.",
                 id="the negated half of but not, passive"),
]  # fmt: skip


@pytest.mark.parametrize("embedder", [None, HashEmbedder()], ids=["lexical", "hash"])
@pytest.mark.parametrize("passage, claim", OPPOSITES)
def test_a_claim_that_says_the_opposite_of_its_passage_is_unsupported(passage, claim, embedder):
    verdict = check(passage, claim, embedder)
    assert verdict.verdict == "unsupported", (verdict.support, verdict.reason)
    assert verdict.reason


@pytest.mark.parametrize("embedder", [None, HashEmbedder()], ids=["lexical", "hash"])
@pytest.mark.parametrize("passage, claim", PARAPHRASES)
def test_a_faithful_paraphrase_of_the_same_passage_stays_supported(passage, claim, embedder):
    verdict = check(passage, claim, embedder)
    assert verdict.verdict == "supported", (verdict.support, verdict.reason)


@pytest.mark.parametrize("embedder", [None, HashEmbedder()], ids=["lexical", "hash"])
@pytest.mark.parametrize("passage, claim", [
    ("Uploads larger than the limit are rejected.", "Uploads larger than the limit are not accepted."),
    ("Hooks are disabled in safe mode.", "Hooks are not enabled in safe mode."),
    ("Automatic updates are turned off unless AUTO_UPDATE=1 is set.",
     "Automatic updates are not turned on unless AUTO_UPDATE=1 is set."),
])  # fmt: skip
def test_an_antonym_under_a_negation_is_no_contradiction(passage, claim, embedder):
    # "not accepted" says what "rejected" says; its word is not the passage's, so it need not be `supported`.
    verdict = check(passage, claim, embedder)
    assert verdict.verdict != "unsupported", verdict.reason


@pytest.mark.parametrize("passage, claim", OPPOSITES)
def test_the_passage_of_each_opposite_supports_itself(passage, claim):
    # The control: the passage copied passes, so only the opposite is what the rules reject.
    assert check(passage, passage).verdict == "supported"


@pytest.mark.real
@pytest.mark.parametrize("passage, claim", PARAPHRASES)
def test_with_minilm_a_faithful_paraphrase_stays_supported(passage, claim, real_embedder):
    verdict = check(passage, claim, real_embedder)
    assert verdict.verdict == "supported", (verdict.support, verdict.reason)


@pytest.mark.real
@pytest.mark.parametrize("passage, claim", OPPOSITES[:6])
def test_with_minilm_the_probes_opposites_are_unsupported(passage, claim, real_embedder):
    assert check(passage, claim, real_embedder).verdict == "unsupported"


@pytest.mark.real
def test_smoldocs_check_calls_the_probes_opposites_unsupported(tmp_path, capsys):
    docs = tmp_path / "d"
    docs.mkdir()
    passages = [p.values[0] for p in OPPOSITES[:6]]
    (docs / "a.md").write_text("# Settings\n\n" + "\n\n".join(passages) + "\n", encoding="utf-8")
    (docs / "b.md").write_text("# Widget\n\nThe widget is blue and round.\n", encoding="utf-8")
    index = ["--docs", str(docs)]
    assert main(["pack", "automatic updates configuration server installer backup telemetry", "-k", "1", *index]) == 0
    (tmp_path / "shown.txt").write_text(capsys.readouterr().out, encoding="utf-8")
    claims = [p.values[1] for p in OPPOSITES[:6]]
    (tmp_path / "answer.md").write_text("\n\n".join(f"{c[:-1]} [1]." for c in claims) + "\n", encoding="utf-8")
    code = main(["check", str(tmp_path / "answer.md"), "--shown", str(tmp_path / "shown.txt"), "--json", *index])
    out, err = capsys.readouterr()
    assert code == 0, err
    verdicts = {c["text"]: c["verdict"] for c in json.loads(out)["claims"]}
    assert len(verdicts) == 6 and set(verdicts.values()) == {"unsupported"}, verdicts
