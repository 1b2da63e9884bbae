"""Who counts as a lead when flags are recorded: LEAD_USER_IDS, a Slack user group, or everyone."""

from __future__ import annotations

import aiohttp

from bot.slack.deps import Leads, SlackOptions, build_web_client
from tests.slack.harness import bot_settings
from tests.standins import SlackStandIn


async def test_members_of_the_lead_user_group_are_leads_and_the_group_is_read_once(slack: SlackStandIn) -> None:
    slack.add_usergroup("S0LEADS", ["U0ANNA", "U0BORIS"])
    settings = bot_settings(slack, leads="U0CARLA").model_copy(update={"lead_usergroup_id": "S0LEADS"})
    async with aiohttp.ClientSession() as session:
        leads = Leads(SlackOptions.from_settings(settings), build_web_client(settings, session))
        verdicts = [await leads.is_lead(user) for user in ("U0ANNA", "U0CARLA", "U0DAVE", "U0BORIS")]

    assert verdicts == [True, True, False, True]
    assert len(slack.calls_to("usergroups.users.list")) == 1


async def test_without_lead_settings_everyones_flag_counts(slack: SlackStandIn) -> None:
    settings = bot_settings(slack, leads="")
    async with aiohttp.ClientSession() as session:
        leads = Leads(SlackOptions.from_settings(settings), build_web_client(settings, session))

        assert await leads.is_lead("U0ANYONE")
    assert slack.calls_to("usergroups.users.list") == []


async def test_when_slack_cannot_list_the_group_its_members_count_as_non_leads_for_now(slack: SlackStandIn) -> None:
    settings = bot_settings(slack, leads="").model_copy(update={"lead_usergroup_id": "S0MISSING"})
    async with aiohttp.ClientSession() as session:
        leads = Leads(SlackOptions.from_settings(settings), build_web_client(settings, session))

        assert not await leads.is_lead("U0ANNA")
