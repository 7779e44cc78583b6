"""The OpenAI-compatible provider against a real HTTP server on loopback (tests/fake_openai.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from endstate_harness.agent.loop import AgentLoop
from endstate_harness.agent.messages import Message
from endstate_harness.agent.providers import OpenAIProvider, ProviderError
from endstate_harness.agent.session import SessionStore
from endstate_harness.agent.tools import DirectoryWorkspace, default_tools
from tests.fake_openai import FakeOpenAI


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def provider(server: FakeOpenAI, **kwargs) -> OpenAIProvider:
    kwargs.setdefault("backoff_s", 0.01)
    return OpenAIProvider("fake-model", base_url=server.base_url, **kwargs)


def ask(p: OpenAIProvider, text: str = "hi"):
    specs = [t.spec() for t in default_tools()]
    return p.complete([Message(role="user", content=text)], specs)


def test_tool_calls_usage_and_schemas_travel_over_http(server):
    server.reply(
        tool_calls=[("read", {"path": "a.txt"}), ("glob", {"pattern": "*"})], usage=(123, 45)
    )
    response = ask(provider(server))
    assert [c.name for c in response.message.tool_calls] == ["read", "glob"]
    assert response.message.tool_calls[0].arguments == {"path": "a.txt"}
    assert response.usage.input_tokens == 123 and response.usage.output_tokens == 45
    assert response.stop_reason == "tool_use" and not response.estimated
    sent = server.requests[0]
    assert sent["model"] == "fake-model"
    names = [t["function"]["name"] for t in sent["tools"]]
    assert names == ["read", "write", "edit", "glob", "grep", "bash"]
    assert sent["tools"][0]["function"]["parameters"]["required"] == ["path"]


def test_api_key_comes_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-from-env")
    server.reply("ok")
    ask(provider(server))
    assert server.headers[0]["authorization"] == "Bearer sk-test-from-env"


def test_no_key_and_no_base_url_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-x")


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retryable_statuses_are_retried_with_backoff(server, status):
    server.fail(status, retry_after_ms=5)
    server.fail(status)
    server.reply("recovered")
    slept: list[float] = []
    p = provider(server, sleep=slept.append)
    response = ask(p)
    assert response.message.content == "recovered"
    assert len(server.requests) == 3 and p.retries == 2
    assert slept[0] == pytest.approx(0.005)  # Retry-After honoured
    assert 0.005 <= slept[1] <= 0.02  # exponential backoff from 0.01, jittered


def test_retries_give_up_with_a_provider_error(server):
    for _ in range(3):
        server.fail(500)
    p = provider(server, max_retries=2, sleep=lambda s: None)
    with pytest.raises(ProviderError, match="gave up after 3 attempts"):
        ask(p)
    assert len(server.requests) == 3


def test_a_bad_request_is_not_retried(server):
    server.fail(400, message="unknown model")
    with pytest.raises(ProviderError, match="400"):
        ask(provider(server))
    assert len(server.requests) == 1


def test_a_slow_answer_times_out(server):
    server.reply("too late", delay_s=3.0)
    p = provider(server, timeout_s=0.4, max_retries=0)
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"(?i)time"):
        ask(p)
    assert time.monotonic() - started < 2.5


def test_missing_usage_is_estimated(server):
    server.reply("x" * 40, usage=None)
    response = ask(provider(server), text="y" * 400)
    assert response.estimated
    assert response.usage.output_tokens == 10 and response.usage.input_tokens == 100


def _loop(server, tmp_path: Path, **kwargs) -> AgentLoop:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "a.txt").write_text("alpha\n")
    store = SessionStore(tmp_path / "s.sqlite3")
    return AgentLoop(provider(server, **kwargs), DirectoryWorkspace(work), store.create())


def test_loop_round_trip_sends_tool_results_back(server, tmp_path):
    server.reply(tool_calls=[("read", {"path": "a.txt"}), ("bash", {"command": "rm -rf ."})])
    server.reply("all done", usage=(50, 7))
    result = _loop(server, tmp_path).start("read a.txt")
    assert result.stop_reason == "end_turn" and result.final_text == "all done"
    assert result.steps == 2 and result.usage.total_tokens == 10 + 5 + 50 + 7
    assert result.denied_calls == 1 and len(result.latencies_s) == 2
    second = server.requests[1]["messages"]
    tool_messages = [m for m in second if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "alpha\n"
    assert "permission denied" in tool_messages[1]["content"]
    assert second[2]["tool_calls"][0]["id"] == tool_messages[0]["tool_call_id"]
    assert (tmp_path / "work" / "a.txt").exists()


def test_malformed_arguments_are_answered_not_crashed(server, tmp_path):
    server.reply(tool_calls=[("read", "{not json")])
    server.reply("ok")
    result = _loop(server, tmp_path).start("go")
    assert result.stop_reason == "end_turn"
    tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "not a JSON object" in tool_message["content"]


def test_provider_failure_stops_the_loop_with_error(server, tmp_path):
    server.fail(401, message="bad key")
    result = _loop(server, tmp_path).start("go")
    assert result.stop_reason == "error"
    assert "401" in result.error and not result.timed_out


def test_length_finish_reason_is_max_tokens(server, tmp_path):
    server.reply("partial answer", finish_reason="length")
    result = _loop(server, tmp_path).start("go")
    assert result.stop_reason == "max_tokens"
