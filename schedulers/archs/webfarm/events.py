"""The web farm's own events (the shared ones: schedlab.schedulers.events.shared)."""
from __future__ import annotations

from schedlab.schedulers.events.contract import EventType, req

LB_ELECTED = EventType("lb_elected", "a load balancer became the active one", (
    req("lb", "str", "the load balancer"), req("epoch", "int", "its epoch")))
LB_STEPPED_DOWN = EventType("lb_stepped_down", "a load balancer stopped being active", (
    req("lb", "str", "the load balancer"), req("epoch", "int", "the epoch it was active in")))
SERVER_HEALTH = EventType("server_health", "a load balancer judged a server healthy or not", (
    req("lb", "str", "the load balancer"), req("machine", "int", "the server's machine"), req("healthy", "bool", "its verdict")))
SESSION_LOST = EventType("session_lost", "a sticky session's server went: the session is lost", (
    req("session", "int", "the session"), req("server", "int", "its server"), req("lb", "str", "the load balancer")))
WEBFARM_HTTPD = EventType("webfarm_httpd", "a host's web servers' counters at the end", (
    req("host", "int", "the host actor"), req("accepted", "int", "requests accepted"), req("refused", "int", "requests refused"),
    req("crashed", "int", "server crashes"), req("reports", "int", "load reports sent"), req("checks", "int", "health checks answered"),
    req("client_gone", "int", "requests dropped on arrival: their client had given up"),
    req("servers", "dict", "server -> its counters")))
WEBFARM_LB = EventType("webfarm_lb", "a load balancer's counters at the end", (
    req("lb", "str", "the load balancer"), req("routed", "int", "requests routed"), req("client_timeouts", "int", "client timeouts"),
    req("no_server", "int", "requests with no server"), req("not_active", "int", "requests while not active"),
    req("sessions_lost", "int", "sessions lost"), req("refused", "int", "requests refused"),
    req("routed_per_server", "list", "requests routed per server")))
WEBFARM_CLIENTS = EventType("webfarm_clients", "the clients' counters at the end (they hold each page's timeout)", (
    req("sent", "int", "pages sent to the active balancer"), req("refused", "int", "pages a balancer refused"),
    req("timed_out", "int", "pages no server took before the client gave up"),
    req("fenced", "int", "pages asked after, at every server, past their deadline"),
    req("resent", "int", "pages sent again after bouncing off a dead balancer"),
    req("pending_at_end", "int", "pages still inside their timeout when the run ended")))

EVENTS = (LB_ELECTED, LB_STEPPED_DOWN, SERVER_HEALTH, SESSION_LOST, WEBFARM_HTTPD, WEBFARM_LB, WEBFARM_CLIENTS)
