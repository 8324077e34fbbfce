"""An agent server built ONLY with the official ``ag-ui-protocol`` package —
``ag_ui.core`` models and ``ag_ui.encoder.EventEncoder`` in a FastAPI
``StreamingResponse``, the shape of the official Python quickstart. Nothing of
agui-tools is used here: it is the peer our client is proven against.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ag_ui.core import Event, RunAgentInput
from ag_ui.encoder import EventEncoder
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from pydantic import TypeAdapter

from .scenarios import SCENARIOS, scenario_of

app = FastAPI(title="official-ag-ui-python-agent")
_events = TypeAdapter(Event)


@app.post("/agent")
async def agent(input_data: RunAgentInput, request: Request) -> StreamingResponse:
    encoder = EventEncoder(accept=request.headers.get("accept"))
    raw = input_data.model_dump(by_alias=True)
    wire_events = SCENARIOS[scenario_of(raw)](raw)

    async def stream() -> AsyncIterator[str]:
        for wire in wire_events:
            yield encoder.encode(_events.validate_python(wire))  # official models, official encoder

    return StreamingResponse(stream(), media_type=encoder.get_content_type())
