"""Layer 6: the bridge: ATIP metadata compiled to OpenAI, Gemini and Anthropic tools (only what policy
admits, bridge/surface.py), tool calls parsed, results filtered and returned (RFC §8)."""

from atip_trust.bridge.argv import tool_call_to_argv
from atip_trust.bridge.compile import (
    OPENAI_DESCRIPTION_MAX_LENGTH,
    SAFETY_FLAGS,
    compile_tools,
    to_anthropic,
    to_gemini,
    to_openai,
)
from atip_trust.bridge.lifecycle import ToolCall, ToolCallParseError, handle_tool_result, parse_tool_call
from atip_trust.bridge.loop import CallOutcome, run_tool_call
from atip_trust.bridge.safety import (
    DEFAULT_REDACT_PATTERNS,
    ResultFilter,
    create_result_filter,
    generate_safety_prompt,
)
from atip_trust.bridge.surface import Surface, SurfaceTool, build_surface, compile_surface
from atip_trust.bridge.validator import Validator, create_validator

__all__ = [
    "DEFAULT_REDACT_PATTERNS",
    "OPENAI_DESCRIPTION_MAX_LENGTH",
    "SAFETY_FLAGS",
    "CallOutcome",
    "ResultFilter",
    "Surface",
    "SurfaceTool",
    "ToolCall",
    "ToolCallParseError",
    "Validator",
    "build_surface",
    "compile_surface",
    "compile_tools",
    "create_result_filter",
    "create_validator",
    "generate_safety_prompt",
    "handle_tool_result",
    "parse_tool_call",
    "run_tool_call",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "tool_call_to_argv",
]
