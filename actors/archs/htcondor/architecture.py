"""HTCondor's live registration: its build and its summary section
(negotiation cycles, claims, goodput and badput, the matchmaking delays)."""
from __future__ import annotations

from typing import Any

from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.analysis.stats import percentiles
from schedlab.actors.arch import Architecture
from schedlab.actors.archs.htcondor.build import build
from schedlab.schedulers.archs.htcondor.claims import STALE
from schedlab.schedulers.archs.htcondor.events import (
    CLAIM_ACTIVATED, CLAIM_REFUSED, JOB_EXITED, JOB_MATCHED, JOB_RESUMED, JOB_SUSPENDED, JOB_VACATED,
    NEGOTIATION_CYCLE,
)


def condor_summary(ev: dict[str, list[dict]], info: RunInfo, out: dict[str, Any]) -> dict[str, Any]:
    """Pure: every number from the run's events."""
    end = float(out["emulated_seconds"])
    cycles = [e for e in ev.get(NEGOTIATION_CYCLE, []) if e["t"] <= end + 1e-6]
    refused = ev.get(CLAIM_REFUSED, [])
    activated = ev.get(CLAIM_ACTIVATED, [])
    reused = sum(1 for e in activated if e["reused"])
    good = sum(e["ran"] for e in ev.get(JOB_EXITED, []))
    bad = sum(e["ran"] for e in ev.get(JOB_VACATED, []))
    reasons: dict[str, int] = {}
    for e in refused:
        reasons[str(e["reason"])] = reasons.get(str(e["reason"]), 0) + 1
    return {
        **info.extra.get("htcondor", {}),
        "negotiation_cycles": len(cycles),
        "cycle_duration_s": {**percentiles(e["duration"] for e in cycles),
                             "max": round(max((e["duration"] for e in cycles), default=0.0), 6)},
        "matches_per_cycle": {"mean": round(sum(e["matches"] for e in cycles) / len(cycles), 3) if cycles else None,
                              "max": max((e["matches"] for e in cycles), default=0)},
        "evaluations_per_cycle_max": max((e["evaluations"] for e in cycles), default=0),
        "idle_jobs_per_cycle_max": max((e["idle_jobs"] for e in cycles), default=0),
        "matches": sum(e["matches"] for e in cycles),
        "claims_refused": reasons,
        "stale_match_rejections": reasons.get(STALE, 0),
        "activations": len(activated),
        "claim_reuses": reused,
        "claim_reuse_rate": round(reused / len(activated), 6) if activated else None,
        "goodput_s": round(good, 3),
        "badput_s": round(bad, 3),
        "goodput_fraction": round(good / (good + bad), 6) if good + bad > 0 else None,
        "suspensions": len(ev.get(JOB_SUSPENDED, [])),
        "resumes": len(ev.get(JOB_RESUMED, [])),
        "vacates": len(ev.get(JOB_VACATED, [])),
        "submit_to_match_s": percentiles(e["wait"] for e in ev.get(JOB_MATCHED, [])),
        "match_to_start_s": percentiles(e["match_to_start"] for e in activated if e.get("match_to_start") is not None),
    }


def _rows(summary: dict) -> list[tuple[str, str]]:
    c = summary["htcondor"]
    d = c["cycle_duration_s"]
    return [
        ("negotiator", f"{c['negotiation_cycles']} cycles, duration p50 {d['p50']}s max {d['max']}s, "
                       f"matches/cycle mean {c['matches_per_cycle']['mean']} max {c['matches_per_cycle']['max']}"),
        ("claims", f"{c['activations']} activations, reuse rate {c['claim_reuse_rate']}, "
                   f"stale-match refusals {c['stale_match_rejections']}"),
        ("goodput", f"{c['goodput_s']:g}s good, {c['badput_s']:g}s badput ({c['vacates']} vacates)"),
        ("matchmaking", f"submit->match p50 {c['submit_to_match_s']['p50']}s, match->start p50 {c['match_to_start_s']['p50']}s"),
    ]


ARCHITECTURE = Architecture(
    name="htcondor",
    build=build,
    summary=condor_summary,
    table_rows=_rows,
    refused_means="claims a startd refused (a stale match: its state changed since the negotiator's ad)",
)
