"""The airline domain's tools (docs/envs/tau.md, "Tools"): tau-bench's airline tools, re-implemented.

tau-bench's quirks that decide gold states are kept on purpose: fixed reservation ids
(``HATHAT``/``HATHAU``/``HATHAV``) and certificate ids, the cabin of a reservation not updated on a
flight change, the one-stop search's date arithmetic (fixed month, no zero padding) and its second
leg priced from the first leg's date, unrounded gift-card arithmetic, no status check on cancel.
"""

from __future__ import annotations

import json
from typing import Any

from mimesis_gym.envs.tau.db import EpisodeDB
from mimesis_gym.envs.tau.toolkit import COMMON_TOOLS, Param, Tool

__all__ = ["AIRLINE_TOOLS", "AIRPORTS", "CABINS", "CERTIFICATE_IDS", "RESERVATION_IDS"]

CABINS = ("basic_economy", "economy", "business")
RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
CREATED_AT = "2024-05-15T15:00:00"
AIRPORTS: dict[str, str] = {
    "SFO": "San Francisco",
    "JFK": "New York",
    "LAX": "Los Angeles",
    "ORD": "Chicago",
    "DFW": "Dallas",
    "DEN": "Denver",
    "SEA": "Seattle",
    "ATL": "Atlanta",
    "MIA": "Miami",
    "BOS": "Boston",
    "PHX": "Phoenix",
    "IAH": "Houston",
    "LAS": "Las Vegas",
    "MCO": "Orlando",
    "EWR": "Newark",
    "CLT": "Charlotte",
    "MSP": "Minneapolis",
    "DTW": "Detroit",
    "PHL": "Philadelphia",
    "LGA": "LaGuardia",
}
WRITE_REMINDER = "Only after the customer has explicitly confirmed the details (yes)."


def _dump(record: Any) -> str:
    return json.dumps(record)


# ---------------------------------------------------------------------------------------------
# Read-only tools


def get_user_details(db: EpisodeDB, user_id: str) -> str:
    user = db.get("users", user_id)
    return "Error: user not found" if user is None else _dump(user)


def get_reservation_details(db: EpisodeDB, reservation_id: str) -> str:
    reservation = db.get("reservations", reservation_id)
    return "Error: reservation not found" if reservation is None else _dump(reservation)


def list_all_airports(db: EpisodeDB) -> str:
    return _dump(AIRPORTS)


def _without_dates(flight: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in flight.items() if key != "dates"}


def search_direct_flight(db: EpisodeDB, origin: str, destination: str, date: str) -> str:
    results = []
    for _, flight in db.items("flights"):
        if flight["origin"] == origin and flight["destination"] == destination:
            day = flight["dates"].get(date)
            if day is not None and day["status"] == "available":
                result = _without_dates(flight)
                result.update(day)
                results.append(result)
    return _dump(results)


def search_onestop_flight(db: EpisodeDB, origin: str, destination: str, date: str) -> str:
    flights = [flight for _, flight in db.items("flights")]
    results = []
    for first in flights:
        if first["origin"] != origin:
            continue
        for second in flights:
            if second["destination"] != destination or first["destination"] != second["origin"]:
                continue
            if "+1" in first["scheduled_arrival_time_est"]:
                try:
                    next_date = "2024-05-" + str(int(date[-2:]) + 1)
                except ValueError:
                    return f"Error: invalid date {date!r}"
            else:
                next_date = date
            if first["scheduled_arrival_time_est"] > second["scheduled_departure_time_est"]:
                continue
            day1, day2 = first["dates"].get(date), second["dates"].get(next_date)
            if day1 is None or day2 is None or day1["status"] != "available" or day2["status"] != "available":
                continue
            leg1 = _without_dates(first)
            leg1.update(day1)
            leg1["date"] = date
            leg2 = _without_dates(second)
            leg2.update(second["dates"].get(date, {}))  # the first leg's date, as upstream
            leg2["date"] = next_date
            results.append([leg1, leg2])
    return _dump(results)


# ---------------------------------------------------------------------------------------------
# Writes


