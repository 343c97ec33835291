"""One HTCondor negotiation cycle, pure: machine ads and idle job ads in,
matches out. No Ray, no clock, no I/O; the shell collects the ads, runs a
cycle every NEGOTIATOR_INTERVAL and sends each match to its schedd (and the
startd), which then claim (``claims.py``).

The cycle, as the HTCondor manual's "The Negotiator" describes it:

* Users with idle jobs are taken best EUP first (``UserPrio.order``). Each
  gets its pie slice: its quota of the pool (non-Owner slots) by 1 / EUP,
  minus the slots it already holds. A user stops at its slice; slots left
  after a spin (nobody could use them) are sliced again among the users who
  stopped at their limit with jobs left: the next pie spin, until a spin has
  nobody left hungry or no unclaimed slot left.
* A job's candidates are Unclaimed machines and, with ``rank_preemption``,
  Claimed machines whose Rank of the job is strictly higher than of the job
  they run. A candidate must match symmetrically (``classad.matches``: both
  Requirements TRUE) and fit the job's requests (RequestCpus <= Cpus,
  RequestMemory <= Memory, RequestDisk <= Disk where requested: what
  condor_submit adds to every job's Requirements). Best first by the job's
  Rank, then no preemption before preemption (HTCondor's order), then the
  machine's Rank, then the machine's name. A machine is matched at most
  once per cycle.
* Autoclusters: jobs whose significant attributes are identical share one
  evaluation against the machines: the sorted candidate list is computed
  once per kind and each such job takes the best one still free. A kind
  that found no free candidate is skipped for the rest of the cycle
  (machines are only taken during a cycle, never freed, so it cannot match
  later). Significant = Requirements, Rank, every request, every name any
  machine ad mentions, and every job attribute those refer to: jobs equal
  on these evaluate identically against every machine, so the cache cannot
  change the result (tests check this against ``autoclusters=False``).
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from schedlab.schedulers.archs.htcondor.classad import (
    UNDEFINED,
    Expr,
    evaluate,
    matches,
    rank,
)
from schedlab.schedulers.archs.htcondor.classad_lexer import (
    ClassAdSyntaxError,
    tokenize,
)
from schedlab.schedulers.archs.htcondor.classad_ops import (
    FUNCTIONS,
    KEYWORDS,
    is_number,
)
from schedlab.schedulers.archs.htcondor.userprio import UserPrio

Ad = Mapping[str, object]
JobId = Hashable
# (request attribute of the job, resource attribute of the machine)
REQUESTS = (("RequestCpus", "Cpus"), ("RequestMemory", "Memory"), ("RequestDisk", "Disk"))
_BASE = frozenset({"requirements", "rank", *(r.lower() for r, _ in REQUESTS)})


@dataclass(frozen=True)
class Machine:
    """A slot as the collector knows it. ``state``: Owner, Unclaimed,
    Matched, Claimed or Preempting (only Unclaimed, and Claimed for rank
    preemption, are offered). ``current_job``: the ad of the job a Claimed
    slot runs (needed to judge rank preemption; None: never preempted)."""

    name: str
    state: str
    ad: Ad
    current_job: Ad | None = None


@dataclass(frozen=True)
class Match:
    """A job matched to a machine. ``machine_ad`` goes to the schedd, which
    checks later jobs against it to reuse the claim. ``spin``: the pie spin
    (1-based) that made it."""

    schedd: str
    user: str
    job_id: JobId
    machine: str
    match_id: str
    machine_ad: Ad
    preempting: bool
    job_rank: float
    machine_rank: float
    spin: int


@dataclass
class CycleStats:
    matches: int = 0
    rejected: int = 0  # jobs evaluated that no free machine took
    autocluster_skips: int = 0  # jobs skipped because their kind already failed this cycle
    users_considered: int = 0
    pie_spins: int = 0
    evaluations: int = 0  # job-kind x machine match evaluations
    preemptions: int = 0


@dataclass
class Negotiation:
    matches: list[Match] = field(default_factory=list)
    rejected: list[tuple[str, str, JobId]] = field(default_factory=list)  # (schedd, user, job)
    stats: CycleStats = field(default_factory=CycleStats)


# -- matching a pair ---------------------------------------------------------------


def fits_requests(job_ad: Ad, machine_ad: Ad) -> bool:
    """Each request the job states is a number no larger than the machine's
    resource (a missing or non-numeric resource refuses); none stated: fits.
    Besides cpus, memory and disk, a ``Request<name>`` of the job ad asks
    for the machine's custom resource ``<name>`` (as RequestGPUs asks for
    GPUs: condor_submit adds each to Requirements), where the machine ad
    declares one by that name (``Total<name>``); another attribute that
    merely begins with "Request" is no request."""
    for req, res in (*REQUESTS, *_custom_requests(job_ad, machine_ad)):
        want = evaluate(f"MY.{req}", job_ad, machine_ad)
        if want is UNDEFINED:
            continue
        have = evaluate(f"MY.{res}", machine_ad, job_ad)
        if not (is_number(want) and is_number(have) and have >= want):
            return False
    return True


def _custom_requests(job_ad: Ad, machine_ad: Ad) -> list[tuple[str, str]]:
    """On every match evaluation: the machine ad is looked at only for a job
    that has a request beyond the built-in ones (most jobs have none)."""
    out = []
    for k in job_ad:
        if isinstance(k, str) and len(k) > 7 and k[:7].lower() == "request" and k.lower() not in _BASE:
            total = f"total{k[7:]}".lower()
            if any(isinstance(m, str) and m.lower() == total for m in machine_ad):
                out.append((k, k[7:]))
    return out


def acceptable(job_ad: Ad, machine_ad: Ad) -> bool:
    """Symmetric ClassAd match and the requests fit."""
    return matches(job_ad, machine_ad) and fits_requests(job_ad, machine_ad)


def never_matchable(job_ad: Ad, machine_ads: Iterable[Ad]) -> bool:
    """True when no machine of the pool, in its unclaimed state (a ``State``
    of "Unclaimed", ``Activity`` "Idle"), could ever take the job: the
    scenario parser's bad-input check. An empty pool matches nothing."""
    for ad in machine_ads:
        fresh = {k: v for k, v in ad.items() if k.lower() not in ("state", "activity")}
        fresh.update(State='"Unclaimed"', Activity='"Idle"')
        if acceptable(job_ad, fresh):
            return False
    return True


