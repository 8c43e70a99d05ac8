"""The store policy written for this project: "Juniper Lane", an online clothing store (docs/envs/abcd.md, "Data").

This module is the source of the original pack's ``guidelines.json``, ``kb.json``, ``ontology.json``,
``subflows.json`` and ``rules.json`` and of ``data/rules_abcd.json`` (the same rule kinds with the
values of the real ABCD guidelines, in the project's words, used only by the scripted roles on the
upstream pack). ``build_original`` serialises it; nothing here is read at runtime.

Every sentence is the project's own. Each rule's ``limit`` sentence is also written into the
guidelines entry of its subflow, so the LLM support agent and the B4 hard-limit check see it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ABCD_RULES",
    "FLOW_DESCRIPTIONS",
    "KB",
    "ORIGINAL_RULES",
    "ORIGINAL_SUBFLOWS",
    "STORE_NAME",
    "build_guidelines",
    "build_ontology",
]

STORE_NAME = "Juniper Lane"

FLOW_DESCRIPTIONS: dict[str, str] = {
    "Product Defect": "returns and refunds",
    "Order Issue": "changes to an order, its fees and its shipping speed",
    "Account Access": "signing in, passwords and two-step verification",
    "Troubleshoot Site": "problems with the website itself",
    "Manage Account": "changes to a customer's profile details",
    "Purchase Dispute": "promotion codes and billing disagreements",
    "Shipping Issue": "missing packages and shipping charges",
    "Subscription Inquiry": "the Juniper Plus subscription: its bills, extensions and disputes",
}

ORIGINAL_SUBFLOWS: dict[str, dict[str, str]] = {
    "return_size": {"flow": "product_defect", "title": "Return Due to Size"},
    "return_color": {"flow": "product_defect", "title": "Return Due to Color"},
    "return_stain": {"flow": "product_defect", "title": "Return Due to Stain"},
    "refund_initiate": {"flow": "product_defect", "title": "Initiate Refund"},
    "manage_upgrade": {"flow": "order_issue", "title": "Manage Upgrade"},
    "manage_downgrade": {"flow": "order_issue", "title": "Manage Downgrade"},
    "manage_cancel": {"flow": "order_issue", "title": "Manage Cancel"},
    "status_mystery_fee": {"flow": "order_issue", "title": "Status Mystery Fee"},
    "promo_code_out_of_date": {"flow": "purchase_dispute", "title": "Promo Code Out of Date"},
    "mistimed_billing_already_returned": {"flow": "purchase_dispute", "title": "Mistimed Billing Already Returned"},
    "cost": {"flow": "shipping_issue", "title": "Shipping Cost"},
    "missing": {"flow": "shipping_issue", "title": "Missing Item"},
    "manage_extension": {"flow": "subscription_inquiry", "title": "Manage Extension"},
    "manage_dispute_bill": {"flow": "subscription_inquiry", "title": "Manage Dispute Bill"},
    "recover_password": {"flow": "account_access", "title": "Recover Password"},
    "reset_2fa": {"flow": "account_access", "title": "Reset Two-Factor Auth"},
    "manage_change_address": {"flow": "manage_account", "title": "Manage Change Address"},
    "slow_speed": {"flow": "troubleshoot_site", "title": "Website Too Slow"},
}
"""The 18 subflows of the original pack (subflow → flow, title)."""

_RETURN = ("pull-up-account", "validate-purchase", "membership", "enter-details", "update-order")
_ORDER = ("pull-up-account", "verify-identity", "shipping-status", "membership", "update-order")
KB: dict[str, tuple[str, ...]] = {
    "return_size": _RETURN,
    "return_color": _RETURN,
    "return_stain": _RETURN,
    "refund_initiate": ("pull-up-account", "validate-purchase", "record-reason", "enter-details", "offer-refund"),
    "manage_upgrade": _ORDER,
    "manage_downgrade": _ORDER,
    "manage_cancel": ("pull-up-account", "verify-identity", "shipping-status", "membership", "offer-refund"),
    "status_mystery_fee": ("pull-up-account", "verify-identity", "ask-the-oracle", "membership", "update-order"),
    "promo_code_out_of_date": ("pull-up-account", "ask-the-oracle", "membership", "promo-code"),
    "mistimed_billing_already_returned": (
        "pull-up-account",
        "validate-purchase",
        "record-reason",
        "membership",
        "update-order",
    ),
    "cost": ("pull-up-account", "validate-purchase", "shipping-status", "update-order", "offer-refund"),
    "missing": ("pull-up-account", "validate-purchase", "record-reason", "update-order", "make-purchase"),
    "manage_extension": ("pull-up-account", "verify-identity", "membership", "update-account", "enter-details"),
    "manage_dispute_bill": ("pull-up-account", "verify-identity", "membership", "ask-the-oracle", "offer-refund"),
    "recover_password": ("pull-up-account", "enter-details", "make-password"),
    "reset_2fa": ("pull-up-account", "enter-details", "send-link"),
    "manage_change_address": ("pull-up-account", "record-reason", "verify-identity", "update-account"),
    "slow_speed": ("try-again", "log-out-in", "instructions", "notify-team"),
}

_ACTIONS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    # action id: (ontology group, button, text, subtext)
    "pull-up-account": (
        "interaction",
        "Pull up Account",
        "Ask for the customer's full name and open their file with [Pull up Account].",
        (),
    ),
    "validate-purchase": (
        "kb_query",
        "Validate Purchase",
        "Make sure the order belongs to this customer with [Validate Purchase]. Ask for these one at a time:",
        ("Username", "Email address", "Order ID"),
    ),
    "verify-identity": (
        "kb_query",
        "Verify Identity",
        "Confirm who you are talking to with [Verify Identity]. Ask for these one at a time:",
        ("Full name", "Account ID", "ZIP code"),
    ),
    "membership": (
        "faq_policy",
        "Membership Privileges",
        "Ask for the customer's membership level (guest, bronze, silver or gold) and enter it in "
        "[Membership Privileges]. The level on file is the one that counts.",
        (),
    ),
    "enter-details": (
        "interaction",
        "Enter Details",
        "Ask for the customer's full address, street first, then city, state and ZIP, and save it with "
        "[Enter Details].",
        (),
    ),
    "shipping-status": (
        "interaction",
        "Shipping Status",
        "Ask for the order ID, read the order's shipping status in the order system (order received, in "
        "transit, out for delivery or delivered) and record it with [Shipping Status].",
        (),
    ),
    "update-order": ("interaction", "Update Order", "Apply the change to the order with [Update Order].", ()),
    "offer-refund": ("interaction", "Offer Refund", "Issue the money back with [Offer Refund].", ()),
    "record-reason": (
        "interaction",
        "Record Reason",
        "Ask which payment method paid for the order and note the reason for the request with [Record Reason].",
        (),
    ),
    "ask-the-oracle": (
        "kb_query",
        "Ask the Oracle",
        "Run the system check with [Ask the Oracle]; it answers yes or no, and its answer is final.",
        (),
    ),
    "promo-code": ("interaction", "Promo Code", "Create a fresh code with [Promo Code] and share it.", ()),
    "update-account": (
        "interaction",
        "Update Account",
        "Ask for the account's username and save the change with [Update Account].",
        (),
    ),
    "make-password": (
        "interaction",
        "Make Password",
        "Ask for the username and issue a temporary password with [Make Password].",
        (),
    ),
    "send-link": (
        "interaction",
        "Send Link",
        "Ask for the email address on the account and send it a reset link with [Send Link].",
        (),
    ),
    "make-purchase": ("interaction", "Make Purchase", "Place the replacement order with [Make Purchase].", ()),
    "try-again": ("faq_policy", "Try Again", "Ask the customer to reload the page and try once more.", ()),
    "log-out-in": ("faq_policy", "Log Out and In", "Ask the customer to sign out and sign back in.", ()),
    "instructions": (
        "faq_policy",
        "Instructions",
        "Walk the customer through clearing the browser cache and closing other tabs.",
        (),
    ),
    "notify-team": (
        "interaction",
        "Notify Internal Team",
        "If nothing helped, report the problem to the website team with [Notify Internal Team].",
        (),
    ),
}

_INSTRUCTIONS: dict[str, tuple[str, str]] = {
    "return_size": (
        "The customer wants to send back an item that does not fit.",
        "Close by asking whether they need anything else.",
    ),
    "return_color": (
        "The customer wants to send back an item whose colour is not what they expected.",
        "Close by asking whether they need anything else.",
    ),
    "return_stain": (
        "The customer wants to send back an item that arrived marked or stained.",
        "Close by asking whether they need anything else.",
    ),
    "refund_initiate": (
        "The customer wants their money back for an order.",
        "Close by asking whether they need anything else.",
    ),
    "manage_upgrade": (
        "The customer wants their order delivered faster, by overnight shipping.",
        "If the upgrade is not possible, say so plainly and offer nothing in its place.",
    ),
    "manage_downgrade": (
        "The customer wants slower, cheaper shipping for their order.",
        "Tell the customer exactly what was done before closing.",
    ),
    "manage_cancel": (
        "The customer placed the same order twice by mistake and wants one of them gone.",
        "Tell the customer exactly what was done before closing.",
    ),
    "status_mystery_fee": (
        "The customer sees a fee on their order that they do not understand.",
        "If the fee stays, say so plainly and close politely.",
    ),
    "promo_code_out_of_date": (
        "The customer's promotion code was turned down as expired.",
        "Tell the customer exactly what was done before closing.",
    ),
    "mistimed_billing_already_returned": (
        "The customer sent an item back but the refund for it has not shown up.",
        "Tell the customer exactly what was done before closing.",
    ),
    "cost": (
        "The customer finds the shipping charge on their order too high.",
        "Close by asking whether they need anything else.",
    ),
    "missing": (
        "The customer's package says delivered, but the item never arrived.",
        "Close by asking whether they need anything else.",
    ),
    "manage_extension": (
        "The customer cannot pay their Juniper Plus bill on time and asks for more time.",
        "Close by asking whether they need anything else.",
    ),
    "manage_dispute_bill": (
        "The customer believes their Juniper Plus bill charged them twice.",
        "Close by asking whether they need anything else.",
    ),
    "recover_password": (
        "The customer cannot remember their password.",
        "Close by asking whether they need anything else.",
    ),
    "reset_2fa": (
        "The customer lost access to their two-step verification and needs it reset.",
        "Close by asking whether they need anything else.",
    ),
    "manage_change_address": (
        "The customer has moved and wants the address on their profile changed.",
        "Close by asking whether they need anything else.",
    ),
    "slow_speed": (
        "The website loads very slowly for the customer. Give one fix at a time and ask whether it helped.",
        "If none of the fixes helped, tell the customer the website team has been told.",
    ),
}

_CHOICE_NOTES: dict[tuple[str, str], str] = {
    ("return_size", "update-order"): "Ask how the item will come back: by mail, in store, or at a drop off center.",
    ("return_color", "update-order"): "Ask how the item will come back: by mail, in store, or at a drop off center.",
    ("return_stain", "update-order"): "Ask how the item will come back: by mail, in store, or at a drop off center.",
    ("refund_initiate", "offer-refund"): "Ask where the money should go: a gift card, added value on the account, "
    "a paper check, or back to the credit card.",
}

# ---------------------------------------------------------------- rules

_DONE = " Let me know if there's anything else."
_RETURN_RULE_COMMON: dict[str, Any] = {
    "kind": "return_window",
    "facts": ["member_level", "purchase_date", "today", "packaging", "has_receipt"],
    "customer_facts": ["has_receipt"],
    "decision_action": "membership",
    "refusal": "I'm sorry, but a {member_level} member can return an item only within {window} days of purchase. "
    "This order is from {purchase_date}, {days_since} days ago, and without a receipt or original packaging "
    "that qualifies, the return is not possible.",
    "outcomes": {"return": "All set: your return has been processed, and you chose to send it back {method}." + _DONE},
    "alternative": None,
}


def _return_rule(windows: dict[str, int | None], limit: str) -> dict[str, Any]:
    return {
        **_RETURN_RULE_COMMON,
        "params": {
            "windows": windows,
            "receipt_levels": ["guest", "bronze", "silver", "gold"],
            "packaging_levels": ["silver", "bronze"],
        },
        "limit": limit,
    }


_ORIGINAL_RETURN_LIMIT = (
    "A return is accepted only if the item was bought within the member's return window (guests 30 days, "
    "bronze 60 days, silver 150 days, gold members without limit), or the customer still has the receipt, or a "
    "silver or bronze member still has the original packaging; otherwise the return cannot be accepted."
)

ORIGINAL_RULES: dict[str, dict[str, Any]] = {
    **{
        subflow: _return_rule({"gold": None, "silver": 150, "bronze": 60, "guest": 30}, _ORIGINAL_RETURN_LIMIT)
        for subflow in ("return_size", "return_color", "return_stain")
    },
    "manage_upgrade": {
        "kind": "before_shipping",
        "params": {
            "eligible_statuses": ["order received"],
            "fees": {"gold": 0, "silver": 15, "bronze": 15, "guest": 15},
        },
        "facts": ["shipping_status", "member_level"],
        "customer_facts": [],
        "decision_action": "shipping-status",
        "refusal": "I'm sorry, but your order is already {shipping_status}, and the shipping speed cannot be changed "
        "once an order has left our warehouse.",
        "limit": "Overnight shipping can be added only if the order has not shipped yet (status order received); it "
        "costs $15, and gold members pay nothing. Once an order has shipped, its shipping speed cannot be changed.",
        "outcomes": {
            "upgrade": "All set: your order has been upgraded to overnight shipping, with the ${fee} fee charged to "
            "the card on file." + _DONE,
            "upgrade_free": "All set: your order has been upgraded to overnight shipping, free of charge for a gold "
            "member." + _DONE,
        },
        "alternative": None,
    },
    "manage_downgrade": {
        "kind": "shipped_credit",
        "params": {"eligible_statuses": ["order received"], "credit": 6, "credit_levels": ["bronze", "silver", "gold"]},
        "facts": ["shipping_status", "member_level"],
        "customer_facts": [],
        "decision_action": "membership",
        "refusal": "I'm sorry, but your order is already {shipping_status}, so its shipping cannot be changed any "
        "more, and the $6 shipping credit is only for bronze, silver and gold members.",
        "limit": "Shipping can be switched to the slower, cheaper option only if the order has not shipped yet; once "
        "it has shipped, bronze, silver and gold members get a $6 shipping credit instead, and guests cannot get "
        "anything.",
        "outcomes": {
            "downgrade": "All set: your order has been switched to standard shipping, and the difference will be "
            "refunded." + _DONE,
            "credit": "All set: the order had already shipped, so a $6 shipping credit has been issued to your "
            "account instead." + _DONE,
        },
        "alternative": None,
    },
    "manage_cancel": {
        "kind": "duplicate_order",
        "params": {"eligible_statuses": ["order received"], "refund_levels": ["gold", "silver"]},
        "facts": ["shipping_status", "member_level"],
        "customer_facts": [],
        "decision_action": "membership",
        "refusal": "I'm sorry, but the duplicate order is already {shipping_status}, and an immediate refund on a "
        "shipped order is only possible for gold and silver members.",
        "limit": "A duplicate order can be cancelled only if it has not shipped yet; once it has shipped, gold and "
        "silver members are refunded at once, and other customers cannot be refunded until they send the item back "
        "after it arrives.",
        "outcomes": {
            "cancel": "All set: the duplicate order has been cancelled and its charge will be refunded." + _DONE,
            "refund": "All set: the duplicate had already shipped, but as a {member_level} member your refund has "
            "been issued right away." + _DONE,
        },
        "alternative": {
            "offer": "What I can do is open a return for it, so you get your money back once it arrives and you send "
            "it back. Would you like that?",
            "outcome": "All set: a return has been opened for the duplicate, so once it arrives you can send it back "
            "for a full refund." + _DONE,
        },
    },
    "status_mystery_fee": {
        "kind": "oracle_or_level",
        "params": {"levels": ["gold", "silver"]},
        "facts": ["oracle", "member_level"],
        "customer_facts": [],
        "decision_action": "membership",
        "refusal": "I'm sorry, but our system shows the fee on this order is correct, and I'm unable to remove a valid "
        "fee for a {member_level} member.",
        "limit": "A fee can be removed only if the system check shows it was charged by mistake, or as a courtesy for "
        "gold and silver members; otherwise the fee cannot be removed.",
        "outcomes": {
            "confirmed": "All set: our system shows the fee was charged by mistake, and it has been removed from your "
            "order." + _DONE,
            "courtesy": "All set: the fee is valid, but as a {member_level} member it has been removed from your order "
            "as a courtesy." + _DONE,
        },
        "alternative": None,
    },
    "promo_code_out_of_date": {
        "kind": "oracle_or_level",
        "params": {"levels": ["gold", "silver", "bronze"]},
        "facts": ["oracle", "member_level"],
        "customer_facts": [],
        "decision_action": "membership",
        "refusal": "I'm sorry, but our system shows the code has expired, and replacement codes are only for bronze, "
        "silver and gold members, so I can't issue a new one.",
        "limit": "An expired promotion code is replaced with a new 15% code only if the system check shows it should "
        "still have worked, or for bronze, silver and gold members; guests cannot get a replacement.",
        "outcomes": {
            "confirmed": "All set: our system shows the code should still have worked, and a fresh 15% code has been "
            "issued to your account." + _DONE,
            "courtesy": "All set: the code had expired, but as a {member_level} member you get a new 15% code, which "
            "has been issued to your account." + _DONE,
        },
        "alternative": None,
    },
    "mistimed_billing_already_returned": {
        "kind": "wait_days",
        "params": {"min_days": 10, "levels": ["gold"]},
        "facts": ["member_level", "days_waiting"],
        "customer_facts": ["days_waiting"],
        "decision_action": "membership",
        "refusal": "I'm sorry, but the refund for a returned item can only be issued once {min_days} days have passed "
        "since the return, and it has been {days_waiting} days. Please check back after that.",
        "limit": "A charge for an item that was already sent back can be refunded only if at least 10 days have "
        "passed since the return, or right away for gold members; before that it cannot be refunded.",
        "outcomes": {"act": "All set: the charge for the returned item has been refunded." + _DONE},
        "alternative": None,
    },
    "cost": {
        "kind": "shipping_fee",
        "params": {"waiver_statuses": ["order received", "in transit"], "refund": 6},
        "facts": ["shipping_status"],
        "customer_facts": [],
        "decision_action": "shipping-status",
        "refusal": "I'm sorry, but the shipping fee can only be waived while an order is received or in transit, and "
        "yours is already {shipping_status}, so waiving it is not possible.",
        "limit": "A shipping fee can be waived only if the order is still at order received or in transit; once it is "
        "out for delivery or delivered the fee cannot be waived, and a $6 refund is offered instead.",
        "outcomes": {"waive": "All set: the shipping fee on your order has been waived." + _DONE},
        "alternative": {
            "offer": "What I can do instead is refund $6 of the shipping cost. Would you like that?",
            "outcome": "All set: $6 of the shipping cost has been refunded." + _DONE,
        },
    },
    "missing": {
        "kind": "wait_days",
        "params": {"min_days": 7, "levels": []},
        "facts": ["days_waiting"],
        "customer_facts": ["days_waiting"],
        "decision_action": "record-reason",
        "refusal": "I'm sorry, but a missing item can only be sent again after {min_days} days of waiting, and it has "
        "been {days_waiting} days. It may still turn up, so please check back after that.",
        "limit": "A missing item can be sent again only if the customer has waited at least 7 days since the "
        "delivery date; before that it cannot be sent again.",
        "outcomes": {"act": "All set: a replacement for the missing item has been ordered and is on its way." + _DONE},
        "alternative": None,
    },
    "manage_extension": {
        "kind": "extension",
        "params": {"always_levels": ["gold"], "limited": {"silver": 2}},
        "facts": ["member_level", "days_late"],
        "customer_facts": ["days_late"],
        "decision_action": "membership",
        "refusal": "I'm sorry, but a payment extension is only possible for gold members, or for silver members no "
        "more than 2 days late, so I can't extend the payment for your {member_level} subscription.",
        "limit": "A subscription payment can be extended only for gold members, or for silver members no more than 2 "
        "days late; other customers cannot get an extension and are offered a call back from a manager instead.",
        "outcomes": {"extend": "All set: your subscription payment has been extended by one week." + _DONE},
        "alternative": {
            "offer": "I can ask a manager to call you back about it. Would you like that?",
            "outcome": "All set: a manager will call you back about your subscription payment within one business "
            "day." + _DONE,
            "needs": "phone",
        },
    },
    "manage_dispute_bill": {
        "kind": "dispute",
        "params": {"always_levels": ["gold"], "limited": {"silver": 15}},
        "facts": ["member_level", "disputed_amount", "oracle"],
        "customer_facts": ["disputed_amount"],
        "decision_action": "ask-the-oracle",
        "refusal": "I'm sorry, but I'm unable to refund this charge: gold members are always refunded, silver members "
        "only for amounts under $15, and everyone else only when our system shows the charge was a mistake.",
        "limit": "A disputed subscription charge is refunded only if the customer is a gold member, a silver member "
        "disputing less than $15, or the system check shows the charge was a mistake; otherwise it cannot be "
        "refunded.",
        "outcomes": {"refund": "All set: the disputed charge has been refunded to your account." + _DONE},
        "alternative": None,
    },
}
"""The original pack's hard limits (rules.json)."""

