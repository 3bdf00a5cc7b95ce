"""GitHub's webhooks as deliveries: the signature check, and each recorded payload shape
(tests/producers/payloads/, in the shape of GitHub's "Webhook events and payloads") mapped
to its thread, author, kind and text, or skipped. No engine: see test_producer.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from agentsessions.errors import InvalidArgumentError
from agentsessions.producers import github
from agentsessions.producers.mapping import Delivery, Skip, Thread, kind_of
from agentsessions.producers.send import comment_event, issue_event

PAYLOADS = Path(__file__).parent / "payloads"


def recorded(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((PAYLOADS / f"{name}.json").read_text())
    return loaded


def delivery(name: str, bots: tuple[str, ...] = ()) -> Delivery:
    found = github.parse(name.split(".")[0], "d-1", recorded(name), bots=bots)
    assert isinstance(found, Delivery), found
    return found


def test_the_signature_matches_githubs_documented_test_values() -> None:
    # from GitHub's "Validating webhook deliveries": these inputs give this signature
    body, secret = b"Hello, World!", b"It's a Secret to Everybody"
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert github.sign(body, secret) == expected
    assert github.verify(body, secret, expected)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e18",  # one digit
        "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59",  # the legacy header's algorithm
        "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",  # no prefix
        "sha256=\u00e9",  # not even ASCII
    ],
)
def test_a_missing_or_forged_signature_never_verifies(header: str | None) -> None:
    assert not github.verify(b"Hello, World!", b"It's a Secret to Everybody", header)


def test_an_empty_secret_verifies_nothing_even_its_own_signature() -> None:
    assert not github.verify(b"{}", b"", github.sign(b"{}", b""))


def test_an_opened_issue_is_a_message_of_its_author_on_its_thread() -> None:
    found = delivery("issues.opened")
    assert found.thread == Thread(
        "github",
        "octo-org/hello-world#7",
        "https://github.com/octo-org/hello-world/issues/7",
        {"owner": "octo-org", "repo": "hello-world", "number": "7"},
    )
    assert (found.kind, found.author.login, found.author.user_id) == ("message", "mona", "583231")
    assert found.author.identity() == {
        "principal": "mona",
        "issuer": "https://github.com",
        "subject": "583231",
    }
    assert found.text.startswith("mona opened issue octo-org/hello-world#7: hello exits 1")
    assert found.text.endswith("exits 1 with no output.")
    assert found.delivery_id == "d-1"


def test_a_new_comment_is_a_message_of_the_commenter() -> None:
    found = delivery("issue_comment.created")
    assert (found.kind, found.author.login) == ("message", "hubot")
    assert found.text == (
        "hubot commented on octo-org/hello-world#7:\n\n"
        "Which Python version? I cannot reproduce it on 3.11."
    )
    assert found.details["comment_id"] == "492700400"
    assert found.details["url"].endswith("#issuecomment-492700400")
    parts = found.message()["parts"]
    assert parts[0] == {"text": {"text": found.text}}
    assert parts[1]["data"]["data"]["delivery"] == "d-1"


def test_an_edit_is_an_input_of_its_own_that_keeps_what_it_was() -> None:
    comment = delivery("issue_comment.edited")
    assert comment.kind == "edit" and comment.details["previous_body"] == "Which Python version?"
    assert kind_of({"message": comment.message()}) == "edit"
    assert kind_of({"message": {"role": "user", "parts": [{"text": {"text": "hi"}}]}}) == "message"
    assert "edited comment 492700400 by hubot" in comment.text and "It now reads" in comment.text
    issue = delivery("issues.edited")
    assert issue.kind == "edit" and issue.details["previous_body"] == "hello exits 1"


def test_a_deletion_is_an_input_saying_who_deleted_what() -> None:
    assert delivery("issue_comment.deleted").text == (
        "hubot deleted comment 492700400 by hubot on octo-org/hello-world#7."
    )
    deleted = delivery("issues.deleted")
    assert (deleted.kind, deleted.text) == ("delete", "hubot deleted issue octo-org/hello-world#7.")


def test_a_bot_account_and_the_configured_bot_login_are_never_turns() -> None:
    assert isinstance(
        github.parse("issue_comment", "d", recorded("issue_comment.created.bot")), Skip
    )
    mine = github.parse("issue_comment", "d", recorded("issue_comment.created"), bots=("HuBot",))
    assert mine == Skip("issue_comment created by the bot hubot")


@pytest.mark.parametrize(
    ("event", "name"), [("issues", "issues.labeled"), ("push", "issues.opened")]
)
def test_events_that_are_not_turns_are_skipped(event: str, name: str) -> None:
    assert isinstance(github.parse(event, "d", recorded(name)), Skip)


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.pop("repository"),
        lambda p: p["issue"].update(number="7"),
        lambda p: p["comment"]["user"].pop("login"),
        lambda p: p.update(action=None),
        lambda p: p["comment"].update(id=True),  # a bool is not an id
    ],
)
def test_a_malformed_payload_is_refused_with_what_is_wrong(damage: Any) -> None:
    payload = recorded("issue_comment.created")
    damage(payload)
    with pytest.raises(InvalidArgumentError, match="malformed issue_comment payload"):
        github.parse("issue_comment", "d", payload)


def test_an_issue_opened_without_a_body_is_its_title() -> None:
    payload = recorded("issues.opened")
    payload["issue"]["body"] = None
    found = github.parse("issues", "d", payload)
    assert isinstance(found, Delivery) and found.text.endswith("hello exits 1 on a fresh checkout")


def test_a_form_encoded_delivery_decodes_like_json() -> None:
    payload = recorded("issue_comment.created")
    form = urlencode({"payload": json.dumps(payload)}).encode()
    assert github.decode(form, "application/x-www-form-urlencoded") == payload
    with pytest.raises(InvalidArgumentError, match="not JSON"):
        github.decode(b"{", "application/json")
    with pytest.raises(InvalidArgumentError, match="not a JSON object"):
        github.decode(b"[]", "application/json")


def test_the_local_senders_payloads_parse_as_githubs_do() -> None:
    opened = github.parse("issues", "d", issue_event("a/b#3", author="al", title="T", body="B"))
    assert isinstance(opened, Delivery) and opened.thread.subject == "a/b#3"
    assert opened.text == "al opened issue a/b#3: T\n\nB"
    edited = github.parse(
        "issue_comment",
        "d",
        comment_event("a/b#3", author="al", body="new", action="edited", previous="old"),
    )
    assert isinstance(edited, Delivery) and edited.details["previous_body"] == "old"


def test_a_threads_key_is_injective() -> None:
    assert Thread("a:b", "c").key() != Thread("a", "b:c").key()
    assert Thread("github", "o/r#1").key() == '["github","o/r#1"]'
