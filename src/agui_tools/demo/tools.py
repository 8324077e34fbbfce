"""The demo application's frontend tools — small, typed, honest about side effects."""

from __future__ import annotations

import itertools

from ..transport._session import Session

_orders = itertools.count(1042)


def register(session: Session) -> None:
    """Register the demo's five frontend tools on ``session``."""

    @session.tool
    def get_location() -> str:
        """The user's shipping city (read-only)."""
        return "Lisbon, Portugal"

    @session.tool
    def get_preferences(fields: list[str]) -> dict[str, str]:
        """The user's stored preferences for the given fields (read-only)."""
        known = {"shipping": "standard", "currency": "EUR"}
        return {f: known.get(f, "unknown") for f in fields}

    @session.tool
    def show_order_summary(
        item: str, qty: int, unit_price: float, total: float, ship_to: str
    ) -> str:
        """Show the order summary card in the application (read-only)."""
        return f"summary shown: {qty} x {item} = {total:.2f} EUR to {ship_to}"

    @session.tool(side_effects=True)
    def place_order(sku: str, qty: int) -> str:
        """Place an order. Charges the user's card."""
        return f"order #{next(_orders)}: {qty} x {sku}"

    @session.tool(side_effects=True)
    def email_receipt(to: str) -> str:
        """Email the receipt to an address."""
        return f"receipt sent to {to}"