_ABCD_RETURN_LIMIT = (
    "Gold members can always return; silver members only within the last six months (180 days), bronze members "
    "within 90 days and guests within 30 days, unless they have the receipt or, for silver and bronze, the "
    "original packaging; otherwise the return cannot be accepted."
)

ABCD_RULES: dict[str, dict[str, Any]] = {
    **{
        subflow: _return_rule({"gold": None, "silver": 180, "bronze": 90, "guest": 30}, _ABCD_RETURN_LIMIT)
        for subflow in ("return_size", "return_color", "return_stain")
    },
    "manage_upgrade": {
        **ORIGINAL_RULES["manage_upgrade"],
        "params": {
            "eligible_statuses": ["order received"],
            "fees": {"gold": 0, "silver": 20, "bronze": 20, "guest": 20},
        },
        "limit": "Overnight shipping can be added only before the order ships; it costs $20 except for gold members.",
    },
    "manage_downgrade": {
        **ORIGINAL_RULES["manage_downgrade"],
        "refusal": "I'm sorry, but your order is already {shipping_status}, so its shipping cannot be changed any "
        "more, and a shipping credit is only for bronze, silver and gold members.",
        "outcomes": {
            "downgrade": ORIGINAL_RULES["manage_downgrade"]["outcomes"]["downgrade"],
            "credit": "All set: the order had already shipped, so a shipping credit has been issued to your account "
            "instead." + _DONE,
        },
        "limit": "Once an order has shipped its shipping cannot be changed; bronze, silver and gold members then get "
        "a credit, guests nothing.",
    },
    "manage_cancel": {
        **ORIGINAL_RULES["manage_cancel"],
        "params": {"eligible_statuses": ["order received"], "refund_levels": ["gold", "silver", "bronze"]},
        "refusal": "I'm sorry, but the duplicate order is already {shipping_status}, and an immediate refund on a "
        "shipped order is only possible for bronze, silver and gold members.",
        "limit": "A shipped duplicate is refunded at once for bronze, silver and gold members; guests must wait for it "
        "to arrive and send it back.",
    },
    "status_mystery_fee": {
        **ORIGINAL_RULES["status_mystery_fee"],
        "limit": "A fee is removed only if the system check shows a store mistake, or for gold and silver members.",
    },
    **{
        subflow: {
            **ORIGINAL_RULES["promo_code_out_of_date"],
            "outcomes": {
                "confirmed": "All set: our system shows the code should have worked, and a new code has been issued to "
                "your account." + _DONE,
                "courtesy": "All set: as a {member_level} member you get a new code, which has been issued to your "
                "account." + _DONE,
            },
            "limit": "A new code is issued only if the system check sides with the customer, or for bronze, silver and "
            "gold members.",
        }
        for subflow in ("promo_code_invalid", "promo_code_out_of_date")
    },
    "mistimed_billing_already_returned": {
        **ORIGINAL_RULES["mistimed_billing_already_returned"],
        "params": {"min_days": 7, "levels": ["gold"]},
        "limit": "A refund for a returned item is given only after 7 days of waiting, or at once for gold members.",
    },
    "missing": {
        **ORIGINAL_RULES["missing"],
        "limit": "A missing item is sent again only after a week (7 days) of waiting.",
    },
    "cost": {
        **ORIGINAL_RULES["cost"],
        "params": {"waiver_statuses": ["order received", "in transit"], "refund": 8},
        "limit": "The shipping fee is waived only while the order is received or in transit; later, $8 is refunded.",
        "alternative": {
            "offer": "What I can do instead is refund $8 of the shipping cost. Would you like that?",
            "outcome": "All set: $8 of the shipping cost has been refunded." + _DONE,
        },
    },
    "manage_extension": {
        **ORIGINAL_RULES["manage_extension"],
        "params": {"always_levels": ["gold"], "limited": {"silver": 1}},
        "refusal": "I'm sorry, but a payment extension is only possible for gold members, or for silver members only "
        "1 day late, so I can't extend the payment for your {member_level} subscription.",
        "limit": "Gold members always get an extension, silver members only when 1 day late; others get a manager "
        "call back.",
    },
    "manage_dispute_bill": {
        **ORIGINAL_RULES["manage_dispute_bill"],
        "params": {"always_levels": ["gold"], "limited": {"silver": 10}},
        "refusal": "I'm sorry, but I'm unable to refund this charge: gold members are always refunded, silver members "
        "only for amounts under $10, and everyone else only when our system sides with them.",
        "limit": "Gold members are always refunded, silver members under $10, others only if the system check agrees.",
    },
}
"""The ABCD guideline values in the project's words, for the scripted roles on the upstream pack."""