# -- autoclusters --------------------------------------------------------------------


@lru_cache(maxsize=8192)
def references(text: str) -> frozenset[str]:
    """Lowercase attribute names ``text`` mentions, scope ignored (a
    superset of what it reads); unparseable text mentions nothing."""
    try:
        toks = tokenize(text)
    except ClassAdSyntaxError:
        return frozenset()
    out = set()
    for i, tok in enumerate(toks):
        if tok.kind != "name":
            continue
        nxt = toks[i + 1]
        if nxt.kind == "op" and nxt.text == "(" and tok.value in FUNCTIONS:
            continue
        if nxt.kind == "op" and nxt.text == "." and tok.value in ("my", "target"):
            continue
        if tok.value in KEYWORDS or tok.value in ("is", "isnt"):
            continue
        out.add(str(tok.value))
    return frozenset(out)


def _text(raw: object) -> str | None:
    return raw if isinstance(raw, str) else (raw.text if isinstance(raw, Expr) else None)


def _canon(raw: object) -> object:
    """A hashable stand-in telling apart what the ClassAd evaluator tells
    apart (1, 1.0, True and "1" all differ); unknown objects by identity."""
    if isinstance(raw, Expr):
        return ("expr", raw.text)
    try:
        hash(raw)
    except TypeError:
        return ("obj", id(raw))
    return (type(raw).__name__, raw)


def _literal(text: str) -> bool:
    """A plain string literal (no quote inside) mentions no name: most of a
    pool's ad values (Name, Machine, State), unique per slot, which would
    otherwise each be tokenized on every cycle."""
    return len(text) >= 2 and text[0] == '"' and text[-1] == '"' and '"' not in text[1:-1] and "\\" not in text


def machine_references(machine_ads: Iterable[Ad]) -> frozenset[str]:
    """Every name any machine ad's expressions mention (its own attributes'
    names included, as an unscoped name may fall through to the job)."""
    out: set[str] = set()
    texts: set[str] = set()
    for ad in machine_ads:
        for value in ad.values():
            text = _text(value)
            if text is not None and not _literal(text):
                texts.add(text)
    for text in texts:
        out |= references(text)
    return frozenset(out)


def autocluster_key(job_ad: Ad, machine_refs: frozenset[str]) -> tuple:
    """The job's significant attributes and their raw values, sorted."""
    lower: dict[str, list[str]] = {}
    for k in job_ad:
        lower.setdefault(k.lower(), []).append(k)
    # Every request is significant: a custom one (RequestGPUs) decides the fit as RequestCpus does.
    wanted, todo = set(), list(_BASE | machine_refs | {n for n in lower if n.startswith("request")})
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for k in lower.get(name, ()):
            text = _text(job_ad[k])
            if text is not None:
                todo.extend(references(text) - wanted)
    return tuple(sorted((k, _canon(job_ad[k])) for n in wanted for k in lower.get(n, ())))


