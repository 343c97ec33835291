"""The federation's own events (the shared ones: schedlab.schedulers.events.shared).
Registered through schedlab.schedulers.archs.EVENT_SOURCES (a federation
is not an ArchSpec)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, req

FED_ROUTED = EventType("fed_routed", "a front routed a job to a site", (
    req("job_id", "int", "the job"), req("home", "int", "its home site"), req("site", "int", "the site it went to"),
    req("work", "float", "its work", "s"), req("how", "str", "why there"), req("front", "str", "the front")))
FED_RELEASED = EventType("fed_released", "a front released a job to the federation", (
    req("job_id", "int", "the job"), req("home", "int", "its home site"), req("work", "float", "its work", "s")))
FED_HELD = EventType("fed_held", "a front held a job (no site could take it yet)", (
    req("job_id", "int", "the job"), req("home", "int", "its home site")))
FED_FELL_BACK = EventType("fed_fell_back", "a front fell back to the job's home site", (
    req("job_id", "int", "the job"), req("home", "int", "its home site")))
FED_TRANSFER = EventType("fed_transfer", "a site's gateway moved a job to a peer", (
    req("job_id", "int", "the job"), req("src", "int", "from site"), req("dst", "int", "to site"), req("probed", "list", "the peer sites it probed")))
FED_PUBLISHED = EventType("fed_published", "the bulletin published the sites' loads", (
    req("loads", "list", "one load per site"),))

EVENTS = (FED_ROUTED, FED_RELEASED, FED_HELD, FED_FELL_BACK, FED_TRANSFER, FED_PUBLISHED)