def _price_segment(db: EpisodeDB, flight: dict[str, Any], cabin: str, seats: int) -> str | None:
    """Check one new segment (number, date, available, seats) and set its price, origin and destination."""
    record = db.get("flights", flight["flight_number"])
    if record is None:
        return f"Error: flight {flight['flight_number']} not found"
    day = record["dates"].get(flight["date"])
    if day is None:
        return f"Error: flight {flight['flight_number']} not found on date {flight['date']}"
    if day["status"] != "available":
        return f"Error: flight {flight['flight_number']} not available on date {flight['date']}"
    if day["available_seats"][cabin] < seats:
        return f"Error: not enough seats on flight {flight['flight_number']}"
    flight["price"] = day["prices"][cabin]
    flight["origin"] = record["origin"]
    flight["destination"] = record["destination"]
    return None


def book_reservation(
    db: EpisodeDB,
    user_id: str,
    origin: str,
    destination: str,
    flight_type: str,
    cabin: str,
    flights: list[dict[str, Any]],
    passengers: list[dict[str, Any]],
    payment_methods: list[dict[str, Any]],
    total_baggages: int,
    nonfree_baggages: int,
    insurance: str,
) -> str:
    user = db.get("users", user_id)
    if user is None:
        return "Error: user not found"
    certificates = [
        p["payment_id"]
        for p in payment_methods
        if user["payment_methods"].get(p["payment_id"], {}).get("source") == "certificate"
    ]
    if len(certificates) != len(set(certificates)):
        return "Error: a certificate can be used only once"
    reservation_id = next((rid for rid in RESERVATION_IDS[:2] if not db.has("reservations", rid)), RESERVATION_IDS[2])
    reservation = {
        "reservation_id": reservation_id,
        "user_id": user_id,
        "origin": origin,
        "destination": destination,
        "flight_type": flight_type,
        "cabin": cabin,
        "flights": flights,  # already a private deep copy (toolkit.call_tool)
        "passengers": passengers,
        "payment_history": payment_methods,
        "created_at": CREATED_AT,
        "total_baggages": total_baggages,
        "nonfree_baggages": nonfree_baggages,
        "insurance": insurance,
    }
    total: int | float = 0
    for flight in flights:
        problem = _price_segment(db, flight, cabin, len(passengers))
        if problem:
            return problem
        total += flight["price"] * len(passengers)
    if insurance == "yes":
        total += 30 * len(passengers)
    total += 50 * nonfree_baggages
    for payment in payment_methods:
        method = user["payment_methods"].get(payment["payment_id"])
        if method is None:
            return f"Error: payment method {payment['payment_id']} not found"
        if method["source"] in ("gift_card", "certificate") and method["amount"] < payment["amount"]:
            return f"Error: not enough balance in payment method {payment['payment_id']}"
    paid = sum(payment["amount"] for payment in payment_methods)
    if paid != total:
        return f"Error: payment amount does not add up, total price is {total}, but paid {paid}"
    user = db.write("users", user_id)
    for payment in payment_methods:
        method = user["payment_methods"][payment["payment_id"]]
        if method["source"] == "gift_card":
            method["amount"] -= payment["amount"]
        elif method["source"] == "certificate":
            del user["payment_methods"][payment["payment_id"]]
    db.insert("reservations", reservation_id, reservation)
    user["reservations"].append(reservation_id)
    return _dump(reservation)


def cancel_reservation(db: EpisodeDB, reservation_id: str) -> str:
    if not db.has("reservations", reservation_id):
        return "Error: reservation not found"
    reservation = db.write("reservations", reservation_id)
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    return _dump(reservation)


def _owner_method(db: EpisodeDB, reservation: dict[str, Any], payment_id: str) -> tuple[Any, str | None]:
    user = db.get("users", reservation["user_id"])
    method = None if user is None else user["payment_methods"].get(payment_id)
    if method is None:
        return None, "Error: payment method not found"
    if method["source"] == "certificate":
        return None, "Error: a certificate cannot be used to update a reservation"
    return method, None


