"""Mesos' live registration: its build, its summary section (offers,
frameworks' shares, ramp-up and locality), the masters' failover records,
its rows in the run table, its report plots and leader changes, and the
allocator Ray ships by value (a scenario script may register its own)."""
from __future__ import annotations

from schedlab.actors.arch import Architecture, LeaderEvents
from schedlab.actors.archs.mesos.build import build
from schedlab.actors.archs.mesos.summary import master_failovers, mesos_section
from schedlab.schedulers.archs.mesos.order_policies import get_allocation_policy
from schedlab.schedulers.archs.mesos.events import MASTER_ELECTED


def _refused(summary: dict) -> tuple[str, float | None]:
    o = summary["mesos"]["offers"]
    refused = o["declined"] + o["rescinded"]
    return f"{refused} / {o['made']} offers", (refused / o["made"] if o["made"] else None)


def _p50(d: dict) -> str:
    return "-" if d.get("p50") is None else f"{d['p50']:.3g}"


def _rows(summary: dict) -> list[tuple[str, str]]:
    m = summary["mesos"]
    o = m["offers"]
    rows = [("offers", f"made {o['made']}  accepted {o['accepted']}  declined {o['declined']}  rescinded {o['rescinded']}  "
                       f"locked {m['locked_resource_s']['cpu']:.4g} cpu-s")]
    for name, fw in m["frameworks"].items():
        loc = f"  locality {fw['locality_fraction']:.0%}" if fw["locality_fraction"] is not None else ""
        share = f"  share {fw['dominant_share_mean']:.2f}" if fw["dominant_share_mean"] is not None else ""
        rows.append((f"  {name}", f"ramp-up p50 {_p50(fw['ramp_up_s'])}s  completion p50 {_p50(fw['completion_s'])}s{share}{loc}"))
    return rows


def _plots() -> tuple:
    from schedlab.actors.archs.mesos.report import PLOTS

    return PLOTS


ARCHITECTURE = Architecture(
    name="mesos",
    build=build,
    summary=lambda ev, info, out: mesos_section(ev, info.extra.get("frameworks", []), float(out["emulated_seconds"])),
    failovers=lambda ev, info: master_failovers(ev, int(info.host_actors or 0), info.extra.get("frameworks", []),
                                                float(info.time_scale)),
    refused=_refused,
    refused_means="launches the master refused: offers declined or rescinded",
    table_rows=_rows,
    plots=_plots,
    leaders=(LeaderEvents("Mesos master", MASTER_ELECTED, lambda e: e.get("master", e["actor"])),),
    ship=lambda sc: [get_allocation_policy(sc.section.allocator)],
)
