"""See agents/__init__.py: a stand-in for agents.function_schema.function_schema, run once per tool
when the env is built."""
import inspect
from dataclasses import dataclass
from typing import Any

from pydantic import create_model


@dataclass
class FuncSchema:
    name: str
    description: str | None
    params_json_schema: dict[str, Any]
    strict_json_schema: bool = True


def function_schema(func, **_kwargs) -> FuncSchema:
    signature = inspect.signature(func)
    fields = {
        name: (
            param.annotation if param.annotation is not inspect.Parameter.empty else Any,
            ... if param.default is inspect.Parameter.empty else param.default,
        )
        for name, param in signature.parameters.items()
    }
    schema = create_model(f"{func.__name__}_args", **fields).model_json_schema()
    schema["additionalProperties"] = False
    doc = inspect.getdoc(func) or ""
    return FuncSchema(func.__name__, doc.split("\n\n")[0] or None, schema)