def build_guidelines() -> dict[str, Any]:
    """The original pack's guidelines.json: flows by display name, subflows by title."""
    from mimesis_gym.envs.abcd.policy import FLOW_NAMES

    guidelines: dict[str, Any] = {}
    for flow_key, display in FLOW_NAMES.items():
        subflows: dict[str, Any] = {}
        for subflow, info in ORIGINAL_SUBFLOWS.items():
            if info["flow"] != flow_key:
                continue
            rule = ORIGINAL_RULES.get(subflow)
            actions = []
            for action in KB[subflow]:
                group, button, text, subtext = _ACTIONS[action]
                extra = list(subtext)
                note = _CHOICE_NOTES.get((subflow, action))
                if note:
                    extra.append(note)
                if rule is not None and rule["decision_action"] == action:
                    extra.append(rule["limit"])
                    extra.append(
                        "If the customer does not qualify, apologize and explain the limit; do not make an exception."
                    )
                    if rule.get("alternative"):
                        extra.append(f"What you may offer instead: {rule['alternative']['offer']}")
                actions.append({"type": group.replace("_", " "), "button": button, "text": text, "subtext": extra})
            opening, closing = _INSTRUCTIONS[subflow]
            subflows[info["title"]] = {"instructions": [opening, closing], "actions": actions}
        if subflows:
            guidelines[display] = {"description": FLOW_DESCRIPTIONS[display], "subflows": subflows}
    return guidelines


def build_ontology() -> dict[str, Any]:
    """The original pack's ontology.json: the flows, subflows, actions and value lists it uses."""
    from mimesis_gym.envs.abcd.scenarios import ACTION_FIELDS

    flows: dict[str, list[str]] = {}
    for subflow, info in ORIGINAL_SUBFLOWS.items():
        flows.setdefault(info["flow"], []).append(subflow)
    used = sorted({action for sequence in KB.values() for action in sequence})
    actions: dict[str, dict[str, list[str]]] = {"kb_query": {}, "interaction": {}, "faq_policy": {}}
    for action in used:
        group = _ACTIONS[action][0]
        actions[group][action] = list(ACTION_FIELDS.get(action, ()))
    return {
        "intents": {"flows": sorted(flows), "subflows": {flow: flows[flow] for flow in sorted(flows)}},
        "actions": actions,
        "values": {
            "enumerable": {
                "membership_level": ["guest", "bronze", "silver", "gold"],
                "payment_method": ["credit card", "debit card", "paypal"],
                "shipping_option": ["order received", "in transit", "out for delivery", "delivered"],
                "refund_target": ["gift card", "add value", "paper check", "credit card"],
                "return_method": ["by mail", "in store", "drop off center"],
            }
        },
    }
