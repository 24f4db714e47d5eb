"""The clinic example domain, written for this project: a front desk that finds patients,
books, moves and cancels appointments and updates contact details, over a small JSON
database (6 patients, 3 doctors, 12 slots, 3 appointments).

Eight tools; ``transfer_to_human`` ends the conversation. Every tool is deterministic:
new appointment ids count up from the highest one in the state, so the same calls from
the same state always give the same end state. Refusals raise :class:`ToolError`
(an unknown id, a slot already booked, a second booking the same day, an appointment
already cancelled).

Rules the tools enforce: a patient has at most one booked appointment per day; a slot
holds one appointment; a cancelled appointment cannot be moved or cancelled again.
"""
from __future__ import annotations

from typing import Any

from evaltape.grader.envs import Environment, ToolError


def _schema(name: str, description: str, props: dict, required: list[str]) -> dict:
    return {"name": name, "description": description,
            "input_schema": {"type": "object", "properties": props, "required": required}}


def _s(description: str) -> dict:
    return {"type": "string", "description": description}


TOOLS = (
    _schema("find_patient", "Find a patient by the e-mail address on file. Returns the "
            "patient id and name.", {"email": _s("The patient's e-mail address")}, ["email"]),
    _schema("get_patient", "A patient's details and appointments.",
            {"patient_id": _s("The patient id, e.g. P-1001")}, ["patient_id"]),
    _schema("list_slots", "Open appointment slots of one specialty, optionally on one "
            "date.", {"specialty": _s("dermatology, cardiology or general practice"),
                      "date": _s("YYYY-MM-DD (optional)")}, ["specialty"]),
    _schema("book_appointment", "Book an open slot for a patient.",
            {"patient_id": _s("The patient id"), "slot_id": _s("The slot id, e.g. S-204"),
             "reason": _s("The reason for the visit, in a few words")},
            ["patient_id", "slot_id", "reason"]),
    _schema("cancel_appointment", "Cancel a booked appointment; its slot opens again.",
            {"appointment_id": _s("The appointment id, e.g. A-5001")}, ["appointment_id"]),
    _schema("reschedule_appointment", "Move a booked appointment to another open slot of "
            "the same specialty.", {"appointment_id": _s("The appointment id"),
                                    "slot_id": _s("The new slot id")},
            ["appointment_id", "slot_id"]),
    _schema("update_contact", "Change a patient's e-mail address and/or phone number.",
            {"patient_id": _s("The patient id"), "email": _s("The new e-mail (optional)"),
             "phone": _s("The new phone number (optional)")}, ["patient_id"]),
    _schema("transfer_to_human", "Hand the conversation to a human receptionist when the "
            "request is outside what these tools can do.",
            {"summary": _s("What the patient needs, in one sentence")}, ["summary"]),
)


def _slot(day: str, time: str, doctor: str) -> dict:
    return {"doctor_id": doctor, "start": f"{day}T{time}", "booked": False}


INITIAL_STATE: dict[str, Any] = {
    "patients": {pid: {"name": name, "email": name.lower().replace(" ", ".") + "@example.com",
                       "phone": "555-01" + pid[-2:], "dob": dob}
                 for pid, name, dob in (("P-1001", "Ana Lopez", "1988-04-12"),
                                        ("P-1002", "Ben Okafor", "1975-11-30"),
                                        ("P-1003", "Chloe Martin", "1992-07-08"),
                                        ("P-1004", "David Kim", "1969-02-21"),
                                        ("P-1005", "Eva Novak", "2001-09-15"),
                                        ("P-1006", "Farid Haddad", "1983-12-03"))},
    "doctors": {
        "D-01": {"name": "Dr. Maya Chen", "specialty": "dermatology"},
        "D-02": {"name": "Dr. Luis Ortega", "specialty": "cardiology"},
        "D-03": {"name": "Dr. Priya Nair", "specialty": "general practice"},
    },
    "slots": {
        "S-201": _slot("2026-03-02", "09:00", "D-03"),
        "S-202": _slot("2026-03-02", "10:30", "D-03"),
        "S-203": _slot("2026-03-03", "14:00", "D-03"),
        "S-204": _slot("2026-03-04", "09:30", "D-03"),
        "S-205": _slot("2026-03-03", "10:00", "D-02"),
        "S-206": _slot("2026-03-05", "11:00", "D-02"),
        "S-207": _slot("2026-03-06", "15:30", "D-02"),
        "S-208": _slot("2026-03-02", "13:00", "D-01"),
        "S-209": _slot("2026-03-04", "16:00", "D-01"),
        "S-210": _slot("2026-03-05", "08:30", "D-01"),
        "S-211": _slot("2026-03-06", "10:00", "D-01"),
        "S-212": _slot("2026-03-06", "12:00", "D-03"),
    },
    "appointments": {
        "A-5001": {"patient_id": "P-1001", "slot_id": "S-201", "reason": "annual check-up",
                   "status": "booked"},
        "A-5002": {"patient_id": "P-1002", "slot_id": "S-205", "reason": "follow-up",
                   "status": "booked"},
        "A-5003": {"patient_id": "P-1004", "slot_id": "S-209", "reason": "skin rash",
                   "status": "booked"},
    },
}
for _a in INITIAL_STATE["appointments"].values():
    INITIAL_STATE["slots"][_a["slot_id"]]["booked"] = True


def _get(table: dict, key: Any, what: str) -> dict:
    if not isinstance(key, str) or key not in table:
        raise ToolError(f"no {what} {key!r}")
    return table[key]


def find_patient(state: dict, args: dict) -> dict:
    """The patient whose e-mail is ``email`` (case-insensitive)."""
    email = str(args.get("email", "")).strip().lower()
    for pid, p in sorted(state["patients"].items()):
        if p["email"] == email:
            return {"patient_id": pid, "name": p["name"]}
    raise ToolError(f"no patient with e-mail {args.get('email')!r}")


