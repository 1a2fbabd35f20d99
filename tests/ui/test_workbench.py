"""The workbench in headless Chromium against `make run`'s demo (``conftest.py``): each view does what a person
needs, passes axe-core without a serious or critical violation, and leaves its screenshot in docs/workbench/."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.ui.conftest import Demo, accessibility_problems, open_view, screenshot, sign_in

pytestmark = [pytest.mark.ui, pytest.mark.slow]
CONVERSATION = "skyward-1"


def open_conversation(tab: Any) -> None:
    open_view(tab, "Conversations")
    tab.get_by_role("list", name="Conversations").get_by_role("button", name=CONVERSATION).click()
    tab.get_by_role("heading", level=2, name=CONVERSATION).wait_for()


def assemble(tab: Any, message: str, *, bot: str = "Captain Maren Voss", compare: str | None = None) -> None:
    open_view(tab, "Context")
    tab.get_by_label("Bot about to speak").select_option(label=bot)
    if compare:
        tab.get_by_label("Compare with bot").select_option(label=compare)
    tab.get_by_label("Message being answered").fill(message)
    tab.get_by_role("button", name="Assemble context").click()
    tab.get_by_role("region", name=f"Context for {bot}").wait_for()


def test_the_conversation_shows_who_was_present_and_its_summaries(page: Any) -> None:
    open_conversation(page)
    messages = page.get_by_role("list", name="Messages")
    first = messages.locator("li.msg").first
    assert "Welcome aboard the Kestrel" in first.inner_text()
    assert "present: Captain Maren Voss, Odo" in first.inner_text()
    assert messages.locator("li.msg").count() == 12
    page.get_by_role("complementary").first.wait_for()  # a summary span over the first messages
    assert "visible to" in page.get_by_role("complementary").first.inner_text()
    assert accessibility_problems(page) == []
    screenshot(page, "conversations")


def test_the_context_shows_the_lore_entry_and_why_it_fired(page: Any) -> None:
    open_conversation(page)
    assemble(page, "Captain, do you remember my grandmother's compass?")
    fired = page.get_by_role("list", name="Lore entries that fired")
    assert "key: compass" in fired.inner_text()
    sections = page.get_by_role("table", name=re.compile("^Sections")).inner_text()
    for part in ("system", "history", "tokens"):
        assert part in sections
    assert accessibility_problems(page) == []
    page.get_by_role("heading", name="Context for Captain Maren Voss").scroll_into_view_if_needed()
    screenshot(page, "context")


def post(demo: Demo, key: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{demo.gateway}/v1/{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as failed:
        return failed.code, json.loads(failed.read())


def test_another_tenants_key_sees_nothing_of_the_demo(demo: Demo, browser: Any) -> None:
    """Through the app's own API (the gateway routes the workbench calls) and through the app itself."""
    other = {"tenant_id": "t-elsewhere"}
    status, listed = post(demo, demo.other_key, "conversation/list", other)
    assert (status, listed["conversations"], listed["total"]) == (200, [], 0)
    ask = {**other, "user_id": "demo-user", "conversation_id": CONVERSATION}
    assert post(demo, demo.other_key, "conversation/timeline", ask)[0] == 404
    assert post(demo, demo.other_key, "memory/list", {**other, "user_id": "demo-user"})[1]["items"] == []
    assert post(demo, demo.other_key, "lore/list", other)[1]["books"] == []
    # Naming the demo tenant with the other key is refused before anything is read.
    status, refused = post(demo, demo.other_key, "conversation/list", {"tenant_id": "demo"})
    assert (status, refused["error"]["code"]) == (403, "forbidden")

    context = browser.new_context()
    tab = context.new_page()
    try:
        sign_in(tab, demo.url, demo.other_key)
        assert tab.get_by_test_id("tenant").inner_text() == "t-elsewhere"
        open_view(tab, "Conversations")
        tab.get_by_text("No conversations for this tenant yet.").wait_for()
    finally:
        context.close()


def test_a_fact_added_by_hand_reaches_that_bots_context_only(page: Any) -> None:
    fact = "Odo keeps a spare brass gyroscope hidden in the chart room."
    open_conversation(page)
    open_view(page, "Knowledge")
    page.get_by_label("Character").select_option(label="Odo")
    page.get_by_label("New fact").fill(fact)
    page.get_by_label("Tags", exact=True).fill("gyroscope, secret")
    page.get_by_role("button", name="Add fact").click()
    facts = page.get_by_role("table")
    facts.get_by_text(fact).wait_for()
    assert "added by hand" in facts.inner_text()
    assert accessibility_problems(page) == []
    screenshot(page, "knowledge")

    assemble(page, "Where is the gyroscope?", bot="Odo", compare="Captain Maren Voss")
    odo = page.get_by_role("region", name="Context for Odo")
    maren = page.get_by_role("region", name="Context for Captain Maren Voss")
    maren.get_by_role("table").first.wait_for()
    assert fact in (odo.text_content() or ""), "the knowledge section of Odo's context holds the fact"
    assert fact not in (maren.text_content() or ""), "Maren's context has nothing of it"
    assert accessibility_problems(page) == []
    page.get_by_role("heading", name="Context for Odo").scroll_into_view_if_needed()
    screenshot(page, "context-side-by-side")

    open_view(page, "Knowledge")
    page.get_by_label("Character").select_option(label="Odo")
    row = page.get_by_role("row").filter(has_text=fact)
    row.get_by_role("button", name="History").click()
    trail = page.get_by_role("list", name="Audit trail")
    trail.get_by_text("added by hand").wait_for()
    assert accessibility_problems(page) == []
    page.get_by_role("button", name="Close").click()
