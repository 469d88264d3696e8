"""A form an MCP server asks for, as the web chat's message: its words and fields in the
payload the page renders (``templates/_form.html``; answered through ``bots.web.forms``)."""

from __future__ import annotations

from typing import Any

from bots.chat.forms import asks, how, safe_link
from bots.chat.intentions import Form
from bots.chat.ports import Rendered


def form_message(f: Form) -> Rendered:
    """The form as the page shows it (``kind`` form: ``_form.html``)."""
    payload: dict[str, Any] = {
        "kind": "form",
        "run": f.run_id,
        "form": f.form_id,
        "how": how(f),
        "fields": [field.model_dump(mode="json") for field in f.fields],
        "url": f.url or "",
        "link": safe_link(f.url) or "",
    }
    return Rendered(asks(f), payload)