def get_patient(state: dict, args: dict) -> dict:
    """The patient's details and appointments (with their slot times and doctors)."""
    pid = args.get("patient_id")
    p = _get(state["patients"], pid, "patient")
    appts = []
    for aid, a in sorted(state["appointments"].items()):
        if a["patient_id"] == pid:
            slot = state["slots"][a["slot_id"]]
            appts.append({"appointment_id": aid, "start": slot["start"],
                          "doctor": state["doctors"][slot["doctor_id"]]["name"],
                          "reason": a["reason"], "status": a["status"]})
    return {"patient_id": pid, **p, "appointments": appts}


def list_slots(state: dict, args: dict) -> dict:
    """Open slots of a specialty (and date), in time order."""
    specialty = str(args.get("specialty", "")).strip().lower()
    date = args.get("date")
    if specialty not in {d["specialty"] for d in state["doctors"].values()}:
        raise ToolError(f"no specialty {args.get('specialty')!r}")
    out = []
    for sid, s in sorted(state["slots"].items(), key=lambda kv: (kv[1]["start"], kv[0])):
        doctor = state["doctors"][s["doctor_id"]]
        if s["booked"] or doctor["specialty"] != specialty:
            continue
        if date and not s["start"].startswith(str(date)):
            continue
        out.append({"slot_id": sid, "start": s["start"], "doctor": doctor["name"]})
    return {"slots": out}


def _same_day_booking(state: dict, pid: str, slot_id: str, skip: str | None = None) -> str | None:
    day = state["slots"][slot_id]["start"][:10]
    for aid, a in state["appointments"].items():
        if aid != skip and a["patient_id"] == pid and a["status"] == "booked" and \
                state["slots"][a["slot_id"]]["start"][:10] == day:
            return aid
    return None


def book_appointment(state: dict, args: dict) -> dict:
    """A new appointment ``A-<next number>`` in an open slot."""
    pid = args.get("patient_id")
    _get(state["patients"], pid, "patient")
    slot = _get(state["slots"], args.get("slot_id"), "slot")
    if slot["booked"]:
        raise ToolError(f"slot {args['slot_id']} is already booked")
    other = _same_day_booking(state, pid, args["slot_id"])
    if other:
        raise ToolError(f"patient {pid} already has appointment {other} that day")
    reason = str(args.get("reason", "")).strip()
    if not reason:
        raise ToolError("a reason for the visit is required")
    number = max(int(a.split("-")[1]) for a in state["appointments"]) + 1
    aid = f"A-{number}"
    state["appointments"][aid] = {"patient_id": pid, "slot_id": args["slot_id"],
                                  "reason": reason, "status": "booked"}
    slot["booked"] = True
    return {"appointment_id": aid, "start": slot["start"], "status": "booked"}


def _booked(state: dict, aid: Any) -> dict:
    a = _get(state["appointments"], aid, "appointment")
    if a["status"] != "booked":
        raise ToolError(f"appointment {aid} is {a['status']}")
    return a


def cancel_appointment(state: dict, args: dict) -> dict:
    """Cancel a booked appointment and open its slot."""
    aid = args.get("appointment_id")
    a = _booked(state, aid)
    a["status"] = "cancelled"
    state["slots"][a["slot_id"]]["booked"] = False
    return {"appointment_id": aid, "status": "cancelled"}


def reschedule_appointment(state: dict, args: dict) -> dict:
    """Move a booked appointment to an open slot of the same specialty."""
    aid = args.get("appointment_id")
    a = _booked(state, aid)
    new = _get(state["slots"], args.get("slot_id"), "slot")
    if new["booked"]:
        raise ToolError(f"slot {args['slot_id']} is already booked")
    old = state["slots"][a["slot_id"]]
    spec = lambda s: state["doctors"][s["doctor_id"]]["specialty"]  # noqa: E731
    if spec(new) != spec(old):
        raise ToolError(f"slot {args['slot_id']} is {spec(new)}, the appointment is "
                        f"{spec(old)}")
    other = _same_day_booking(state, a["patient_id"], args["slot_id"], skip=aid)
    if other:
        raise ToolError(f"patient {a['patient_id']} already has appointment {other} that day")
    old["booked"] = False
    new["booked"] = True
    a["slot_id"] = args["slot_id"]
    return {"appointment_id": aid, "start": new["start"], "status": "booked"}


def update_contact(state: dict, args: dict) -> dict:
    """Change a patient's e-mail and/or phone."""
    p = _get(state["patients"], args.get("patient_id"), "patient")
    changed = {}
    for key in ("email", "phone"):
        value = args.get(key)
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise ToolError(f"{key} must be a non-empty string")
            if key == "email" and "@" not in value:
                raise ToolError(f"{value!r} is not an e-mail address")
            p[key] = value.strip().lower() if key == "email" else value.strip()
            changed[key] = p[key]
    if not changed:
        raise ToolError("give email or phone")
    return {"patient_id": args["patient_id"], "updated": changed}


def transfer_to_human(state: dict, args: dict) -> dict:
    """Hand the conversation over (the state is not changed)."""
    return {"transferred": True, "message": "A receptionist will take over the conversation."}


ENV = Environment(
    name="clinic", tools=TOOLS,
    functions={"find_patient": find_patient, "get_patient": get_patient,
               "list_slots": list_slots, "book_appointment": book_appointment,
               "cancel_appointment": cancel_appointment,
               "reschedule_appointment": reschedule_appointment,
               "update_contact": update_contact, "transfer_to_human": transfer_to_human},
    initial=INITIAL_STATE, end_tools=frozenset({"transfer_to_human"}))
