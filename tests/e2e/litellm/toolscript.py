"""A LiteLLM proxy hook that scripts the ``mock-tools`` model like a real tool-calling model:
it asks for ``append_line`` when the last message is the user's, and answers
``logged: <result>`` once the last message is the tool's result (LiteLLM's own
``mock_tool_calls`` would ask for the tool again and again). Loaded by the proxy from its
config (``litellm_settings.callbacks``); the project never imports it."""

from typing import Any

from litellm.integrations.custom_logger import CustomLogger  # type: ignore[import-not-found]


class ToolScript(CustomLogger):  # type: ignore[misc]
    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        messages = data.get("messages") or []
        if data.get("model") == "mock-tools" and messages and messages[-1].get("role") == "tool":
            data["mock_response"] = "logged: " + str(messages[-1].get("content", ""))
            data["mock_tool_calls"] = None
        return data


proxy_handler_instance = ToolScript()