def update_reservation_baggages(
    db: EpisodeDB, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
) -> str:
    reservation = db.get("reservations", reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    method, problem = _owner_method(db, reservation, payment_id)
    if problem:
        return problem
    if method["source"] == "gift_card" and method["amount"] < price:
        return "Error: gift card balance is not enough"
    reservation = db.write("reservations", reservation_id)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    if method["source"] == "gift_card":
        db.write("users", reservation["user_id"])["payment_methods"][payment_id]["amount"] -= price
    if price != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": price})
    return _dump(reservation)


def update_reservation_flights(
    db: EpisodeDB, reservation_id: str, cabin: str, flights: list[dict[str, Any]], payment_id: str
) -> str:
    reservation = db.get("reservations", reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    seats = len(reservation["passengers"])
    total: int | float = 0
    for flight in flights:  # a private deep copy (toolkit.call_tool)
        kept = [
            segment
            for segment in reservation["flights"]
            if segment["flight_number"] == flight["flight_number"]
            and segment["date"] == flight["date"]
            and cabin == reservation["cabin"]
        ]
        if kept:
            total += kept[0]["price"] * seats
            flight["price"] = kept[0]["price"]
            flight["origin"] = kept[0]["origin"]
            flight["destination"] = kept[0]["destination"]
            continue
        problem = _price_segment(db, flight, cabin, seats)
        if problem:
            return problem
        total += flight["price"] * seats
    total -= sum(segment["price"] for segment in reservation["flights"]) * seats
    method, problem = _owner_method(db, reservation, payment_id)
    if problem:
        return problem
    if method["source"] == "gift_card" and method["amount"] < total:
        return "Error: gift card balance is not enough"
    reservation = db.write("reservations", reservation_id)
    if method["source"] == "gift_card":
        db.write("users", reservation["user_id"])["payment_methods"][payment_id]["amount"] -= total
    reservation["flights"] = flights
    if total != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": total})
    return _dump(reservation)


def update_reservation_passengers(db: EpisodeDB, reservation_id: str, passengers: list[dict[str, Any]]) -> str:
    reservation = db.get("reservations", reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    if len(passengers) != len(reservation["passengers"]):
        return "Error: the number of passengers cannot change"
    reservation = db.write("reservations", reservation_id)
    reservation["passengers"] = passengers
    return _dump(reservation)


def send_certificate(db: EpisodeDB, user_id: str, amount: int | float) -> str:
    user = db.get("users", user_id)
    if user is None:
        return "Error: user not found"
    certificate_id = next((cid for cid in CERTIFICATE_IDS if cid not in user["payment_methods"]), None)
    if certificate_id is None:
        return "Error: the user already holds the maximum number of certificates"
    user = db.write("users", user_id)
    user["payment_methods"][certificate_id] = {"source": "certificate", "amount": amount, "id": certificate_id}
    return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."


# ---------------------------------------------------------------------------------------------
# Schemas

_USER_ID = Param("user_id", "string", "the user id, e.g. 'sara_doe_496'")
_RESERVATION_ID = Param("reservation_id", "string", "the six-character reservation id, e.g. 'ZFA04Y'")
_CABIN = Param("cabin", "string", "one of basic_economy, economy, business", choices=CABINS)
_AIRPORT_QUERY = (
    Param("origin", "string", "three-letter code of the departure airport, e.g. 'JFK'"),
    Param("destination", "string", "three-letter code of the arrival airport, e.g. 'LAX'"),
    Param("date", "string", "departure date as YYYY-MM-DD, e.g. '2024-05-01'"),
)
_SEGMENT = Param(
    "flight",
    "object",
    fields=(Param("flight_number", "string"), Param("date", "string")),
)
_FLIGHTS = Param(
    "flights",
    "array",
    "the flight segments, each {'flight_number': 'HAT001', 'date': '2024-05-01'}",
    items=_SEGMENT,
)
_PASSENGERS = Param(
    "passengers",
    "array",
    "each passenger as {'first_name': 'Noah', 'last_name': 'Brown', 'dob': '1990-01-01'}",
    items=Param(
        "passenger",
        "object",
        fields=(Param("first_name", "string"), Param("last_name", "string"), Param("dob", "string")),
    ),
)
_PAYMENT_ID = Param(
    "payment_id", "string", "the id of a payment method of the user, e.g. 'credit_card_7815826' or 'gift_card_7815826'"
)

AIRLINE_TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        *COMMON_TOOLS,
        Tool(
            "get_user_details",
            "Look up a user's profile: name, address, date of birth, payment methods, saved passengers, "
            "membership and reservation ids.",
            (_USER_ID,),
            get_user_details,
        ),
        Tool(
            "get_reservation_details",
            "Look up a reservation: flights, cabin, passengers, payments, baggage and insurance.",
            (_RESERVATION_ID,),
            get_reservation_details,
        ),
        Tool("list_all_airports", "List the airport codes served, with their cities.", (), list_all_airports),
        Tool(
            "search_direct_flight",
            "Find direct flights between two airports on a date that still have seats for sale.",
            _AIRPORT_QUERY,
            search_direct_flight,
        ),
        Tool(
            "search_onestop_flight",
            "Find connections with one stop between two airports, departing on a date.",
            _AIRPORT_QUERY,
            search_onestop_flight,
        ),
        Tool(
            "book_reservation",
            "Book a reservation for a user. The payments must add up to the total price (fares, plus 30 per "
            "passenger for insurance, plus 50 per non-free bag); a certificate is used up entirely. " + WRITE_REMINDER,
            (
                _USER_ID,
                Param("origin", "string", "three-letter code of the trip's origin, e.g. 'SFO'"),
                Param("destination", "string", "three-letter code of the trip's destination, e.g. 'JFK'"),
                Param("flight_type", "string", "one_way or round_trip", choices=("one_way", "round_trip")),
                _CABIN,
                _FLIGHTS,
                _PASSENGERS,
                Param(
                    "payment_methods",
                    "array",
                    "the payments, each {'payment_id': 'credit_card_7815826', 'amount': 100}",
                    items=Param(
                        "payment",
                        "object",
                        fields=(Param("payment_id", "string"), Param("amount", "number")),
                    ),
                ),
                Param("total_baggages", "integer", "number of checked bags"),
                Param("nonfree_baggages", "integer", "number of checked bags that must be paid for"),
                Param("insurance", "string", "yes or no", choices=("yes", "no")),
            ),
            book_reservation,
        ),
        Tool(
            "cancel_reservation",
            "Cancel a whole reservation; every payment is refunded to its method. " + WRITE_REMINDER,
            (_RESERVATION_ID,),
            cancel_reservation,
        ),
        Tool(
            "update_reservation_baggages",
            "Change the number of checked bags of a reservation; each added non-free bag costs 50. A "
            "certificate cannot pay. " + WRITE_REMINDER,
            (
                _RESERVATION_ID,
                Param("total_baggages", "integer", "the new number of checked bags"),
                Param("nonfree_baggages", "integer", "the new number of bags that must be paid for"),
                _PAYMENT_ID,
            ),
            update_reservation_baggages,
        ),
        Tool(
            "update_reservation_flights",
            "Replace the flights of a reservation (list every segment, kept ones included) and pay or refund "
            "the fare difference. A certificate cannot pay. " + WRITE_REMINDER,
            (_RESERVATION_ID, _CABIN, _FLIGHTS, _PAYMENT_ID),
            update_reservation_flights,
        ),
        Tool(
            "update_reservation_passengers",
            "Replace the passengers of a reservation; their number cannot change. " + WRITE_REMINDER,
            (_RESERVATION_ID, _PASSENGERS),
            update_reservation_passengers,
        ),
        Tool(
            "send_certificate",
            "Send a user a travel certificate worth an amount, as compensation. " + WRITE_REMINDER,
            (_USER_ID, Param("amount", "number", "the certificate's value, e.g. 100")),
            send_certificate,
        ),
    )
}
"""Every airline tool by name."""