# -- the cycle -----------------------------------------------------------------------


@dataclass
class _Kind:
    candidates: list[tuple[tuple, Machine, bool, float, float]]
    cursor: int = 0


def negotiate(machines: Sequence[Machine], idle: Mapping[str, Mapping[str, Sequence[tuple[JobId, Ad]]]],
              prio: UserPrio, *, cycle: int = 0, rank_preemption: bool = False,
              autoclusters: bool = True) -> Negotiation:
    """One cycle. ``idle``: schedd -> user -> its idle jobs (id, ad) in queue
    order (the schedd's: job priority, then submission). A user's jobs are
    tried schedd by schedd (sorted by name), each in that order. ``prio`` is
    read, never changed: call ``prio.update`` before. Match ids are
    ``"{cycle}.{n}"``, unique within a cycle."""
    out = Negotiation()
    taken: set[str] = set()
    cands = [m for m in sorted(machines, key=lambda m: m.name)
             if m.state == "Unclaimed" or (rank_preemption and m.state == "Claimed" and m.current_job is not None)]
    refs: frozenset[str] | None = None if autoclusters else frozenset()  # computed for the cycle's first job
    kinds: dict[tuple, _Kind] = {}
    failed: set[tuple] = set()
    jobs: dict[str, list[tuple[str, JobId, Ad]]] = {}
    for schedd in sorted(idle):
        for user, queue in idle[schedd].items():
            jobs.setdefault(user, []).extend((schedd, j, ad) for j, ad in queue)
    cursor = {u: 0 for u in jobs if jobs[u]}
    out.stats.users_considered = len(cursor)
    pie = sum(1 for m in machines if m.state != "Owner")
    limits = {u: max(q - prio.in_use(u), 0.0) for u, q in prio.shares(cursor, pie).items()}

    def evaluate_kind(job_ad: Ad) -> _Kind:
        found = []
        for m in cands:
            if m.name in taken:
                continue
            out.stats.evaluations += 1
            if not acceptable(job_ad, m.ad):
                continue
            m_rank = rank(m.ad, job_ad)
            preempting = m.state == "Claimed"
            if preempting and not m_rank > rank(m.ad, m.current_job or {}):
                continue
            j_rank = rank(job_ad, m.ad)
            found.append(((-j_rank, preempting, -m_rank, m.name), m, preempting, j_rank, m_rank))
        found.sort(key=lambda c: c[0])
        return _Kind(found)

    def match_one(user: str, schedd: str, job_id: JobId, job_ad: Ad, spin: int) -> bool:
        nonlocal refs
        if refs is None:
            refs = machine_references(m.ad for m in machines)
        key = autocluster_key(job_ad, refs) if autoclusters else None
        if key is not None and key in failed:
            out.stats.autocluster_skips += 1
            out.rejected.append((schedd, user, job_id))
            return False
        kind = kinds.get(key) if key is not None else None
        if kind is None:
            kind = evaluate_kind(job_ad)
            if key is not None:
                kinds[key] = kind
        while kind.cursor < len(kind.candidates) and kind.candidates[kind.cursor][1].name in taken:
            kind.cursor += 1
        if kind.cursor == len(kind.candidates):
            if key is not None:
                failed.add(key)
            out.stats.rejected += 1
            out.rejected.append((schedd, user, job_id))
            return False
        _, m, preempting, j_rank, m_rank = kind.candidates[kind.cursor]
        taken.add(m.name)
        out.stats.preemptions += preempting
        out.matches.append(Match(schedd, user, job_id, m.name, f"{cycle}.{len(out.matches)}", m.ad, preempting,
                                 j_rank, m_rank, spin))
        return True

    spin = 0
    while limits:
        spin += 1
        out.stats.pie_spins = spin
        hungry = []
        for user in prio.order(limits):
            got, waiting = 0, jobs[user]
            while cursor[user] < len(waiting) and got < limits[user]:
                schedd, job_id, ad = waiting[cursor[user]]
                cursor[user] += 1
                got += match_one(user, schedd, job_id, ad, spin)
            if cursor[user] < len(waiting):
                hungry.append(user)  # stopped at its limit with jobs left
        pie_left = sum(1 for m in machines if m.state == "Unclaimed" and m.name not in taken)
        limits = {u: float(q) for u, q in prio.shares(hungry, pie_left).items()} if pie_left > 0 else {}
    out.stats.matches = len(out.matches)
    return out
